-- Legacy: the statement of the per-slot timers' check (store/devices_timeouts_legacy.go).
-- It goes with them.

-- name: SlotExecution :one
-- The execution holding a PC's numbered slot, for the legacy per-slot timer (ErrNoRows: the slot is empty).
SELECT td.id, td.status, td.attempt, td.sent_at, td.timeout_at
FROM task_devices td JOIN pcs p ON p.id = td.pc_id
WHERE p.name = @pc_name AND td.slot = @slot::integer AND td.holds_slot;
