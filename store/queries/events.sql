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
-- A message's feed position: (its transaction, the zero time, its id), or for an armed fire's
-- (the transaction of the release that made it true, its visible_at, its id). A message not
-- yet released has no position: the feed never showed it.
SELECT COALESCE(o.tx_id::text::bigint, rel.tx)::bigint AS tx,
       CASE WHEN o.tx_id IS NULL THEN o.visible_at ELSE '0001-01-01 00:00:00+00'::timestamptz END::timestamptz AS visible_at, o.id
FROM outbox_messages o
LEFT JOIN LATERAL (SELECT f.tx_id::text::bigint AS tx FROM feed_releases f
                   WHERE o.tx_id IS NULL AND f.released_until >= o.visible_at ORDER BY f.released_until LIMIT 1) rel ON true
WHERE o.event_id = @event_id AND (o.tx_id IS NOT NULL OR rel.tx IS NOT NULL);

-- name: ListOutboxEvents :many
-- The consumer feed, in position order, showing only positions whose transaction is older
-- than every transaction still running: rows appear in the order they become final, so a
-- reader's cursor never passes a row that commits later. A message written at its fire has
-- the position (its transaction, the zero time, its id). An armed fire's message, committed
-- ahead with no transaction of its own, takes the release that made it true: (the release's
-- transaction, its visible_at, its id) — it appears at the release, after everything a
-- cursor taken before it could have seen, and a hundred thousand of them appear with one row.
SELECT f.id, f.topic, f.type, f.aggregate_id, f.data, f.created_at, f.tx, f.visible_at
FROM (
    (SELECT e.id, e.topic, e.type, e.aggregate_id, e.data, e.created_at, o.tx_id::text::bigint AS tx,
            '0001-01-01 00:00:00+00'::timestamptz AS visible_at
     FROM outbox_messages o JOIN event_store e ON e.id = o.event_id
     WHERE o.tx_id IS NOT NULL
       AND (o.tx_id::text::bigint > @after_tx::bigint
            OR (o.tx_id::text::bigint = @after_tx::bigint AND @after_visible_at::timestamptz = '0001-01-01 00:00:00+00'::timestamptz AND o.event_id > @after_event_id::bigint))
       AND o.tx_id < pg_snapshot_xmin(pg_current_snapshot())
       AND (@topic::text = '' OR o.topic = @topic::text)
     ORDER BY o.tx_id, o.event_id
     LIMIT @max_rows)
    UNION ALL
    (SELECT e.id, e.topic, e.type, e.aggregate_id, e.data, e.created_at, r.tx_id::text::bigint AS tx, o.visible_at
     FROM (SELECT * FROM feed_releases fr
           WHERE fr.tx_id::text::bigint >= @after_tx::bigint AND fr.tx_id < pg_snapshot_xmin(pg_current_snapshot())
           ORDER BY fr.tx_id LIMIT @max_rows) r
     JOIN outbox_messages o ON o.tx_id IS NULL AND o.visible_at > r.released_after AND o.visible_at <= r.released_until
     JOIN event_store e ON e.id = o.event_id
     WHERE (r.tx_id::text::bigint, o.visible_at, o.event_id) > (@after_tx::bigint, @after_visible_at::timestamptz, @after_event_id::bigint)
       AND (@topic::text = '' OR o.topic = @topic::text)
     ORDER BY r.tx_id, o.visible_at, o.event_id
     LIMIT @max_rows)
) f
ORDER BY f.tx, f.visible_at, f.id
LIMIT @max_rows;
