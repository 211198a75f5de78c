-- Device dispatch (docs/devices.md): filling PCs' slots (D2), one task_device per free
-- slot. Every execution is created by device_slots_fill (migrations/00092_device_steps.sql),
-- which these statements call: which devices a slot may get, and how an execution is
-- created, are said there alone.

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
-- canceled (device_executions_cancel), so the PC's running count never exceeds its
-- shrunken target. Rows another transaction is finishing are skipped (it frees them itself).
WITH gone AS (
    SELECT td.id FROM task_devices td JOIN devices d ON d.id = td.device_id
    WHERE td.pc_id = @pc_id::bigint AND td.holds_slot AND NOT d.eligible
    FOR UPDATE OF td SKIP LOCKED
)
SELECT c.id FROM device_executions_cancel(ARRAY(SELECT gone.id FROM gone), 'device left the eligible set', false) c;

-- name: FillPCs :many
-- D2 in bulk (a task just became active, a PC's devices changed, the safety polls): each
-- PC's free slots (pc_free_slots: target - running of them) get the running task's next
-- executions (device_slots_fill), PCs in the order given. The caller holds those PCs'
-- locks (LockPC or LockAllPCs), so two bulk refills never count the same free slot, and
-- LockDeviceTask when the task has a target_count.
WITH free AS (
    SELECT p.id AS pc_id, s.slot, p.i
    FROM unnest(@pc_ids::bigint[]) WITH ORDINALITY AS p (id, i)
    CROSS JOIN LATERAL pc_free_slots(p.id) AS s (slot)
)
SELECT (f).execution_id::bigint AS id
FROM device_slots_fill(ARRAY(SELECT free.pc_id FROM free ORDER BY free.i, free.slot),
                       ARRAY(SELECT free.slot FROM free ORDER BY free.i, free.slot), NULL::boolean[]) f
WHERE (f).execution_id IS NOT NULL;

-- name: FillSlot :one
-- D2 on the result path: the slot a result just freed (in this transaction) gets the next
-- execution of the running task on the PC (0: none is left there). No PC lock: the slot's
-- number and the device are each unique among slot holders, so results freeing different
-- slots of one PC commit in parallel. The caller holds LockDeviceTask when the task has a
-- target_count.
SELECT coalesce((f).execution_id, 0)::bigint AS created
FROM device_slots_fill(ARRAY[@pc_id::bigint], ARRAY[@slot::integer], ARRAY[false]) f;
