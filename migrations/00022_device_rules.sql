-- +goose Up
-- Device rules written once (docs/devices.md, "Where each rule lives"): every statement
-- that gives a task a device, or hands an attempt to an agent, reads the rule from these
-- functions instead of spelling it out. LANGUAGE sql, STABLE, one SELECT: the planner inlines them into the
-- calling statement (when their arguments are plain values or columns), so they cost
-- nothing over the spelled-out predicate.

-- The devices task for_task may still run on: in the eligible set, and without an execution of the
-- task that counts (a cancelled one does not: the task runs once per device).
CREATE FUNCTION devices_unrun_by(for_task bigint) RETURNS SETOF devices
LANGUAGE sql STABLE AS $$
    SELECT d.* FROM devices d
    WHERE d.eligible
      AND NOT EXISTS (SELECT 1 FROM task_devices x
                      WHERE x.task_id = for_task AND x.device_id = d.id AND x.status <> 'CANCELLED')
$$;

-- The devices of PC of_pc a free slot may give task for_task: those it may still run on that run
-- nothing else now (a device runs one command at a time).
CREATE FUNCTION devices_free_for(of_pc bigint, for_task bigint) RETURNS SETOF devices
LANGUAGE sql STABLE AS $$
    SELECT d.* FROM devices_unrun_by(for_task) d
    WHERE d.pc_id = of_pc
      AND NOT EXISTS (SELECT 1 FROM task_devices y WHERE y.device_id = d.id AND y.holds_slot)
$$;

-- D3: the deadline of an attempt sent at sent by a task whose device timeout is
-- timeout_ms (the configuration's when the task became active). Every statement that hands
-- an attempt to an agent stamps timeout_at with it; the slot's timer
-- (workflows/slot_deadline.go) times the attempt out there.
CREATE FUNCTION attempt_deadline(sent timestamptz, timeout_ms bigint) RETURNS timestamptz
LANGUAGE sql IMMUTABLE AS $$
    SELECT sent + timeout_ms * interval '1 millisecond'
$$;

-- +goose Down
DROP FUNCTION attempt_deadline(timestamptz, bigint);
DROP FUNCTION devices_free_for(bigint, bigint);
DROP FUNCTION devices_unrun_by(bigint);
