-- Device dispatch (docs/devices.md): filling PCs' slots (D2), one task_device per free
-- slot, under the PC's lock. Which devices a slot may get is devices_free_for
-- (migrations/00022_device_rules.sql), read by every statement that gives a task a device;
-- eligible devices are devices.eligible and slot holders task_devices.holds_slot
-- (generated columns, migrations/00007).

-- name: LockPC :one
-- The per-PC lock every slot refill holds, so two refills never over-fill a PC (D2),
-- read with the running task (if any) in the same round trip. NO KEY UPDATE does not
-- block the foreign-key checks of task_devices inserts.
SELECT p.id, t.id AS running_task_id, t.target_count AS running_target_count
FROM pcs p LEFT JOIN tasks t ON t.status = 'running'
WHERE p.id = @id
FOR NO KEY UPDATE OF p;

-- name: LockAllPCs :many
-- Every PC's refill lock, in id order (the order any multi-PC lock takes them).
SELECT id FROM pcs ORDER BY id FOR NO KEY UPDATE;

-- name: CancelIneligibleOfPC :many
-- Executions holding a slot on a device that left the eligible set (offline, error) are
-- canceled, so the PC's running count never exceeds its shrunken target. Rows another
-- transaction is finishing are skipped (it frees them itself).
WITH c AS (
    SELECT td.id FROM task_devices td JOIN devices d ON d.id = td.device_id
    WHERE td.pc_id = @pc_id::bigint AND td.holds_slot AND NOT d.eligible
    FOR UPDATE OF td SKIP LOCKED
), upd AS (
    UPDATE task_devices td
    SET status = 'CANCELED', completed_at = now(), error = 'device left the eligible set'
    FROM c WHERE td.id = c.id
    RETURNING td.id, td.attempt
)
INSERT INTO task_device_events (task_device_id, attempt, type, detail)
SELECT upd.id, upd.attempt, 'CANCELED', 'device left the eligible set' FROM upd
RETURNING task_device_id;

-- name: RefillPC :many
-- D2: inserts at most target - running task_devices of the running task for this PC, one
-- per free slot and numbered with it, on the devices a slot may get (devices_free_for). The caller holds LockPC (and LockTask when the task has a target_count).
-- A result refilling its own slot does not take LockPC: a device it took meanwhile is a
-- conflict this insert skips (the next refill fills that slot).
WITH task AS (
    SELECT t.id, t.max_attempts, t.target_count FROM tasks t WHERE t.status = 'running'
), free AS (
    SELECT GREATEST(s.target - s.running, 0)::bigint AS n FROM pc_device_summary s WHERE s.pc_id = @pc_id::bigint
), quota AS (
    SELECT LEAST((SELECT n FROM free),
                 COALESCE(task.target_count - (SELECT count(*) FROM task_devices x
                                               WHERE x.task_id = task.id AND x.status <> 'CANCELED'),
                          2147483647))::bigint AS n
    FROM task
), slots AS (
    SELECT s.n AS slot, row_number() OVER (ORDER BY s.n) AS rn
    FROM pcs p CROSS JOIN LATERAL generate_series(1, p.device_capacity) AS s (n)
    WHERE p.id = @pc_id::bigint
      AND NOT EXISTS (SELECT 1 FROM task_devices y WHERE y.pc_id = p.id AND y.slot = s.n AND y.holds_slot)
), pick AS (
    SELECT c.id, row_number() OVER (ORDER BY c.id) AS rn
    FROM (SELECT f.id FROM task CROSS JOIN LATERAL devices_free_for(@pc_id::bigint, task.id) f
          ORDER BY f.id
          LIMIT COALESCE((SELECT GREATEST(n, 0) FROM quota), 0)) c
), ins AS (
    INSERT INTO task_devices (task_id, device_id, pc_id, max_attempts, slot)
    SELECT task.id, pick.id, @pc_id::bigint, task.max_attempts, slots.slot
    FROM pick JOIN slots ON slots.rn = pick.rn CROSS JOIN task
    ON CONFLICT DO NOTHING
    RETURNING id, attempt
), ev AS (
    INSERT INTO task_device_events (task_device_id, attempt, type)
    SELECT ins.id, ins.attempt, 'CREATED' FROM ins
)
SELECT ins.id FROM ins ORDER BY ins.id;

