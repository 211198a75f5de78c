-- +goose Up
-- Schedules at rest (issue 26). A schedule's workflow exists only while it has work in
-- flight or its next fire is near; between, the schedule rests in this row and the planner
-- (SchedulePlannerWorkflow, docs/schedules.md "How it runs") arms its fires in batches or
-- wakes its workflow before the fire. The row says who holds the schedule's runtime state —
-- one writer at a time:
--   owner NULL       at rest: the planner's, under the row lock it takes to arm or wake it;
--   owner = run id   the schedule's workflow run that took it (TakeScheduleOwnership);
--   owner 'legacy'   a workflow of the release before the planner may still run: the
--                    planner terminates it and takes the schedule over from this row.
-- A workflow rests by asking (rest_requested_at) and ending; the planner completes the
-- handover once Temporal says that run has closed, so a command that reached the run while
-- it was ending is never lost behind the planner's back.
ALTER TABLE schedules
    ADD COLUMN owner text,
    -- the newest nominal tick dealt with: fired, armed, skipped or missed (NULL: none yet;
    -- ticks count from created_at, or from the resume)
    ADD COLUMN watermark timestamptz,
    -- when the planner next looks at the schedule at rest, and what it does then: 'arm'
    -- its fires, or 'wake' its workflow (NULL: nothing to do — paused, or no further tick)
    ADD COLUMN plan_at timestamptz,
    ADD COLUMN plan_action text CHECK (plan_action IN ('arm', 'wake')),
    -- state the workflow kept between runs: the newest run that succeeded (skip_if_successful)
    -- and a pending reschedule
    ADD COLUMN last_success_at timestamptz,
    ADD COLUMN rescheduled_to timestamptz,
    ADD COLUMN rest_requested_at timestamptz,
    -- when the planner last asked Temporal whether the owner still runs
    ADD COLUMN owner_checked_at timestamptz,
    ADD CONSTRAINT schedules_plan CHECK ((plan_at IS NULL) = (plan_action IS NULL)),
    ADD CONSTRAINT schedules_rest_request CHECK (rest_requested_at IS NULL OR owner IS NOT NULL);

-- Every schedule of the release before is held by its old workflow until the planner takes it.
UPDATE schedules SET owner = 'legacy';

-- The planner's round: schedules at rest due for a look, earliest first.
CREATE INDEX schedules_to_plan ON schedules (plan_at) WHERE owner IS NULL AND plan_at IS NOT NULL;
-- Rests to complete, and owners whose fire is overdue (a workflow that ended without resting).
CREATE INDEX schedules_resting ON schedules (rest_requested_at) WHERE rest_requested_at IS NOT NULL;
CREATE INDEX schedules_owned_due ON schedules (next_run_at) WHERE owner IS NOT NULL;

-- +goose StatementBegin
-- The one rule of a tick handled late (S2), for every path that handles one: the schedule
-- workflow judging its due ticks, and the release of armed fires (event fires, and workflow
-- fires whose target Temporal started by its start delay). A fire happens at
-- COALESCE(started_at, judged_at): within on_time of its time it is on time; later, it fires
-- late ('fired') unless an outage — a span with no worker alive, schedule_outages — lies
-- between its time and judged_at; after an outage it is a 'catchup' fire inside the
-- catch-up window and 'missed' beyond it. A workflow fire whose target already began
-- (its own workers picked it up) ran: beyond the window it is a catch-up run, saying so.
-- fired_at is when it fired (NULL when missed). since (default: the fire's time) is where the
-- outage named in a MISSED reason may begin at the earliest: a workflow judging a round of
-- late ticks passes the oldest, so that they all name the one outage that made them late.
CREATE FUNCTION tick_fate(fire_at timestamptz, judged_at timestamptz, catchup_window_ms bigint, on_time interval,
                          grace interval, started_at timestamptz DEFAULT NULL, began boolean DEFAULT false,
                          since timestamptz DEFAULT NULL)
RETURNS TABLE (fate text, reason text, fired_at timestamptz)
LANGUAGE sql STABLE AS $$
    WITH f AS (
        SELECT COALESCE(started_at, judged_at) AS happened,
               judged_at - fire_at <= make_interval(secs => catchup_window_ms::float8 / 1000) AS within_window
    )
    SELECT CASE WHEN o.down_from IS NULL THEN 'fired'
                WHEN f.within_window OR began THEN 'catchup'
                ELSE 'missed' END,
           CASE WHEN o.down_from IS NULL OR f.within_window THEN ''
                WHEN began THEN 'started late, after an outage, by its own workers before tickgate came back; '
                                || 'beyond the catch-up window it would have been MISSED'
                ELSE schedule_missed_reason(o.down_from, o.down_until, catchup_window_ms) END,
           CASE WHEN o.down_from IS NOT NULL AND NOT f.within_window AND NOT began THEN NULL ELSE f.happened END
    FROM f
    LEFT JOIN LATERAL (
        -- only a fire that did not happen on time asks whether an outage made it late
        SELECT x.down_from, x.down_until FROM schedule_outages(LEAST(COALESCE(since, fire_at), fire_at), judged_at, grace) x
        WHERE f.happened - fire_at > on_time AND x.down_until > fire_at
        ORDER BY x.down_from LIMIT 1
    ) o ON true
$$;
-- +goose StatementEnd

DROP FUNCTION armed_fire_fate(timestamptz, timestamptz, bigint, interval, interval);

-- +goose Down
-- +goose StatementBegin
CREATE FUNCTION armed_fire_fate(visible_at timestamptz, released_at timestamptz, catchup_window_ms bigint,
                                on_time interval, grace interval)
RETURNS TABLE (fate text, reason text)
LANGUAGE sql STABLE AS $$
    SELECT t.fate, t.reason FROM tick_fate(visible_at, released_at, catchup_window_ms, on_time, grace) t
$$;
-- +goose StatementEnd
DROP FUNCTION tick_fate(timestamptz, timestamptz, bigint, interval, interval, timestamptz, boolean, timestamptz);
DROP INDEX schedules_owned_due;
DROP INDEX schedules_resting;
DROP INDEX schedules_to_plan;
ALTER TABLE schedules
    DROP CONSTRAINT schedules_rest_request, DROP CONSTRAINT schedules_plan,
    DROP COLUMN owner_checked_at, DROP COLUMN rest_requested_at, DROP COLUMN rescheduled_to, DROP COLUMN last_success_at,
    DROP COLUMN plan_action, DROP COLUMN plan_at, DROP COLUMN watermark, DROP COLUMN owner;
