-- +goose Up
-- Armed workflow fires (issue 19): a workflow action's tick whose overlap decision cannot
-- change before it is started ahead with Temporal's start delay, and its run row is armed
-- like an event fire's (hidden until its release at the tick, status RUNNING).
--
-- A command that retracts such a fire before its tick (pause, update, reschedule, a trigger
-- under a policy the armed tick depended on) terminates the delayed start first, then keeps
-- the row as the record of the retraction: SKIPPED with the reason, retracted_at set, hidden
-- from the runs like an armed row, its idempotency key moved aside so that the tick can be
-- decided again. A tick fired again after a retraction starts its target under a workflow id
-- of its own (…~2, …~3), since the terminated one cannot be reused.
ALTER TABLE schedule_runs
    ADD COLUMN retracted_at timestamptz,
    ADD CONSTRAINT schedule_runs_retracted CHECK (retracted_at IS NULL OR (status = 'SKIPPED' AND NOT armed));

-- +goose StatementBegin
-- How an armed fire released at released_at fares (S2, the rule every tick obeys): 'fired'
-- when released on time, or late while a worker ran (busy, not down); after an outage,
-- 'catchup' inside the catch-up window and 'missed' beyond it, with the reason.
CREATE FUNCTION armed_fire_fate(visible_at timestamptz, released_at timestamptz, catchup_window_ms bigint,
                                on_time interval, grace interval)
RETURNS TABLE (fate text, reason text)
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN o.down_from IS NULL THEN 'fired'
                WHEN released_at - visible_at <= make_interval(secs => catchup_window_ms::float8 / 1000) THEN 'catchup'
                ELSE 'missed' END,
           CASE WHEN o.down_from IS NOT NULL AND released_at - visible_at > make_interval(secs => catchup_window_ms::float8 / 1000)
                THEN schedule_missed_reason(o.down_from, o.down_until, catchup_window_ms) ELSE '' END
    FROM (SELECT 1) one
    LEFT JOIN LATERAL (
        -- only a late release asks whether an outage made it late
        SELECT x.down_from, x.down_until FROM schedule_outages(visible_at, released_at, grace) x
        WHERE released_at - visible_at > on_time
        ORDER BY x.down_from LIMIT 1
    ) o ON true
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION armed_fire_fate(timestamptz, timestamptz, bigint, interval, interval);
DELETE FROM schedule_runs WHERE retracted_at IS NOT NULL;
ALTER TABLE schedule_runs DROP CONSTRAINT schedule_runs_retracted, DROP COLUMN retracted_at;
