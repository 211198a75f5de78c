-- Device dispatch (DESIGN.md §3). Slot-holding task_device statuses are
-- CREATED, SENT, ACKED and RETRY_SCHEDULED; eligible devices are online or busy.

-- name: InsertPC :one
INSERT INTO pcs (name, device_capacity) VALUES (@name, @device_capacity) RETURNING *;

-- name: GetPCByName :one
SELECT * FROM pcs WHERE name = @name;

-- name: GetPCByID :one
SELECT * FROM pcs WHERE id = @id;

-- name: ListPCs :many
SELECT * FROM pcs WHERE id > @after_id ORDER BY id LIMIT @max_rows;

-- name: ListAllPCs :many
SELECT * FROM pcs ORDER BY id;

-- name: LockPC :one
-- The per-PC lock every slot refill holds, so two refills never over-fill a PC (D2),
-- read with the running task (if any) in the same round trip. NO KEY UPDATE does not
-- block the foreign-key checks of task_devices inserts.
SELECT p.id, t.id AS running_task_id, t.target_count AS running_target_count
FROM pcs p LEFT JOIN tasks t ON t.status = 'running'
WHERE p.id = @id
FOR NO KEY UPDATE OF p;

-- name: PCSummary :one
SELECT * FROM pc_device_summary WHERE pc_id = @pc_id;

-- name: PCSummaries :many
SELECT * FROM pc_device_summary ORDER BY pc_id;

-- name: InsertDevice :one
INSERT INTO devices (pc_id, serial) VALUES (@pc_id, @serial) RETURNING *;

-- name: GetDeviceBySerial :one
SELECT * FROM devices WHERE serial = @serial;

-- name: ListDevicesOfPC :many
SELECT * FROM devices WHERE pc_id = @pc_id ORDER BY id;

-- name: SetDeviceStatus :one
UPDATE devices
SET status = @status, error = CASE WHEN @status::text = 'error' THEN @error::text ELSE '' END, updated_at = now()
WHERE serial = @serial
RETURNING *;

-- name: LockActiveOfDevice :many
-- A device's slot-holding executions, locked before the device itself (the lock order of
-- the result path: task_devices, then devices, then pcs).
SELECT td.id FROM task_devices td
WHERE td.device_id = (SELECT d.id FROM devices d WHERE d.serial = @serial)
  AND td.status IN ('CREATED', 'SENT', 'ACKED', 'RETRY_SCHEDULED')
ORDER BY td.id
FOR UPDATE OF td;

-- name: SetDeviceErrorByID :exec
UPDATE devices SET status = 'error', error = @error, updated_at = now() WHERE id = @id;

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
WHERE id = @id AND status IN ('pending', 'running', 'retrying')
RETURNING *;

-- name: DevTaskExecutionCounts :one
SELECT count(*) FILTER (WHERE status IN ('CREATED', 'SENT', 'ACKED', 'RETRY_SCHEDULED'))::bigint AS active,
       count(*) FILTER (WHERE status = 'SUCCEEDED')::bigint                                    AS succeeded,
       count(*) FILTER (WHERE status = 'FAILED_FINAL')::bigint                                 AS failed,
       count(*) FILTER (WHERE status = 'CANCELLED')::bigint                                    AS cancelled,
       count(*) FILTER (WHERE status <> 'CANCELLED')::bigint                                   AS created
FROM task_devices WHERE task_id = @task_id;

-- name: DevTaskHasUnrunDevice :one
-- Is there an eligible device this task has not run (or is not running) on yet?
SELECT EXISTS (
    SELECT 1 FROM devices d
    WHERE d.status IN ('online', 'busy')
      AND NOT EXISTS (SELECT 1 FROM task_devices x
                      WHERE x.task_id = @task_id AND x.device_id = d.id AND x.status <> 'CANCELLED')
)::boolean AS has;

