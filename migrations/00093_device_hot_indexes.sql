-- +goose Up
-- Every execution enters each index of task_devices once or twice (created, handed out,
-- finished), and an index whose entries all leave it again (the partial ones on slot
-- holders) fills with dead entries that later scans and uniqueness checks step over.
-- Two of them have nothing left to do:
--   - task_devices_pc_active (pc_id, id) WHERE holds_slot: task_devices_pc_slot (pc_id,
--     slot) WHERE holds_slot finds a PC's slot holders as well (at most its capacity; a
--     claim sorts them by id);
--   - task_devices_in_flight_deadline (timeout_at) WHERE status IN ('SENT', 'ACKED'): the
--     PC timers read their PC's attempts through its slot holders, and the dispatcher's
--     overdue sweep (OverdueInFlight), every 30 s, reads all slot holders.
DROP INDEX task_devices_pc_active;
DROP INDEX task_devices_in_flight_deadline;

-- +goose Down
CREATE INDEX task_devices_in_flight_deadline ON task_devices (timeout_at) WHERE status IN ('SENT', 'ACKED');
CREATE INDEX task_devices_pc_active ON task_devices (pc_id, id) WHERE holds_slot;
