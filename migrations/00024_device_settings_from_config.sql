-- +goose Up
-- Each device default in one place: domain/device_defaults.go (docs/devices.md, "Where
-- each rule lives"). The columns lose their DEFAULTs, so no row takes a value the
-- configuration did not give:
--   - a PC's device_capacity is always named by its creator (the API's default is
--     domain.DefaultDeviceCapacity);
--   - a task's max_attempts and device_timeout_ms are those in force when it becomes active
--     (TICKGATE_DEVICE_MAX_ATTEMPTS, TICKGATE_DEVICE_TIMEOUT), and NULL until then: a task
--     that never started never had any;
--   - an execution copies its task's max_attempts.
ALTER TABLE pcs ALTER COLUMN device_capacity DROP DEFAULT;
ALTER TABLE task_devices ALTER COLUMN max_attempts DROP DEFAULT;
ALTER TABLE tasks
    ALTER COLUMN max_attempts DROP DEFAULT,
    ALTER COLUMN max_attempts DROP NOT NULL,
    ALTER COLUMN device_timeout_ms DROP DEFAULT,
    ALTER COLUMN device_timeout_ms DROP NOT NULL;
UPDATE tasks SET max_attempts = NULL, device_timeout_ms = NULL WHERE started_at IS NULL;
ALTER TABLE tasks ADD CONSTRAINT tasks_settings_once_started
    CHECK ((started_at IS NULL) = (max_attempts IS NULL) AND (started_at IS NULL) = (device_timeout_ms IS NULL));

-- +goose Down
-- The schema before: the defaults of migrations/00003 (3 attempts, 20 minutes, 20 slots).
ALTER TABLE tasks DROP CONSTRAINT tasks_settings_once_started;
UPDATE tasks SET max_attempts = 3, device_timeout_ms = 1200000 WHERE started_at IS NULL;
ALTER TABLE tasks
    ALTER COLUMN max_attempts SET DEFAULT 3,
    ALTER COLUMN max_attempts SET NOT NULL,
    ALTER COLUMN device_timeout_ms SET DEFAULT 1200000,
    ALTER COLUMN device_timeout_ms SET NOT NULL;
ALTER TABLE task_devices ALTER COLUMN max_attempts SET DEFAULT 3;
ALTER TABLE pcs ALTER COLUMN device_capacity SET DEFAULT 20;
