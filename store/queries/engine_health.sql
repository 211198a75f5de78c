-- The figures the shipped alerts watch (deploy/observability, docs/operations.md#alerts),
-- read at scrape time by metrics.HealthCollector, through api: the same on every API replica.
-- Each is cheap at any size: an index's first entry, a partial index, or a small table.

-- name: EngineHealth :one
-- workers_alive: worker processes whose last beat is within the liveness grace (as
-- schedule_outages counts them alive). planner_lag_s: how long the oldest schedule at rest
-- whose plan_at has come has waited for a planner round (0: none waits). release_lag_s: how
-- long the oldest armed fire whose visible time has come has waited for its release (0: none
-- waits). dead_letter: the FAILED runs of http and workflow actions (the dead letter, along
-- schedule_runs_dead_letter). device_timeouts: device attempts that timed out, ever (rows of
-- task_device_events are never deleted; along task_device_events_timeouts).
SELECT
    (SELECT count(*) FROM worker_liveness
     WHERE beat_at >= now() - make_interval(secs => @grace_seconds::float8))::bigint AS workers_alive,
    COALESCE((SELECT extract(epoch FROM now() - min(plan_at)) FROM schedules
              WHERE owner IS NULL AND plan_at IS NOT NULL AND plan_at <= now()), 0)::float8 AS planner_lag_s,
    COALESCE((SELECT extract(epoch FROM now() - min(visible_at)) FROM schedule_runs
              WHERE armed AND visible_at > release_frontier() AND visible_at <= now()), 0)::float8 AS release_lag_s,
    (SELECT count(*) FROM schedule_runs WHERE status = 'FAILED' AND workflow_id <> '')::bigint AS dead_letter,
    (SELECT count(*) FROM task_device_events WHERE type = 'TIMEOUT')::bigint AS device_timeouts;

-- name: DeviceStatusCounts :many
SELECT status::text AS status, count(*) AS n FROM devices GROUP BY status ORDER BY status;

-- name: PausedRolloutCauses :many
-- The paused rollouts by why: "health" when their open wave's health checks failed, "tasks"
-- when its tasks did (store.FailWave, AdvanceWave), "other" for an operator's pause or an
-- abort threshold.
SELECT CASE WHEN w.status = 'FAILED' THEN w.failure ELSE 'other' END::text AS cause, count(*) AS n
FROM rollouts r
LEFT JOIN rollout_waves w ON w.rollout_id = r.id AND w.wave = r.open_wave
WHERE r.status = 'PAUSED'
GROUP BY 1 ORDER BY 1;
