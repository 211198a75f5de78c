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
-- A message's feed position: written at its fire, (its transaction, its event id); armed and
-- released, (the transaction of the release that made it true, its visible_at, its event
-- id). A message not yet released has no position: the feed never showed it.
SELECT COALESCE(o.tx_id::text::bigint, rel.tx)::bigint AS tx, (o.tx_id IS NULL)::boolean AS released,
       COALESCE(o.visible_at, '0001-01-01 00:00:00+00'::timestamptz)::timestamptz AS visible_at, o.event_id
FROM outbox_messages o
LEFT JOIN LATERAL (SELECT f.tx_id::text::bigint AS tx FROM feed_releases f
                   WHERE o.tx_id IS NULL AND f.released_until >= o.visible_at ORDER BY f.released_until LIMIT 1) rel ON true
WHERE o.event_id = @event_id AND (o.tx_id IS NOT NULL OR rel.tx IS NOT NULL);

-- name: FeedEnd :one
-- The feed's end now: every transaction older than the oldest still running is final, so
-- every position up to the one before it is, and nothing will ever appear there again.
SELECT (pg_snapshot_xmin(pg_current_snapshot())::text::bigint - 1)::bigint AS tx;

-- name: ReadFeed :many
-- One page of the consumer feed after a position, every topic (ReadFeedTopic is this for
-- one topic, through its own indexes). The feed is two streams in one order:
--   written:  messages written at their fire, at (their transaction, event id);
--   released: armed fires' messages, at (the release's transaction, visible_at, event id).
-- Releases are serialized and their ranges grow with their transactions, so the released
-- stream in (visible_at, event id) order is in position order, and each stream is a range
-- scan from the cursor. Only what every transaction still running cannot change is shown:
-- written rows older than the oldest running transaction (pg_snapshot_xmin), released
-- ones up to the newest release older than it. The cursor (after_*) is a position of
-- either stream (after_kind 0 written, 1 released) or the end as of a transaction (2);
-- bounds turns it into where each stream resumes.
WITH bounds AS (
    SELECT pg_snapshot_xmin(pg_current_snapshot()) AS horizon,
           COALESCE((SELECT f.released_until FROM feed_releases f WHERE f.tx_id < pg_snapshot_xmin(pg_current_snapshot())
                     ORDER BY f.tx_id DESC LIMIT 1), '-infinity'::timestamptz) AS released_to,
           CASE WHEN sqlc.arg(after_kind)::int = 1 THEN sqlc.arg(after_visible_at)::timestamptz
                ELSE COALESCE((SELECT f.released_until FROM feed_releases f
                               WHERE f.tx_id < (sqlc.arg(after_tx)::bigint + CASE WHEN sqlc.arg(after_kind)::int = 2 THEN 1 ELSE 0 END)::text::xid8
                               ORDER BY f.tx_id DESC LIMIT 1), '-infinity'::timestamptz) END AS released_from_at,
           CASE WHEN sqlc.arg(after_kind)::int = 1 THEN sqlc.arg(after_event_id)::bigint ELSE 9223372036854775807 END AS released_from_id,
           CASE WHEN sqlc.arg(after_kind)::int = 0 THEN sqlc.arg(after_event_id)::bigint ELSE 9223372036854775807 END AS written_from_id
), written AS (
    SELECT o.event_id, o.tx_id::text::bigint AS tx, NULL::timestamptz AS visible_at
    FROM outbox_messages o
    WHERE o.tx_id IS NOT NULL
      AND (o.tx_id, o.event_id) > (sqlc.arg(after_tx)::bigint::text::xid8, (SELECT written_from_id FROM bounds))
      AND o.tx_id < (SELECT horizon FROM bounds)
    ORDER BY o.tx_id, o.event_id
    LIMIT sqlc.arg(max_rows)
), released AS (
    SELECT o.event_id, o.visible_at
    FROM outbox_messages o
    WHERE o.tx_id IS NULL
      AND (o.visible_at, o.event_id) > ((SELECT released_from_at FROM bounds), (SELECT released_from_id FROM bounds))
      AND o.visible_at <= (SELECT released_to FROM bounds)
    ORDER BY o.visible_at, o.event_id
    LIMIT sqlc.arg(max_rows)
), page AS (
    SELECT event_id, tx, visible_at FROM written
    UNION ALL
    SELECT r.event_id, rel.tx, r.visible_at
    FROM released r, LATERAL (SELECT f.tx_id::text::bigint AS tx FROM feed_releases f WHERE f.released_until >= r.visible_at
                              ORDER BY f.released_until LIMIT 1) rel
)
SELECT e.id, e.topic, e.type, e.aggregate_id, e.data, e.created_at, p.tx::bigint AS tx, (p.visible_at IS NOT NULL)::boolean AS released,
       COALESCE(p.visible_at, '0001-01-01 00:00:00+00'::timestamptz)::timestamptz AS visible_at
