-- +goose Up
-- The outbox is consumed as a pull feed (GET /events?after=, store/queries/events.sql): each
-- consumer keeps its own cursor, so "published" is not a property of a row — one consumer
-- having read it says nothing about another. Nothing ever wrote published_at; it goes.
ALTER TABLE outbox_messages DROP COLUMN published_at;

-- +goose Down
ALTER TABLE outbox_messages ADD COLUMN published_at timestamptz;