-- name: CancelIneligibleOfPC :many
-- Executions holding a slot on a device that left the eligible set (offline, error) are
-- cancelled, so the PC's running count never exceeds its shrunken target. Rows another
-- transaction is finishing are skipped (it frees them itself).
WITH c AS (
    SELECT td.id FROM task_devices td JOIN devices d ON d.id = td.device_id
    WHERE td.pc_id = @pc_id::bigint
      AND td.status IN ('CREATED', 'SENT', 'ACKED', 'RETRY_SCHEDULED')
      AND d.status NOT IN ('online', 'busy')
    FOR UPDATE OF td SKIP LOCKED
), upd AS (
    UPDATE task_devices td
    SET status = 'CANCELLED', completed_at = now(), error = 'device left the eligible set'
    FROM c WHERE td.id = c.id
    RETURNING td.id, td.attempt
)
INSERT INTO task_device_events (task_device_id, attempt, type, detail)
SELECT upd.id, upd.attempt, 'CANCELLED', 'device left the eligible set' FROM upd
RETURNING task_device_id;

-- name: RefillPC :many
-- D2: inserts at most target - running task_devices of the running task for this PC, one
-- per free slot, on eligible devices the task has not run on and that run nothing else.
-- The caller holds LockPC (and LockTask when the task has a target_count).
WITH task AS (
    SELECT t.id, t.max_attempts, t.target_count FROM tasks t WHERE t.status = 'running'
), free AS (
    SELECT GREATEST(s.target - s.running, 0)::bigint AS n FROM pc_device_summary s WHERE s.pc_id = @pc_id::bigint
), quota AS (
    SELECT LEAST((SELECT n FROM free),
                 COALESCE(task.target_count - (SELECT count(*) FROM task_devices x
                                               WHERE x.task_id = task.id AND x.status <> 'CANCELLED'),
                          2147483647))::bigint AS n
    FROM task
), pick AS (
    SELECT d.id FROM devices d
    WHERE d.pc_id = @pc_id::bigint AND d.status IN ('online', 'busy')
      AND NOT EXISTS (SELECT 1 FROM task_devices x JOIN task ON x.task_id = task.id
                      WHERE x.device_id = d.id AND x.status <> 'CANCELLED')
      AND NOT EXISTS (SELECT 1 FROM task_devices y
                      WHERE y.device_id = d.id AND y.status IN ('CREATED', 'SENT', 'ACKED', 'RETRY_SCHEDULED'))
    ORDER BY d.id
    LIMIT COALESCE((SELECT GREATEST(n, 0) FROM quota), 0)
), ins AS (
    INSERT INTO task_devices (task_id, device_id, pc_id, max_attempts)
    SELECT task.id, pick.id, @pc_id::bigint, task.max_attempts FROM pick CROSS JOIN task
    RETURNING id, attempt
), ev AS (
    INSERT INTO task_device_events (task_device_id, attempt, type)
    SELECT ins.id, ins.attempt, 'CREATED' FROM ins
)
SELECT ins.id FROM ins ORDER BY ins.id;

-- name: ClaimTaskDevices :many
-- The agent's pull: up to max waiting commands of the PC (eligible devices only) become
-- SENT, which starts their deadline. SKIP LOCKED: two agents of one PC never get the same one.
WITH pick AS (
    SELECT td.id FROM task_devices td JOIN devices d ON d.id = td.device_id
    WHERE td.pc_id = @pc_id::bigint AND td.status IN ('CREATED', 'RETRY_SCHEDULED') AND d.status IN ('online', 'busy')
    ORDER BY td.id
    LIMIT @max_rows::integer
    -- FOR SHARE of the device: a concurrent status change waits for this claim (and then
    -- cancels what it sent), or this claim waits for it and sees the device's new status.
    FOR UPDATE OF td SKIP LOCKED
    FOR SHARE OF d
), upd AS (
    UPDATE task_devices td
    SET status = 'SENT', sent_at = now(), acked_at = NULL,
        timeout_at = now() + t.device_timeout_ms * interval '1 millisecond'
    FROM pick, tasks t
    WHERE td.id = pick.id AND t.id = td.task_id
    RETURNING td.id, td.task_id, td.device_id, td.attempt, td.max_attempts, td.sent_at, td.timeout_at
), ev AS (
    INSERT INTO task_device_events (task_device_id, attempt, type)
    SELECT upd.id, upd.attempt, 'SENT' FROM upd
)
SELECT upd.id, upd.task_id, upd.attempt, upd.max_attempts, upd.sent_at, upd.timeout_at,
       d.serial AS device_serial, t.payload
