-- Device dispatch (docs/devices.md): task_devices, the source of truth of each device
-- execution, and their per-attempt events. CREATED and RETRY_SCHEDULED wait for the agent's
-- claim; SENT and ACKED are out on the device; holds_slot (migrations/00007_device_statuses.sql) covers all four.

-- name: LockActiveOfDevice :many
-- A device's slot-holding executions, locked before the device itself (the lock order of
-- the result path: task_devices, then devices, then pcs).
SELECT td.id FROM task_devices td
WHERE td.device_id = (SELECT d.id FROM devices d WHERE d.serial = @serial)
  AND td.holds_slot
ORDER BY td.id
FOR UPDATE OF td;

-- name: ClaimDeviceExecutions :many
-- The agent's pull: up to max waiting commands of the PC (eligible devices only) are handed
-- out (device_attempts_hand_out, migrations/00092_device_steps.sql: SENT, their deadline
-- started). SKIP LOCKED: two agents of one PC never get the same one.
-- The PC by name, in the same statement: no row means no such PC, and a known PC with
-- nothing to send gives one row of zeros (id 0), so an idle agent's poll is one round trip.
--
-- Progressive delivery (docs/progressive.md): nothing is sent while the global freeze holds
-- or outside the running task's windows; a task with a rate is claimed through
-- store.claimUnderRate (the task's row locked, the room counted, then this statement with
-- rate_checked and max_rows the room). closed_gate names the gate that held the claim
-- back: frozen, window, window_stale (the window span ended: the caller computes the next
-- one and claims again) or rate (the caller claims under the rate).
WITH pc AS (
    SELECT p.id FROM pcs p WHERE p.name = @pc_name::text
), gate AS (
    SELECT CASE
               WHEN freeze_in_force(NULL) IS NOT NULL THEN 'frozen'
               WHEN t.windows IS NOT NULL AND (t.window_end IS NULL OR t.window_end <= now()) THEN 'window_stale'
               WHEN t.windows IS NOT NULL AND now() < t.window_start THEN 'window'
               WHEN t.rate IS NOT NULL AND NOT @rate_checked::boolean THEN 'rate'
               ELSE ''
           END AS closed
    FROM (SELECT 1) one LEFT JOIN tasks t ON t.status = 'running'
), pick AS (
    SELECT td.id FROM task_devices td JOIN devices d ON d.id = td.device_id
    -- holds_slot lets the scan use the PC's slot holders (task_devices_pc_slot) instead of
    -- every execution ever made.
    WHERE td.pc_id = (SELECT pc.id FROM pc) AND td.holds_slot AND td.status IN ('CREATED', 'RETRY_SCHEDULED') AND d.eligible
      AND (SELECT gate.closed FROM gate) = ''
    ORDER BY td.id
    LIMIT @max_rows::integer
    -- FOR SHARE of the device: a concurrent status change waits for this claim (and then
    -- cancels what it sent), or this claim waits for it and sees the device's new status.
    FOR UPDATE OF td SKIP LOCKED
    FOR SHARE OF d
), sent AS (
    -- The picked rows are this transaction's (locked above): the hand-out, which reads
    -- them afresh, finds them as picked. ARRAY(…) is computed before the hand-out runs.
    SELECT h.id, h.task_id, h.device_id, h.slot, h.attempt, h.max_attempts, h.sent_at, h.timeout_at
    FROM device_attempts_hand_out(ARRAY(SELECT pick.id FROM pick)) h
), claimed AS (
    SELECT sent.id, sent.task_id, sent.slot, sent.attempt, sent.max_attempts, sent.sent_at, sent.timeout_at,
           d.serial, t.payload
    FROM sent JOIN devices d ON d.id = sent.device_id JOIN tasks t ON t.id = sent.task_id
)
SELECT pc.id AS pc_id, COALESCE(c.id, 0)::bigint AS id, COALESCE(c.task_id, 0)::bigint AS task_id,
       COALESCE(c.slot, 0)::integer AS slot, COALESCE(c.attempt, 0)::integer AS attempt,
       COALESCE(c.max_attempts, 0)::integer AS max_attempts, c.sent_at, c.timeout_at,
       COALESCE(c.serial, '')::text AS device_serial, COALESCE(c.payload, 'null'::jsonb) AS payload,
       (SELECT gate.closed FROM gate)::text AS closed_gate
