-- Device dispatch (docs/devices.md): task_devices, the source of truth of each device
-- execution, and their per-attempt events. CREATED and RETRY_SCHEDULED wait for the agent's
-- claim; SENT and ACKED are out on the device; holds_slot (migrations/00007) covers all four.

-- name: LockActiveOfDevice :many
-- A device's slot-holding executions, locked before the device itself (the lock order of
-- the result path: task_devices, then devices, then pcs).
SELECT td.id FROM task_devices td
WHERE td.device_id = (SELECT d.id FROM devices d WHERE d.serial = @serial)
  AND td.holds_slot
ORDER BY td.id
FOR UPDATE OF td;

-- name: ClaimTaskDevices :many
-- The agent's pull: up to max waiting commands of the PC (eligible devices only) become
-- SENT, which starts their deadline. SKIP LOCKED: two agents of one PC never get the same one.
-- The PC by name, in the same statement: no row means no such PC, and a known PC with
-- nothing to send gives one row of zeros (id 0), so an idle agent's poll is one round trip.
WITH pc AS (
    SELECT p.id FROM pcs p WHERE p.name = @pc_name::text
), pick AS (
    SELECT td.id FROM task_devices td JOIN devices d ON d.id = td.device_id
    -- holds_slot lets the scan use the PC's slot holders (task_devices_pc_active, in id
    -- order) instead of every execution ever made.
    WHERE td.pc_id = (SELECT pc.id FROM pc) AND td.holds_slot AND td.status IN ('CREATED', 'RETRY_SCHEDULED') AND d.eligible
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
    RETURNING td.id, td.task_id, td.device_id, td.slot, td.attempt, td.max_attempts, td.sent_at, td.timeout_at
), ev AS (
    INSERT INTO task_device_events (task_device_id, attempt, type)
    SELECT upd.id, upd.attempt, 'SENT' FROM upd
), claimed AS (
    SELECT upd.id, upd.task_id, upd.slot, upd.attempt, upd.max_attempts, upd.sent_at, upd.timeout_at,
           d.serial, t.payload
    FROM upd JOIN devices d ON d.id = upd.device_id JOIN tasks t ON t.id = upd.task_id
)
SELECT COALESCE(c.id, 0)::bigint AS id, COALESCE(c.task_id, 0)::bigint AS task_id,
       COALESCE(c.slot, 0)::integer AS slot, COALESCE(c.attempt, 0)::integer AS attempt,
       COALESCE(c.max_attempts, 0)::integer AS max_attempts, c.sent_at, c.timeout_at,
       COALESCE(c.serial, '')::text AS device_serial, COALESCE(c.payload, 'null'::jsonb) AS payload
FROM pc LEFT JOIN claimed c ON true
ORDER BY c.id;

-- name: TaskDevicePCID :one
SELECT pc_id FROM task_devices WHERE id = @id;

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
-- Cancels the task's slot-holding executions (a task cancel), or with unsent_only those not
-- out on a device (an abort: executions in flight may finish), with a CANCELLED event each.
WITH upd AS (
    UPDATE task_devices
    SET status = 'CANCELLED', completed_at = now(), error = @reason::text
    WHERE task_id = @task_id::bigint AND holds_slot
      AND (NOT @unsent_only::boolean OR status IN ('CREATED', 'RETRY_SCHEDULED'))
    RETURNING id, attempt, pc_id
), ev AS (
    INSERT INTO task_device_events (task_device_id, attempt, type, detail)
    SELECT upd.id, upd.attempt, 'CANCELLED', @reason::text FROM upd
)
SELECT upd.id, upd.pc_id FROM upd ORDER BY upd.id;

-- name: GetTaskDeviceView :one
SELECT td.id, td.task_id, td.device_id, td.pc_id, td.slot, td.status, td.attempt, td.max_attempts, td.error,
       td.created_at, td.sent_at, td.acked_at, td.completed_at, td.timeout_at,
       d.serial AS device_serial, p.name AS pc_name
FROM task_devices td JOIN devices d ON d.id = td.device_id JOIN pcs p ON p.id = td.pc_id
WHERE td.id = @id;

-- name: ListTaskDevicesOfTask :many
SELECT td.id, td.task_id, td.device_id, td.pc_id, td.slot, td.status, td.attempt, td.max_attempts, td.error,
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

