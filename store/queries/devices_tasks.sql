-- Device dispatch (docs/devices.md): the queue of device tasks and the single active one (D1).
-- An execution holds one of its PC's slots while task_devices.holds_slot (a generated
-- column, migrations/00007) is true.

-- name: InsertDevTask :one
INSERT INTO tasks (payload, target_count, abort_min_executed, abort_failed_percent)
VALUES (@payload, sqlc.narg('target_count'), sqlc.narg('abort_min_executed'), sqlc.narg('abort_failed_percent'))
RETURNING *;

-- name: GetDevTask :one
SELECT * FROM tasks WHERE id = @id;

-- name: LockDevTask :one
SELECT * FROM tasks WHERE id = @id FOR UPDATE;

-- name: ListDevTasks :many
SELECT * FROM tasks WHERE id > @after_id ORDER BY id LIMIT @max_rows;

-- name: GetRunningDevTask :one
SELECT * FROM tasks WHERE status = 'running';

-- name: LockRunningDevTask :one
SELECT * FROM tasks WHERE status = 'running' FOR UPDATE;

-- name: DispatcherLock :exec
-- Serialises task activation across dispatchers and API calls (one xact lock).
SELECT pg_advisory_xact_lock(7400000003);

-- name: ActivateNextDevTask :one
-- D1: the oldest pending task becomes the running one (the unique index backs it up).
UPDATE tasks
SET status = 'running', started_at = now(), max_attempts = @max_attempts, device_timeout_ms = @device_timeout_ms
WHERE id = (SELECT p.id FROM tasks p WHERE p.status = 'pending' ORDER BY p.id LIMIT 1)
RETURNING *;

-- name: FinishDevTask :one
UPDATE tasks
SET status = @status, error = @error, finished_at = now()
WHERE id = @id AND status IN ('pending', 'running')
RETURNING *;

-- name: DevTaskExecutionCounts :one
SELECT count(*) FILTER (WHERE holds_slot)::bigint                AS active,
       count(*) FILTER (WHERE status = 'SUCCEEDED')::bigint     AS succeeded,
       count(*) FILTER (WHERE status = 'FAILED_FINAL')::bigint  AS failed,
       count(*) FILTER (WHERE status = 'CANCELLED')::bigint     AS cancelled,
       count(*) FILTER (WHERE status <> 'CANCELLED')::bigint    AS created
FROM task_devices WHERE task_id = @task_id;

-- name: DevTaskProgress :one
-- A task's execution counts and whether an eligible device has not run it yet, read in ONE
-- statement (one snapshot): a refill committing between two separate reads could otherwise
-- make a task look done while its new execution waits.
SELECT count(*) FILTER (WHERE td.holds_slot)::bigint                AS active,
       count(*) FILTER (WHERE td.status = 'SUCCEEDED')::bigint     AS succeeded,
       count(*) FILTER (WHERE td.status = 'FAILED_FINAL')::bigint  AS failed,
       count(*) FILTER (WHERE td.status = 'CANCELLED')::bigint     AS cancelled,
       count(*) FILTER (WHERE td.status <> 'CANCELLED')::bigint    AS created,
       EXISTS (
           SELECT 1 FROM devices d
           WHERE d.eligible
             AND NOT EXISTS (SELECT 1 FROM task_devices x
                             WHERE x.task_id = @task_id AND x.device_id = d.id AND x.status <> 'CANCELLED')
       )::boolean AS has_unrun
FROM task_devices td WHERE td.task_id = @task_id;
