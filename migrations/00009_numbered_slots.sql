-- +goose Up
-- Numbered slots (issue 13): each execution holding one of its PC's slots holds a numbered
-- one, 1..device_capacity, and a unique index keeps two executions out of one slot. D2's
-- "at most capacity per PC" is then a constraint of the table instead of a lock every
-- refill takes: a result frees its slot and refills that same slot in its own transaction,
-- so results for different slots of one PC commit in parallel. The slot also names the
-- durable timer that watches it (the slot workflow slot/<pc>/<n>).
ALTER TABLE task_devices ADD COLUMN slot integer CHECK (slot >= 1);

-- Executions holding a slot today get slots 1, 2, … per PC, in id order.
UPDATE task_devices td SET slot = n.slot
FROM (SELECT id, row_number() OVER (PARTITION BY pc_id ORDER BY id) AS slot
      FROM task_devices WHERE holds_slot) n
WHERE td.id = n.id;

-- Every execution holding a slot has its number (final ones keep the slot they ran in).
ALTER TABLE task_devices ADD CONSTRAINT task_devices_slot CHECK (slot IS NOT NULL OR NOT holds_slot);
-- One execution per slot.
CREATE UNIQUE INDEX task_devices_pc_slot ON task_devices (pc_id, slot) WHERE holds_slot;

-- +goose Down
DROP INDEX task_devices_pc_slot;
ALTER TABLE task_devices DROP CONSTRAINT task_devices_slot;
ALTER TABLE task_devices DROP COLUMN slot;
