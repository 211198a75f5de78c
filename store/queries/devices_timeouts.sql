-- Device timeouts (D3; store/devices_timeouts.go): the attempts in flight whose deadline
-- passed, and the earliest deadline a PC's timer sleeps until. An attempt is in flight while
-- it is SENT or ACKED; its deadline (timeout_at) was stamped when it was handed out
-- (attempt_handed_out, migrations/00155_device_deadline.sql).

-- name: OverdueOnPC :many
-- A PC's timer (docs/devices.md, "How it runs on Temporal"): the attempts in flight on the
-- PC whose deadline is not after as_of, to time out, earliest first.
SELECT td.id, td.attempt
FROM task_devices td JOIN pcs p ON p.id = td.pc_id
WHERE p.name = @pc_name AND td.holds_slot AND td.status IN ('SENT', 'ACKED')
  AND td.timeout_at <= @as_of::timestamptz
ORDER BY td.timeout_at, td.id;

-- name: EarliestDeadlineOnPC :one
-- The earliest deadline in flight on a PC, for its timer (null: nothing in flight; no row:
-- no such PC).
SELECT p.id, d.timeout_at AS deadline
FROM pcs p LEFT JOIN LATERAL (
    SELECT td.timeout_at FROM task_devices td
    WHERE td.pc_id = p.id AND td.holds_slot AND td.status IN ('SENT', 'ACKED')
    ORDER BY td.timeout_at LIMIT 1) d ON true
WHERE p.name = @pc_name;

-- name: OverdueInFlight :many
-- Safety net for a PC timer never told: in-flight executions past deadline + grace, read
-- among the slot holders (a partial index), not every execution ever made.
SELECT id, attempt FROM task_devices
WHERE holds_slot AND status IN ('SENT', 'ACKED') AND timeout_at < @before::timestamptz
ORDER BY timeout_at
LIMIT 200;