FROM page p JOIN event_store e ON e.id = p.event_id
ORDER BY p.tx, p.visible_at NULLS FIRST, p.event_id
LIMIT sqlc.arg(max_rows);

-- name: ReadFeedTopic :many
-- ReadFeed for one topic: each stream a range of that topic's own index, so a consumer of
-- a quiet topic never reads the rows of a busy one.
WITH bounds AS (
    SELECT pg_snapshot_xmin(pg_current_snapshot()) AS horizon,
           COALESCE((SELECT f.released_until FROM feed_releases f WHERE f.tx_id < pg_snapshot_xmin(pg_current_snapshot())
                     ORDER BY f.tx_id DESC LIMIT 1), '-infinity'::timestamptz) AS released_to,
           CASE WHEN sqlc.arg(after_kind)::int = 1 THEN sqlc.arg(after_visible_at)::timestamptz
                ELSE COALESCE((SELECT f.released_until FROM feed_releases f
                               WHERE f.tx_id < (sqlc.arg(after_tx)::bigint + CASE WHEN sqlc.arg(after_kind)::int = 2 THEN 1 ELSE 0 END)::text::xid8
                               ORDER BY f.tx_id DESC LIMIT 1), '-infinity'::timestamptz) END AS released_from_at,
           CASE WHEN sqlc.arg(after_kind)::int = 1 THEN sqlc.arg(after_event_id)::bigint ELSE 9223372036854775807 END AS released_from_id,
           CASE WHEN sqlc.arg(after_kind)::int = 0 THEN sqlc.arg(after_event_id)::bigint ELSE 9223372036854775807 END AS written_from_id
), written AS (
    SELECT o.event_id, o.tx_id::text::bigint AS tx, NULL::timestamptz AS visible_at
    FROM outbox_messages o
    WHERE o.tx_id IS NOT NULL AND o.topic = sqlc.arg(topic)::text
      AND (o.tx_id, o.event_id) > (sqlc.arg(after_tx)::bigint::text::xid8, (SELECT written_from_id FROM bounds))
      AND o.tx_id < (SELECT horizon FROM bounds)
    ORDER BY o.tx_id, o.event_id
    LIMIT sqlc.arg(max_rows)
), released AS (
    SELECT o.event_id, o.visible_at
    FROM outbox_messages o
    WHERE o.tx_id IS NULL AND o.topic = sqlc.arg(topic)::text
      AND (o.visible_at, o.event_id) > ((SELECT released_from_at FROM bounds), (SELECT released_from_id FROM bounds))
      AND o.visible_at <= (SELECT released_to FROM bounds)
    ORDER BY o.visible_at, o.event_id
    LIMIT sqlc.arg(max_rows)
), page AS (
    SELECT event_id, tx, visible_at FROM written
    UNION ALL
    SELECT r.event_id, rel.tx, r.visible_at
    FROM released r, LATERAL (SELECT f.tx_id::text::bigint AS tx FROM feed_releases f WHERE f.released_until >= r.visible_at
                              ORDER BY f.released_until LIMIT 1) rel
)
SELECT e.id, e.topic, e.type, e.aggregate_id, e.data, e.created_at, p.tx::bigint AS tx, (p.visible_at IS NOT NULL)::boolean AS released,
       COALESCE(p.visible_at, '0001-01-01 00:00:00+00'::timestamptz)::timestamptz AS visible_at
FROM page p JOIN event_store e ON e.id = p.event_id
ORDER BY p.tx, p.visible_at NULLS FIRST, p.event_id
LIMIT sqlc.arg(max_rows);