FROM upd JOIN devices d ON d.id = upd.device_id JOIN tasks t ON t.id = upd.task_id
ORDER BY upd.id;

-- name: LockTaskDevice :one
SELECT * FROM task_devices WHERE id = @id FOR UPDATE;

-- name: AckTaskDevice :exec
UPDATE task_devices SET status = 'ACKED', acked_at = now() WHERE id = @id;

-- name: SucceedTaskDevice :exec
UPDATE task_devices SET status = 'SUCCEEDED', completed_at = clock_timestamp(), error = '' WHERE id = @id;

-- name: RetryTaskDevice :exec
UPDATE task_devices
SET status = 'RETRY_SCHEDULED', attempt = attempt + 1, error = @error, acked_at = NULL, timeout_at = NULL
WHERE id = @id;

-- name: FailFinalTaskDevice :exec
UPDATE task_devices SET status = 'FAILED_FINAL', completed_at = clock_timestamp(), error = @error WHERE id = @id;

-- name: InsertTaskDeviceEvent :exec
INSERT INTO task_device_events (task_device_id, attempt, type, detail)
VALUES (@task_device_id, @attempt, @type, @detail);

-- name: CancelTaskDevicesOfTask :many
-- Cancels the task's executions in the given statuses (unsent ones for an abort, every
-- slot-holding one for a cancel) with a CANCELLED event each.
WITH upd AS (
    UPDATE task_devices
    SET status = 'CANCELLED', completed_at = now(), error = @reason::text
    WHERE task_id = @task_id::bigint AND status = ANY (@statuses::text[])
    RETURNING id, attempt, pc_id
), ev AS (
    INSERT INTO task_device_events (task_device_id, attempt, type, detail)
    SELECT upd.id, upd.attempt, 'CANCELLED', @reason::text FROM upd
)
SELECT upd.id, upd.pc_id FROM upd ORDER BY upd.id;

-- name: GetTaskDeviceView :one
SELECT td.id, td.task_id, td.device_id, td.pc_id, td.status, td.attempt, td.max_attempts, td.error,
       td.created_at, td.sent_at, td.acked_at, td.completed_at, td.timeout_at,
       d.serial AS device_serial, p.name AS pc_name
FROM task_devices td JOIN devices d ON d.id = td.device_id JOIN pcs p ON p.id = td.pc_id
WHERE td.id = @id;

-- name: ListTaskDevicesOfTask :many
SELECT td.id, td.task_id, td.device_id, td.pc_id, td.status, td.attempt, td.max_attempts, td.error,
       td.created_at, td.sent_at, td.acked_at, td.completed_at, td.timeout_at,
       d.serial AS device_serial, p.name AS pc_name
FROM task_devices td JOIN devices d ON d.id = td.device_id JOIN pcs p ON p.id = td.pc_id
WHERE td.task_id = @task_id AND td.id > @after_id
ORDER BY td.id
LIMIT @max_rows;

-- name: ListTaskDeviceEvents :many
SELECT * FROM task_device_events WHERE task_device_id = @task_device_id ORDER BY id;

-- name: OverdueInFlight :many
-- Safety net for a slot workflow that never started: in-flight executions past deadline + grace.
SELECT id, attempt FROM task_devices
WHERE status IN ('SENT', 'ACKED') AND timeout_at < @before::timestamptz
ORDER BY timeout_at
LIMIT 200;

-- name: GetRunningDevTask :one
SELECT * FROM tasks WHERE status = 'running';

-- name: ListDevicesPage :many
SELECT d.id, d.pc_id, d.serial, d.status, d.error, d.created_at, d.updated_at, p.name AS pc_name
FROM devices d JOIN pcs p ON p.id = d.pc_id
WHERE d.id > @after_id
ORDER BY d.id
LIMIT @max_rows;