-- name: CountActiveOfTaskOnPC :one
SELECT count(*)::bigint FROM task_devices
WHERE pc_id = @pc_id AND task_id = @task_id AND holds_slot;

-- name: SlotExecution :one
-- The execution holding a PC's numbered slot, for the slot's timer (ErrNoRows: the slot is empty).
SELECT td.id, td.status, td.attempt, td.sent_at, td.timeout_at
FROM task_devices td JOIN pcs p ON p.id = td.pc_id
WHERE p.name = @pc_name AND td.slot = @slot::integer AND td.holds_slot;

-- name: SucceedAndRefill :one
-- The common result in one statement (no transaction round trips): an attempt in flight
-- succeeds, with its event, and the slot it frees gets the running task's next execution
-- on this PC, with its event — what ReportResult's transaction does, for a task with no
-- target_count (no task lock needed) and no abort rule (a success cannot abort it). No
-- row: the general path decides (another task, a stale attempt, a rule to apply).
-- The new execution takes the freed slot's number in the same statement: the freed row's
-- old index entry was deleted by this very statement, so it is no conflict. picked without
-- created means a concurrent refill took that device first; the caller refills again.
-- SKIP LOCKED: the statement never waits before it picks a device (the general path waits
-- instead). A statement that waited for its row would pick from the snapshot it took
-- before the wait, and could take a device that found an execution meanwhile.
WITH cur AS (
    SELECT td.id FROM task_devices td JOIN tasks t ON t.id = td.task_id
    WHERE td.id = @id AND td.status IN ('SENT', 'ACKED')
      AND (@attempt::integer = 0 OR td.attempt = @attempt::integer)
      AND t.status = 'running' AND t.target_count IS NULL AND t.abort_min_executed IS NULL
    FOR UPDATE OF td SKIP LOCKED
), done AS (
    UPDATE task_devices x SET status = 'SUCCEEDED', completed_at = clock_timestamp(), error = ''
    FROM cur WHERE x.id = cur.id
    RETURNING x.*
), done_ev AS (
    INSERT INTO task_device_events (task_device_id, attempt, type)
    SELECT done.id, done.attempt, 'SUCCEEDED' FROM done
), pick AS (
    -- The PC and task as scalars, so the scan is the PC's devices by index (a join with
    -- the CTE let the planner test every device of every PC).
    SELECT d.id FROM devices d
    WHERE d.pc_id = (SELECT pc_id FROM done) AND d.eligible
      AND NOT EXISTS (SELECT 1 FROM task_devices x
                      WHERE x.task_id = (SELECT task_id FROM done) AND x.device_id = d.id AND x.status <> 'CANCELLED')
      AND NOT EXISTS (SELECT 1 FROM task_devices y WHERE y.device_id = d.id AND y.holds_slot)
    ORDER BY d.id
    LIMIT 1
    FOR NO KEY UPDATE OF d SKIP LOCKED
), ins AS (
    INSERT INTO task_devices (task_id, device_id, pc_id, max_attempts, slot)
    SELECT done.task_id, pick.id, done.pc_id, t.max_attempts, done.slot
    FROM done CROSS JOIN pick JOIN tasks t ON t.id = done.task_id
    ON CONFLICT DO NOTHING
    RETURNING id, attempt
), ins_ev AS (
    INSERT INTO task_device_events (task_device_id, attempt, type)
    SELECT ins.id, ins.attempt, 'CREATED' FROM ins
)
-- The execution as this statement left it comes back with the answer (GetTaskDeviceView's
-- columns), so the agent's answer needs no second round trip.
SELECT done.id, done.task_id, done.device_id, done.pc_id, done.slot::integer AS slot, done.status,
       done.attempt, done.max_attempts, done.error, done.created_at, done.sent_at, done.acked_at,
       done.completed_at, done.timeout_at, d.serial AS device_serial, p.name AS pc_name,
       COALESCE((SELECT id FROM pick), 0)::bigint AS picked,
       COALESCE((SELECT id FROM ins), 0)::bigint AS created
FROM done JOIN devices d ON d.id = done.device_id JOIN pcs p ON p.id = done.pc_id;
