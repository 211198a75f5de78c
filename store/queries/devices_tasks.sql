-- Device dispatch (docs/devices.md): the queue of device tasks and the single active one (D1).
-- An execution holds one of its PC's slots while task_devices.holds_slot (a generated
-- column, migrations/00007_device_statuses.sql) is true.

-- name: InsertDeviceTask :one
INSERT INTO tasks (payload, target_count, abort_min_executed, abort_failed_percent, rate, windows)
VALUES (@payload, sqlc.narg('target_count'), sqlc.narg('abort_min_executed'), sqlc.narg('abort_failed_percent'),
        sqlc.narg('rate'), sqlc.narg('windows'))
RETURNING *;

-- name: GetDeviceTask :one
SELECT * FROM tasks WHERE id = @id;

-- name: LockDeviceTask :one
-- NO KEY UPDATE, as every lock of a task row: task_devices inserts (their foreign-key
-- checks take KEY SHARE on the task) never wait for a task's lock holder. A refill of the
-- running task cannot race its finish: its own freed execution, uncommitted, still holds a
-- slot in any snapshot the finish reads.
SELECT * FROM tasks WHERE id = @id FOR NO KEY UPDATE;

-- name: ListDeviceTasks :many
SELECT * FROM tasks WHERE id > @after_id ORDER BY id LIMIT @max_rows;

-- name: GetRunningDeviceTask :one
SELECT * FROM tasks WHERE status = 'running';

-- name: LockRunningDeviceTask :one
SELECT * FROM tasks WHERE status = 'running' FOR NO KEY UPDATE;

-- name: RunningDeviceTaskBusy :one
-- The running task, if any, and whether an execution of it still holds a slot (then it is
-- not done, and an Advance has nothing to do): one index probe, no lock.
SELECT t.id, EXISTS (SELECT 1 FROM task_devices td WHERE td.task_id = t.id AND td.holds_slot)::boolean AS busy
FROM tasks t WHERE t.status = 'running';

-- name: DispatcherLock :exec
-- Serialises task activation across dispatchers and API calls (one xact lock).
SELECT pg_advisory_xact_lock(7400000003);

-- name: ActivateNextDeviceTask :one
-- D1: the oldest pending task becomes the running one (the unique index backs it up).
UPDATE tasks
SET status = 'running', started_at = now(), max_attempts = @max_attempts::integer, device_timeout_ms = @device_timeout_ms::bigint
WHERE id = (SELECT p.id FROM tasks p WHERE p.status = 'pending' ORDER BY p.id LIMIT 1)
RETURNING *;

-- name: FinishDeviceTask :one
UPDATE tasks
SET status = @status, error = @error, finished_at = now()
WHERE id = @id AND status IN ('pending', 'running')
RETURNING *;

-- name: DeviceTaskExecutionCounts :one
SELECT count(*) FILTER (WHERE holds_slot)::bigint                AS active,
       count(*) FILTER (WHERE status = 'SUCCEEDED')::bigint     AS succeeded,
       count(*) FILTER (WHERE status = 'FAILED_FINAL')::bigint  AS failed,
       count(*) FILTER (WHERE status = 'CANCELED')::bigint     AS canceled,
       count(*) FILTER (WHERE status <> 'CANCELED')::bigint    AS created
FROM task_devices WHERE task_id = @task_id;

-- name: DeviceTaskProgress :one
-- A task's execution counts and whether an eligible device has not run it yet, read in ONE
-- statement (one snapshot): a refill committing between two separate reads could otherwise
-- make a task look done while its new execution waits.
SELECT count(*) FILTER (WHERE td.holds_slot)::bigint                AS active,
       count(*) FILTER (WHERE td.status = 'SUCCEEDED')::bigint     AS succeeded,
       count(*) FILTER (WHERE td.status = 'FAILED_FINAL')::bigint  AS failed,
       count(*) FILTER (WHERE td.status = 'CANCELED')::bigint     AS canceled,
       count(*) FILTER (WHERE td.status <> 'CANCELED')::bigint    AS created,
       EXISTS (SELECT 1 FROM devices_unrun_by(@task_id::bigint))::boolean AS has_unrun
FROM task_devices td WHERE td.task_id = @task_id;