-- name: CountActiveOfTaskOnPC :one
SELECT count(*)::bigint FROM task_devices
WHERE pc_id = @pc_id AND task_id = @task_id AND status IN ('CREATED', 'SENT', 'ACKED', 'RETRY_SCHEDULED');

-- name: LockAllPCs :many
-- Every PC's refill lock, in id order (the order any multi-PC lock takes them).
SELECT id FROM pcs ORDER BY id FOR NO KEY UPDATE;

-- name: RefillAllPCs :many
-- RefillPC for the given PCs in one statement (a task just became active): per PC at most
-- target - running new executions, on eligible devices the task has not run on and that
-- run nothing else. The caller holds those PCs' locks (and LockDevTask with a target_count).
WITH task AS (
    SELECT t.id, t.max_attempts, t.target_count FROM tasks t WHERE t.status = 'running'
), free AS (
    SELECT s.pc_id, GREATEST(s.target - s.running, 0)::bigint AS n FROM pc_device_summary s
    WHERE s.pc_id = ANY (@pc_ids::bigint[])
), cand AS (
    SELECT d.id AS device_id, d.pc_id, row_number() OVER (PARTITION BY d.pc_id ORDER BY d.id) AS rn
    FROM devices d
    WHERE d.status IN ('online', 'busy')
      AND EXISTS (SELECT 1 FROM task)
      AND NOT EXISTS (SELECT 1 FROM task_devices x JOIN task ON x.task_id = task.id
                      WHERE x.device_id = d.id AND x.status <> 'CANCELLED')
      AND NOT EXISTS (SELECT 1 FROM task_devices y
                      WHERE y.device_id = d.id AND y.status IN ('CREATED', 'SENT', 'ACKED', 'RETRY_SCHEDULED'))
), pick AS (
    SELECT cand.device_id, cand.pc_id, row_number() OVER (ORDER BY cand.pc_id, cand.rn) AS g
    FROM cand JOIN free ON free.pc_id = cand.pc_id
    WHERE cand.rn <= free.n
), quota AS (
    SELECT COALESCE(task.target_count - (SELECT count(*) FROM task_devices x
                                         WHERE x.task_id = task.id AND x.status <> 'CANCELLED'),
                    2147483647)::bigint AS n
    FROM task
), ins AS (
    INSERT INTO task_devices (task_id, device_id, pc_id, max_attempts)
    SELECT task.id, pick.device_id, pick.pc_id, task.max_attempts
    FROM pick CROSS JOIN task
    WHERE pick.g <= (SELECT n FROM quota)
    RETURNING id, attempt
), ev AS (
    INSERT INTO task_device_events (task_device_id, attempt, type)
    SELECT ins.id, ins.attempt, 'CREATED' FROM ins
)
SELECT ins.id FROM ins ORDER BY ins.id;

-- name: DevTaskProgress :one
-- A task's execution counts and whether an eligible device has not run it yet, read in ONE
-- statement (one snapshot): a refill committing between two separate reads could otherwise
-- make a task look done while its new execution waits.
SELECT count(*) FILTER (WHERE td.status IN ('CREATED', 'SENT', 'ACKED', 'RETRY_SCHEDULED'))::bigint AS active,
       count(*) FILTER (WHERE td.status = 'SUCCEEDED')::bigint                                    AS succeeded,
       count(*) FILTER (WHERE td.status = 'FAILED_FINAL')::bigint                                 AS failed,
       count(*) FILTER (WHERE td.status <> 'CANCELLED')::bigint                                   AS created,
       EXISTS (
           SELECT 1 FROM devices d
           WHERE d.status IN ('online', 'busy')
             AND NOT EXISTS (SELECT 1 FROM task_devices x
                             WHERE x.task_id = @task_id AND x.device_id = d.id AND x.status <> 'CANCELLED')
       )::boolean AS has_unrun
FROM task_devices td WHERE td.task_id = @task_id;

-- name: TaskDevicePCID :one
SELECT pc_id FROM task_devices WHERE id = @id;
