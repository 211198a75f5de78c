-- +goose Up
-- A consumer waiting on the feed (GET /events?wait=) hears of new events without polling:
-- the API process listens on tickgate_feed (store.Listener). A release (one row for every
-- armed fire it makes true) and a message written with its position say so; pg_notify
-- delivers at commit, and one transaction's identical notifications are sent once, so a
-- release of a hundred thousand fires is one notification.

-- +goose StatementBegin
CREATE FUNCTION notify_feed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('tickgate_feed', '');
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER feed_releases_notify AFTER INSERT ON feed_releases
    FOR EACH ROW EXECUTE FUNCTION notify_feed();
CREATE TRIGGER outbox_messages_written_notify AFTER INSERT ON outbox_messages
    FOR EACH ROW WHEN (NEW.tx_id IS NOT NULL) EXECUTE FUNCTION notify_feed();
CREATE TRIGGER outbox_messages_positioned_notify AFTER UPDATE OF tx_id ON outbox_messages
    FOR EACH ROW WHEN (OLD.tx_id IS NULL AND NEW.tx_id IS NOT NULL) EXECUTE FUNCTION notify_feed();

-- +goose Down
DROP TRIGGER outbox_messages_positioned_notify ON outbox_messages;
DROP TRIGGER outbox_messages_written_notify ON outbox_messages;
DROP TRIGGER feed_releases_notify ON feed_releases;
DROP FUNCTION notify_feed();
