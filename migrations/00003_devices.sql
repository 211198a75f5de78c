-- +goose Up
-- Device dispatch (docs/devices.md). Table names are the device farm's own (seed 003).

-- A PC drives up to device_capacity devices at once (its slots).
CREATE TABLE pcs (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name            text        NOT NULL UNIQUE
                    CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$'),
    device_capacity integer     NOT NULL DEFAULT 20 CHECK (device_capacity BETWEEN 1 AND 1000),
    created_at      timestamptz NOT NULL DEFAULT now()
);

-- online and busy devices are eligible; offline and error ones are not. error is set by a
-- FAILED_FINAL execution and cleared only by an operator (PATCH /devices/{serial}).
CREATE TABLE devices (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    pc_id           bigint      NOT NULL REFERENCES pcs (id) ON DELETE CASCADE,
    serial          text        NOT NULL UNIQUE
                    CHECK (serial ~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$'),
    status          text        NOT NULL DEFAULT 'online'
                    CHECK (status IN ('online', 'busy', 'offline', 'error')),
    error           text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX devices_by_pc ON devices (pc_id, id);

-- The queue of device tasks. The single 'running' row is the ACTIVE task (D1). The
-- dispatcher copies the worker's max_attempts and device timeout onto the task when it
-- activates it, so every execution of a task follows the same rule.
CREATE TABLE tasks (
    id                   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    payload              jsonb       NOT NULL DEFAULT '{}'::jsonb,
    target_count         integer     CHECK (target_count > 0),
    abort_min_executed   integer     CHECK (abort_min_executed > 0),
    abort_failed_percent double precision CHECK (abort_failed_percent >= 0 AND abort_failed_percent < 100),
    status               text        NOT NULL DEFAULT 'pending'
                         CHECK (status IN ('pending', 'running', 'success', 'failed', 'retrying', 'cancelled')),
    error                text        NOT NULL DEFAULT '',
    max_attempts         integer     NOT NULL DEFAULT 3 CHECK (max_attempts > 0),
    device_timeout_ms    bigint      NOT NULL DEFAULT 1200000 CHECK (device_timeout_ms > 0),
    created_at           timestamptz NOT NULL DEFAULT now(),
    started_at           timestamptz,
    finished_at          timestamptz,
    CONSTRAINT tasks_abort_rule CHECK ((abort_min_executed IS NULL) = (abort_failed_percent IS NULL)),
    CONSTRAINT tasks_finished_at CHECK ((finished_at IS NULL) = (status IN ('pending', 'running', 'retrying'))),
    CONSTRAINT tasks_started_at CHECK (status NOT IN ('running', 'success', 'failed') OR started_at IS NOT NULL)
);
-- D1 in the database: at most one running task, whatever the callers do.
CREATE UNIQUE INDEX tasks_one_running ON tasks ((true)) WHERE status = 'running';
CREATE INDEX tasks_pending ON tasks (id) WHERE status = 'pending';

-- The source of truth of each device execution. A retry is the same row with attempt + 1;
-- task_device_events keeps the per-attempt history. CREATED, SENT, ACKED and
-- RETRY_SCHEDULED hold one of the PC's slots; SUCCEEDED, FAILED_FINAL and CANCELLED are final.
CREATE TABLE task_devices (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id         bigint      NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    device_id       bigint      NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
    pc_id           bigint      NOT NULL REFERENCES pcs (id) ON DELETE CASCADE,
    status          text        NOT NULL DEFAULT 'CREATED'
                    CHECK (status IN ('CREATED', 'SENT', 'ACKED', 'RETRY_SCHEDULED', 'SUCCEEDED', 'FAILED_FINAL', 'CANCELLED')),
    attempt         integer     NOT NULL DEFAULT 1,
    max_attempts    integer     NOT NULL DEFAULT 3 CHECK (max_attempts > 0),
    error           text        NOT NULL DEFAULT '',
    -- clock_timestamp(): the steps of one transaction (a slot freed, then refilled) keep
    -- their order and distance.
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    sent_at         timestamptz,
    acked_at        timestamptz,
    completed_at    timestamptz,
    timeout_at      timestamptz,
    CONSTRAINT task_devices_attempt CHECK (attempt BETWEEN 1 AND max_attempts),
    CONSTRAINT task_devices_completed_at
        CHECK ((completed_at IS NULL) = (status IN ('CREATED', 'SENT', 'ACKED', 'RETRY_SCHEDULED'))),
    -- a command out on a device has its send time and deadline
    CONSTRAINT task_devices_in_flight
        CHECK (status NOT IN ('SENT', 'ACKED') OR (sent_at IS NOT NULL AND timeout_at IS NOT NULL)),
    CONSTRAINT task_devices_acked CHECK (status <> 'ACKED' OR acked_at IS NOT NULL)
);
-- A task runs once per device (a cancelled execution does not count).
CREATE UNIQUE INDEX task_devices_once ON task_devices (task_id, device_id) WHERE status <> 'CANCELLED';
-- A device runs one command at a time.
CREATE UNIQUE INDEX task_devices_device_active ON task_devices (device_id)
    WHERE status IN ('CREATED', 'SENT', 'ACKED', 'RETRY_SCHEDULED');
CREATE INDEX task_devices_pc_active ON task_devices (pc_id, id)
    WHERE status IN ('CREATED', 'SENT', 'ACKED', 'RETRY_SCHEDULED');
CREATE INDEX task_devices_by_task ON task_devices (task_id, id);
CREATE INDEX task_devices_in_flight_deadline ON task_devices (timeout_at) WHERE status IN ('SENT', 'ACKED');

-- One row per attempt event. LATE_RESULT records a result that arrived for an attempt that
-- had already timed out (or been cancelled); CANCELLED an execution stopped by a task
-- cancel, an abort rule or its device leaving the eligible set.
CREATE TABLE task_device_events (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_device_id  bigint      NOT NULL REFERENCES task_devices (id) ON DELETE CASCADE,
    attempt         integer     NOT NULL CHECK (attempt > 0),
    type            text        NOT NULL
                    CHECK (type IN ('CREATED', 'SENT', 'ACKED', 'SUCCEEDED', 'FAILED', 'TIMEOUT',
                                    'RETRY_SCHEDULED', 'FAILED_FINAL', 'CANCELLED', 'LATE_RESULT')),
    detail          text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX task_device_events_by_td ON task_device_events (task_device_id, id);

-- Slots per PC: target = min(capacity, eligible devices); running = executions holding a slot.
CREATE VIEW pc_device_summary AS
SELECT p.id                                        AS pc_id,
       p.name                                      AS pc_name,
       p.device_capacity                           AS device_capacity,
       e.eligible::bigint                          AS eligible,
       r.running::bigint                           AS running,
       LEAST(p.device_capacity, e.eligible)::bigint AS target
FROM pcs p
CROSS JOIN LATERAL (SELECT count(*) AS eligible FROM devices d
                    WHERE d.pc_id = p.id AND d.status IN ('online', 'busy')) e
CROSS JOIN LATERAL (SELECT count(*) AS running FROM task_devices td
                    WHERE td.pc_id = p.id AND td.status IN ('CREATED', 'SENT', 'ACKED', 'RETRY_SCHEDULED')) r;

-- +goose Down
DROP VIEW pc_device_summary;
DROP TABLE task_device_events;
DROP TABLE task_devices;
DROP TABLE tasks;
DROP TABLE devices;
DROP TABLE pcs;
