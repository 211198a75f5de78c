-- name: InsertEvent :one
-- created_at is the event's time: now, or an armed fire's visible time.
INSERT INTO event_store (topic, type, aggregate_id, data, schedule_run_id, created_at)
VALUES (@topic, @type, @aggregate_id, @data, @schedule_run_id, COALESCE(sqlc.narg(created_at)::timestamptz, now()))
RETURNING *;

-- name: InsertOutboxMessage :exec
INSERT INTO outbox_messages (event_id, topic) VALUES (@event_id, @topic);

-- name: InsertArmedOutboxMessage :exec
-- An armed fire's message: no feed position until the release gives it one (ReleaseDueFires).
INSERT INTO outbox_messages (event_id, topic, tx_id, visible_at) VALUES (@event_id, @topic, NULL, @visible_at);

-- name: OutboxPosition :one
-- A message not yet released has no position: the feed never showed it.
SELECT tx_id::text::bigint AS tx, id FROM outbox_messages WHERE event_id = @event_id AND tx_id IS NOT NULL;

-- name: ListOutboxEvents :many
-- The consumer feed, in (transaction, id) order, showing only rows whose writing
-- transaction is older than every transaction still running: rows appear in the order
-- they become final, so a reader's cursor never passes a row that commits later. An armed
-- fire's message has no tx_id until its release sets it to the releasing transaction's, so
-- it appears at the release, after everything a cursor taken before it could have seen.
SELECT e.id, e.topic, e.type, e.aggregate_id, e.data, e.created_at, o.tx_id::text::bigint AS tx
FROM outbox_messages o
JOIN event_store e ON e.id = o.event_id
WHERE o.tx_id IS NOT NULL
  AND (o.tx_id::text::bigint, o.event_id) > (@after_tx::bigint, @after_event_id::bigint)
  AND o.tx_id < pg_snapshot_xmin(pg_current_snapshot())
  AND (@topic::text = '' OR o.topic = @topic::text)
ORDER BY o.tx_id, o.event_id
LIMIT @max_rows;
