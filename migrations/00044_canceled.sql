-- +goose Up
-- One spelling of "canceled" everywhere (docs/glossary.md): the rollout and schedule
-- statuses were already CANCELED; device tasks, executions and their events said
-- 'cancelled'/'CANCELLED'. Stored rows are rewritten, and every CHECK, index and function
-- that names the status says the new spelling.
ALTER TABLE tasks DROP CONSTRAINT tasks_status_check;
UPDATE tasks SET status = 'canceled' WHERE status = 'cancelled';
ALTER TABLE tasks ADD CONSTRAINT tasks_status_check
    CHECK (status IN ('pending', 'running', 'success', 'failed', 'canceled'));

ALTER TABLE task_devices DROP CONSTRAINT task_devices_status_check;
UPDATE task_devices SET status = 'CANCELED' WHERE status = 'CANCELLED';
ALTER TABLE task_devices ADD CONSTRAINT task_devices_status_check
    CHECK (status IN ('CREATED', 'SENT', 'ACKED', 'RETRY_SCHEDULED', 'SUCCEEDED', 'FAILED_FINAL', 'CANCELED'));
-- A task runs once per device (a canceled execution does not count).
DROP INDEX task_devices_once;
CREATE UNIQUE INDEX task_devices_once ON task_devices (task_id, device_id) WHERE status <> 'CANCELED';

ALTER TABLE task_device_events DROP CONSTRAINT task_device_events_type_check;
UPDATE task_device_events SET type = 'CANCELED' WHERE type = 'CANCELLED';
ALTER TABLE task_device_events ADD CONSTRAINT task_device_events_type_check
    CHECK (type IN ('CREATED', 'SENT', 'ACKED', 'SUCCEEDED', 'FAILED', 'TIMEOUT',
                    'RETRY_SCHEDULED', 'FAILED_FINAL', 'CANCELED', 'LATE_RESULT'));

-- The devices task for_task may still run on: in the eligible set, and without an execution of the
-- task that counts (a canceled one does not: the task runs once per device).
CREATE OR REPLACE FUNCTION devices_unrun_by(for_task bigint) RETURNS SETOF devices
LANGUAGE sql STABLE AS $$
    SELECT d.* FROM devices d
    WHERE d.eligible
      AND NOT EXISTS (SELECT 1 FROM task_devices x
                      WHERE x.task_id = for_task AND x.device_id = d.id AND x.status <> 'CANCELED')
$$;

-- +goose Down
CREATE OR REPLACE FUNCTION devices_unrun_by(for_task bigint) RETURNS SETOF devices
LANGUAGE sql STABLE AS $$
    SELECT d.* FROM devices d
    WHERE d.eligible
      AND NOT EXISTS (SELECT 1 FROM task_devices x
                      WHERE x.task_id = for_task AND x.device_id = d.id AND x.status <> 'CANCELLED')
$$;

ALTER TABLE task_device_events DROP CONSTRAINT task_device_events_type_check;
UPDATE task_device_events SET type = 'CANCELLED' WHERE type = 'CANCELED';
ALTER TABLE task_device_events ADD CONSTRAINT task_device_events_type_check
    CHECK (type IN ('CREATED', 'SENT', 'ACKED', 'SUCCEEDED', 'FAILED', 'TIMEOUT',
                    'RETRY_SCHEDULED', 'FAILED_FINAL', 'CANCELLED', 'LATE_RESULT'));

DROP INDEX task_devices_once;
CREATE UNIQUE INDEX task_devices_once ON task_devices (task_id, device_id) WHERE status <> 'CANCELLED';
ALTER TABLE task_devices DROP CONSTRAINT task_devices_status_check;
UPDATE task_devices SET status = 'CANCELLED' WHERE status = 'CANCELED';
ALTER TABLE task_devices ADD CONSTRAINT task_devices_status_check
    CHECK (status IN ('CREATED', 'SENT', 'ACKED', 'RETRY_SCHEDULED', 'SUCCEEDED', 'FAILED_FINAL', 'CANCELLED'));

ALTER TABLE tasks DROP CONSTRAINT tasks_status_check;
UPDATE tasks SET status = 'cancelled' WHERE status = 'canceled';
ALTER TABLE tasks ADD CONSTRAINT tasks_status_check
    CHECK (status IN ('pending', 'running', 'success', 'failed', 'cancelled'));
