-- +goose Up
-- The slot refill's device rule, written once (docs/devices.md, "Where each rule lives"):
-- every statement that gives a task a device reads it from these functions instead of
-- spelling it out. LANGUAGE sql, STABLE, one SELECT: the planner inlines them into the
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

-- +goose Down
DROP FUNCTION devices_free_for(bigint, bigint);
DROP FUNCTION devices_unrun_by(bigint);
