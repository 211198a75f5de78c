-- name: PCSlotExecutions :many
-- The executions holding one of a PC's numbered slots (docs/devices.md), by slot: what the
-- console's slot grid draws.
SELECT td.id, td.task_id, td.device_id, td.pc_id, td.slot, td.status, td.attempt, td.max_attempts, td.error,
       td.created_at, td.sent_at, td.acked_at, td.completed_at, td.timeout_at,
       d.serial AS device_serial, p.name AS pc_name
FROM task_devices td JOIN devices d ON d.id = td.device_id JOIN pcs p ON p.id = td.pc_id
WHERE td.pc_id = @pc_id AND td.holds_slot
ORDER BY td.slot;
