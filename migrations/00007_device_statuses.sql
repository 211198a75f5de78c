-- +goose Up
-- Device dispatch says only what happens (docs/spec.md, "Device dispatch"), and names its two
-- recurring predicates once.
--
-- 1. Statuses the engine never set leave the schema: a device was never made 'busy' (a
--    device running a command is one whose execution holds a slot), and a task was never
--    'retrying' (retries are per execution: task_devices RETRY_SCHEDULED). Rows carrying
--    them could only have been written by hand: a busy device was eligible, so it becomes
--    online; a retrying task had not finished, so it waits again as pending.
UPDATE devices SET status = 'online' WHERE status = 'busy';
ALTER TABLE devices DROP CONSTRAINT devices_status_check;
ALTER TABLE devices ADD CONSTRAINT devices_status_check CHECK (status IN ('online', 'offline', 'error'));

UPDATE tasks SET status = 'pending', started_at = NULL WHERE status = 'retrying';
ALTER TABLE tasks DROP CONSTRAINT tasks_status_check;
ALTER TABLE tasks ADD CONSTRAINT tasks_status_check
    CHECK (status IN ('pending', 'running', 'success', 'failed', 'cancelled'));
ALTER TABLE tasks DROP CONSTRAINT tasks_finished_at;
ALTER TABLE tasks ADD CONSTRAINT tasks_finished_at CHECK ((finished_at IS NULL) = (status IN ('pending', 'running')));

-- 2. "The eligible set" and "holds a slot", each defined here once and read by name in
--    every query, index and view (store/queries/devices_*.sql).
ALTER TABLE devices ADD COLUMN eligible boolean NOT NULL GENERATED ALWAYS AS (status = 'online') STORED;
ALTER TABLE task_devices ADD COLUMN holds_slot boolean NOT NULL
    GENERATED ALWAYS AS (status IN ('CREATED', 'SENT', 'ACKED', 'RETRY_SCHEDULED')) STORED;

DROP INDEX task_devices_device_active;
DROP INDEX task_devices_pc_active;
-- A device runs one command at a time.
CREATE UNIQUE INDEX task_devices_device_active ON task_devices (device_id) WHERE holds_slot;
CREATE INDEX task_devices_pc_active ON task_devices (pc_id, id) WHERE holds_slot;

DROP VIEW pc_device_summary;
-- Slots per PC: target = min(capacity, eligible devices); running = executions holding a slot.
CREATE VIEW pc_device_summary AS
SELECT p.id                                         AS pc_id,
       p.name                                       AS pc_name,
       p.device_capacity                            AS device_capacity,
       e.eligible::bigint                           AS eligible,
       r.running::bigint                            AS running,
       LEAST(p.device_capacity, e.eligible)::bigint AS target
FROM pcs p
CROSS JOIN LATERAL (SELECT count(*) AS eligible FROM devices d WHERE d.pc_id = p.id AND d.eligible) e
CROSS JOIN LATERAL (SELECT count(*) AS running FROM task_devices td WHERE td.pc_id = p.id AND td.holds_slot) r;

-- +goose Down
DROP VIEW pc_device_summary;
DROP INDEX task_devices_device_active;
DROP INDEX task_devices_pc_active;
ALTER TABLE task_devices DROP COLUMN holds_slot;
ALTER TABLE devices DROP COLUMN eligible;
CREATE UNIQUE INDEX task_devices_device_active ON task_devices (device_id)
    WHERE status IN ('CREATED', 'SENT', 'ACKED', 'RETRY_SCHEDULED');
CREATE INDEX task_devices_pc_active ON task_devices (pc_id, id)
    WHERE status IN ('CREATED', 'SENT', 'ACKED', 'RETRY_SCHEDULED');
CREATE VIEW pc_device_summary AS
SELECT p.id                                         AS pc_id,
       p.name                                       AS pc_name,
       p.device_capacity                            AS device_capacity,
       e.eligible::bigint                           AS eligible,
       r.running::bigint                            AS running,
       LEAST(p.device_capacity, e.eligible)::bigint AS target
FROM pcs p
CROSS JOIN LATERAL (SELECT count(*) AS eligible FROM devices d
                    WHERE d.pc_id = p.id AND d.status IN ('online', 'busy')) e
CROSS JOIN LATERAL (SELECT count(*) AS running FROM task_devices td
                    WHERE td.pc_id = p.id AND td.status IN ('CREATED', 'SENT', 'ACKED', 'RETRY_SCHEDULED')) r;

ALTER TABLE tasks DROP CONSTRAINT tasks_finished_at;
ALTER TABLE tasks ADD CONSTRAINT tasks_finished_at
    CHECK ((finished_at IS NULL) = (status IN ('pending', 'running', 'retrying')));
ALTER TABLE tasks DROP CONSTRAINT tasks_status_check;
ALTER TABLE tasks ADD CONSTRAINT tasks_status_check
    CHECK (status IN ('pending', 'running', 'success', 'failed', 'retrying', 'cancelled'));
ALTER TABLE devices DROP CONSTRAINT devices_status_check;
ALTER TABLE devices ADD CONSTRAINT devices_status_check CHECK (status IN ('online', 'busy', 'offline', 'error'));
