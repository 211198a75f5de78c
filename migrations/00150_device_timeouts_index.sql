-- +goose Up
-- The metrics scrape counts device attempts that timed out (tickgate_device_timeouts_total,
-- store/queries/engine_health.sql): along this index it reads the TIMEOUT events alone, not
-- every event of every execution ever recorded.
CREATE INDEX task_device_events_timeouts ON task_device_events (id) WHERE type = 'TIMEOUT';

-- +goose Down
DROP INDEX task_device_events_timeouts;
