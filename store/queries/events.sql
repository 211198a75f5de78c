-- name: InsertEvent :one
INSERT INTO event_store (topic, type, aggregate_id, data, schedule_run_id)
VALUES (@topic, @type, @aggregate_id, @data, @schedule_run_id)
RETURNING *;

-- name: InsertOutboxMessage :exec
INSERT INTO outbox_messages (event_id, topic) VALUES (@event_id, @topic);

-- name: OutboxPosition :one
SELECT tx_id::text::bigint AS tx, id FROM outbox_messages WHERE event_id = @event_id;

-- name: ListOutboxEvents :many
-- The consumer feed, in (transaction, id) order, showing only rows whose writing
-- transaction is older than every transaction still running: rows appear in the order
-- they become final, so a reader's cursor never passes a row that commits later.
SELECT e.id, e.topic, e.type, e.aggregate_id, e.data, e.created_at, o.tx_id::text::bigint AS tx
FROM outbox_messages o
JOIN event_store e ON e.id = o.event_id
WHERE (o.tx_id::text::bigint, o.event_id) > (@after_tx::bigint, @after_event_id::bigint)
  AND o.tx_id < pg_snapshot_xmin(pg_current_snapshot())
  AND (@topic::text = '' OR o.topic = @topic::text)
ORDER BY o.tx_id, o.event_id
LIMIT @max_rows;