FROM pc LEFT JOIN claimed c ON true
ORDER BY c.id;

-- name: DeviceRateRoom :one
-- How many more executions the task's rate lets be sent now (NULL: no rate); the caller
-- holds the task's row (LockDeviceTask), so concurrent claims count one after the other.
SELECT coalesce(device_rate_room(@task_id::bigint), 2147483647)::bigint AS room;

-- name: SetDeviceTaskWindow :exec
UPDATE tasks SET window_start = @window_start, window_end = @window_end WHERE id = @id;

-- name: DeviceTaskGates :one
-- The gates of a running task's sends now, for its view: the global freeze, its windows
-- (the span's start, when it is ahead) and its rate's room.
SELECT (freeze_in_force(NULL) IS NOT NULL)::boolean AS frozen,
       t.window_start, t.window_end, now()::timestamptz AS now,
       (t.rate IS NOT NULL)::boolean AS rated,
       coalesce(device_rate_room(t.id), 0)::bigint AS rate_room,
       coalesce(rollout_rate(t.rate, (SELECT count(*) FROM task_devices x WHERE x.task_id = t.id AND x.status = 'SUCCEEDED')), 0)::bigint AS rate
FROM tasks t WHERE t.id = @id;

-- name: DeviceExecutionPCID :one
SELECT pc_id FROM task_devices WHERE id = @id;

-- name: LockDeviceExecution :one
SELECT * FROM task_devices WHERE id = @id FOR UPDATE;

-- name: AckDeviceExecution :exec
UPDATE task_devices SET status = 'ACKED', acked_at = now() WHERE id = @id;

-- name: SucceedDeviceExecution :exec
-- The success of the attempt in flight, with its event (device_attempts_succeed,
-- migrations/00092_device_steps.sql), as the group commit records it.
SELECT count(*) FROM device_attempts_succeed(ARRAY[@id::bigint]);

-- name: RetryDeviceExecution :exec
UPDATE task_devices
SET status = 'RETRY_SCHEDULED', attempt = attempt + 1, error = @error, acked_at = NULL, timeout_at = NULL
WHERE id = @id;

-- name: FailFinalDeviceExecution :exec
UPDATE task_devices SET status = 'FAILED_FINAL', completed_at = clock_timestamp(), error = @error WHERE id = @id;

-- name: InsertDeviceExecutionEvent :exec
INSERT INTO task_device_events (task_device_id, attempt, type, detail)
VALUES (@task_device_id, @attempt, @type, @detail);

-- name: CancelDeviceExecutionsOfTask :many
-- Cancels the task's slot-holding executions (a task cancel), or with unsent_only those not
-- out on a device (an abort: executions in flight may finish), with a CANCELED event each
-- (device_executions_cancel, migrations/00092_device_steps.sql).
SELECT c.id, c.pc_id
FROM device_executions_cancel(
         ARRAY(SELECT td.id FROM task_devices td WHERE td.task_id = @task_id::bigint AND td.holds_slot),
         @reason::text, @unsent_only::boolean) c
ORDER BY c.id;

-- name: GetDeviceExecutionView :one
SELECT td.id, td.task_id, td.device_id, td.pc_id, td.slot, td.status, td.attempt, td.max_attempts, td.error,
       td.created_at, td.sent_at, td.acked_at, td.completed_at, td.timeout_at,
       d.serial AS device_serial, p.name AS pc_name
FROM task_devices td JOIN devices d ON d.id = td.device_id JOIN pcs p ON p.id = td.pc_id
WHERE td.id = @id;

-- name: ListDeviceExecutionsOfTask :many
SELECT td.id, td.task_id, td.device_id, td.pc_id, td.slot, td.status, td.attempt, td.max_attempts, td.error,
       td.created_at, td.sent_at, td.acked_at, td.completed_at, td.timeout_at,
       d.serial AS device_serial, p.name AS pc_name
FROM task_devices td JOIN devices d ON d.id = td.device_id JOIN pcs p ON p.id = td.pc_id
WHERE td.task_id = @task_id AND td.id > @after_id
ORDER BY td.id
LIMIT @max_rows;

-- name: ListDeviceExecutionEvents :many
SELECT * FROM task_device_events WHERE task_device_id = @task_device_id ORDER BY id;

-- name: CountActiveOfTaskOnPC :one
SELECT device_pc_share_left(@pc_id::bigint, @task_id::bigint)::bigint;