-- name: RefillSlot :one
-- D2 on the result path: the slot a result just freed (in this transaction) gets the next
-- execution of the running task, on a device of the PC a slot may get (devices_free_for). No PC lock: the slot's number and the device are each
-- unique among slot holders, so results freeing different slots of one PC commit in
-- parallel. The device is locked (SKIP LOCKED: another slot's refill is taking it);
-- picked without created means a concurrent refill took that device first, and the caller
-- tries again. The caller holds LockDeviceTask when the task has a target_count.
WITH task AS (
    SELECT t.id, t.max_attempts, t.target_count FROM tasks t WHERE t.status = 'running'
), quota AS (
    SELECT COALESCE(task.target_count - (SELECT count(*) FROM task_devices x
                                         WHERE x.task_id = task.id AND x.status <> 'CANCELED'),
                    1)::bigint AS n
    FROM task
), pick AS (
    SELECT d.id FROM devices d
    WHERE d.id IN (SELECT f.id FROM task CROSS JOIN LATERAL devices_free_for(@pc_id::bigint, task.id) f)
      AND COALESCE((SELECT n FROM quota), 0) > 0
    ORDER BY d.id
    LIMIT 1
    FOR NO KEY UPDATE OF d SKIP LOCKED
), ins AS (
    INSERT INTO task_devices (task_id, device_id, pc_id, max_attempts, slot)
    SELECT task.id, pick.id, @pc_id::bigint, task.max_attempts, @slot::integer FROM pick CROSS JOIN task
    ON CONFLICT DO NOTHING
    RETURNING id, attempt
), ev AS (
    INSERT INTO task_device_events (task_device_id, attempt, type)
    SELECT ins.id, ins.attempt, 'CREATED' FROM ins
)
SELECT COALESCE((SELECT id FROM pick), 0)::bigint AS picked, COALESCE((SELECT id FROM ins), 0)::bigint AS created;

-- name: RefillAllPCs :many
-- RefillPC for the given PCs in one statement (a task just became active): per PC at most
-- target - running new executions, each in a free numbered slot, on the devices a slot may
-- get (devices_free_for). The caller holds those PCs' locks (and LockDeviceTask with a target_count).
WITH task AS (
    SELECT t.id, t.max_attempts, t.target_count FROM tasks t WHERE t.status = 'running'
), free AS (
    SELECT s.pc_id, GREATEST(s.target - s.running, 0)::bigint AS n FROM pc_device_summary s
    WHERE s.pc_id = ANY (@pc_ids::bigint[])
), cand AS (
    SELECT f.id AS device_id, f.pc_id, row_number() OVER (PARTITION BY f.pc_id ORDER BY f.id) AS rn
    FROM pcs p CROSS JOIN task CROSS JOIN LATERAL devices_free_for(p.id, task.id) f
    WHERE p.id = ANY (@pc_ids::bigint[])
), slots AS (
    SELECT p.id AS pc_id, s.n AS slot, row_number() OVER (PARTITION BY p.id ORDER BY s.n) AS rn
    FROM pcs p CROSS JOIN LATERAL generate_series(1, p.device_capacity) AS s (n)
    WHERE p.id = ANY (@pc_ids::bigint[])
      AND NOT EXISTS (SELECT 1 FROM task_devices y WHERE y.pc_id = p.id AND y.slot = s.n AND y.holds_slot)
), pick AS (
    SELECT cand.device_id, cand.pc_id, slots.slot, row_number() OVER (ORDER BY cand.pc_id, cand.rn) AS g
    FROM cand JOIN free ON free.pc_id = cand.pc_id
    JOIN slots ON slots.pc_id = cand.pc_id AND slots.rn = cand.rn
    WHERE cand.rn <= free.n
), quota AS (
    SELECT COALESCE(task.target_count - (SELECT count(*) FROM task_devices x
                                         WHERE x.task_id = task.id AND x.status <> 'CANCELED'),
                    2147483647)::bigint AS n
    FROM task
), ins AS (
    INSERT INTO task_devices (task_id, device_id, pc_id, max_attempts, slot)
    SELECT task.id, pick.device_id, pick.pc_id, task.max_attempts, pick.slot
    FROM pick CROSS JOIN task
    WHERE pick.g <= (SELECT n FROM quota)
    ON CONFLICT DO NOTHING
    RETURNING id, attempt
), ev AS (
    INSERT INTO task_device_events (task_device_id, attempt, type)
    SELECT ins.id, ins.attempt, 'CREATED' FROM ins
)
SELECT ins.id FROM ins ORDER BY ins.id;
