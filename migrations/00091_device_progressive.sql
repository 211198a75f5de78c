-- +goose Up
-- Progressive delivery for device tasks (docs/progressive.md, issue 27): a task's rate and
-- windows bound when its executions are SENT (the claim, store/queries/devices_executions.sql);
-- the global freeze (migration 00090's freezes) stops every send. The slots (D2) and the
-- timeouts after SENT (D3) are unchanged: an execution held back waits CREATED in its slot.

-- rate: domain.Rate (per_minute, exponential), as for a rollout. windows: [domain.Window].
-- window_start and window_end: the span of the windows holding the database's clock, or the
-- next one to open ([start, end); NULL until the first claim computes it, then refreshed by
-- the claim once it has ended).
ALTER TABLE tasks
    ADD COLUMN rate         jsonb CHECK (rate IS NULL OR jsonb_typeof(rate) = 'object'),
    ADD COLUMN windows      jsonb CHECK (windows IS NULL OR jsonb_typeof(windows) = 'array'),
    ADD COLUMN window_start timestamptz,
    ADD COLUMN window_end   timestamptz,
    ADD CONSTRAINT tasks_window CHECK ((window_start IS NULL) = (window_end IS NULL) AND (window_end IS NULL OR window_end > window_start));

-- device_rate_room is how many more executions of task for_task its rate lets be SENT now:
-- the rate (rollout_rate, the rule rollouts use, with its SUCCEEDED executions) less the
-- sends (SENT events, retries included) of the last minute. NULL: the task has no rate.
-- +goose StatementBegin
CREATE FUNCTION device_rate_room(for_task bigint) RETURNS bigint
LANGUAGE sql STABLE
AS $$
SELECT rollout_rate(t.rate, (SELECT count(*) FROM task_devices x WHERE x.task_id = t.id AND x.status = 'SUCCEEDED'))
       - (SELECT count(*) FROM task_devices x JOIN task_device_events e ON e.task_device_id = x.id
          WHERE x.task_id = t.id AND e.type = 'SENT' AND e.created_at > now() - interval '1 minute')
FROM tasks t WHERE t.id = for_task AND t.rate IS NOT NULL
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION device_rate_room(bigint);
ALTER TABLE tasks
    DROP CONSTRAINT tasks_window,
    DROP COLUMN rate, DROP COLUMN windows, DROP COLUMN window_start, DROP COLUMN window_end;
