-- +goose NO TRANSACTION
-- +goose Up
-- The feed reads each topic through an index of its own (issue 33): a topic consumer's page
-- is a range of its topic's rows, never a scan of other topics' rows or of releases it has
-- no event in. Positions sort by (transaction, event id) for a message written at its fire
-- and by (visible_at, event id) for a released armed one (releases are serialized and their
-- ranges grow with their transactions, so that order is the release order), so the
-- indexes carry the event id, as the feed's ORDER BY does. Built concurrently: an outbox in
-- production keeps taking writes meanwhile.
CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_messages_written_feed ON outbox_messages (tx_id, event_id) WHERE tx_id IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_messages_written_topic_feed ON outbox_messages (topic, tx_id, event_id) WHERE tx_id IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_messages_released_topic_feed ON outbox_messages (topic, visible_at, event_id) WHERE tx_id IS NULL;
-- A released message's release: the first whose range reaches its visible_at.
CREATE INDEX CONCURRENTLY IF NOT EXISTS feed_releases_until ON feed_releases (released_until);
DROP INDEX CONCURRENTLY IF EXISTS outbox_messages_feed;
DROP INDEX CONCURRENTLY IF EXISTS outbox_messages_topic_feed;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_messages_feed ON outbox_messages (tx_id, id);
CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_messages_topic_feed ON outbox_messages (topic, tx_id, id);
DROP INDEX CONCURRENTLY IF EXISTS feed_releases_until;
DROP INDEX CONCURRENTLY IF EXISTS outbox_messages_released_topic_feed;
DROP INDEX CONCURRENTLY IF EXISTS outbox_messages_written_topic_feed;
DROP INDEX CONCURRENTLY IF EXISTS outbox_messages_written_feed;
