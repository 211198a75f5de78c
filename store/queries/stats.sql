-- Statistics computed in PostgreSQL over a window of ticks (GET /stats/overview,
-- GET /schedules/{name}/stats; docs/console.md). A run belongs to the window of its tick
-- (scheduled_at); schedule_runs_by_tick finds the window's pages.

-- name: RunStatsByBucket :many
-- The runs of one schedule (schedule_id > 0) or of all, whose tick lies in [since, until),
-- counted per bucket of bucket_s seconds and over the whole window (the row with whole set;
-- its bucket is since). Quantiles are 0 where lateness_samples is 0. Lateness is fired_at - scheduled_at of scheduled and catch-up fires: a manual
-- fire has no tick to be late for and a backfill fills the past on purpose.
WITH runs AS (
    SELECT date_bin(make_interval(secs => @bucket_s::float8), scheduled_at, @since::timestamptz) AS bucket, status,
           fired_at IS NOT NULL AS fired,
           CASE WHEN fired_at IS NOT NULL AND trigger IN ('scheduled', 'catchup')
                THEN extract(epoch FROM fired_at - scheduled_at)::float8 END AS lateness_s
    FROM schedule_runs
    WHERE NOT armed AND retracted_at IS NULL AND scheduled_at >= @since::timestamptz AND scheduled_at < @until::timestamptz
      AND (@schedule_id::bigint = 0 OR schedule_id = @schedule_id::bigint)
)
SELECT (GROUPING(bucket) = 1)::boolean AS whole, COALESCE(bucket, @since::timestamptz)::timestamptz AS bucket,
       count(*)                                            AS ticks,
       count(*) FILTER (WHERE fired)                       AS fired,
       count(*) FILTER (WHERE lateness_s > @late_s::float8) AS late,
       count(*) FILTER (WHERE status = 'MISSED')           AS missed,
       count(*) FILTER (WHERE status = 'SKIPPED')          AS skipped,
       count(*) FILTER (WHERE status = 'FAILED')           AS failed,
       count(*) FILTER (WHERE status = 'RUNNING')          AS running,
       count(*) FILTER (WHERE status = 'BUFFERED')         AS buffered,
       count(lateness_s)                                   AS lateness_samples,
       COALESCE(percentile_cont(0.5) WITHIN GROUP (ORDER BY lateness_s), 0)::float8  AS p50_s,
       COALESCE(percentile_cont(0.9) WITHIN GROUP (ORDER BY lateness_s), 0)::float8  AS p90_s,
       COALESCE(percentile_cont(0.99) WITHIN GROUP (ORDER BY lateness_s), 0)::float8 AS p99_s,
       COALESCE(max(lateness_s), 0)::float8               AS max_s
FROM runs
GROUP BY GROUPING SETS ((bucket), ())
ORDER BY 1 DESC, 2;

-- name: ScheduleStateCounts :one
SELECT count(*) AS total, count(*) FILTER (WHERE paused AND completed_at IS NULL) AS paused,
       count(*) FILTER (WHERE completed_at IS NOT NULL) AS completed FROM schedules;

-- name: RolloutsInFlight :many
-- Rollouts with a task still active (derived status RUNNING or PAUSED), newest first.
SELECT * FROM rollout_summaries WHERE status IN ('RUNNING', 'PAUSED') ORDER BY id DESC LIMIT @max_rows;

-- name: CountRolloutsInFlight :one
SELECT count(*) FROM rollout_summaries WHERE status IN ('RUNNING', 'PAUSED');

-- name: ActiveDeviceTask :many
-- The active device task (D1: at most one), or no row.
SELECT * FROM tasks WHERE status = 'running';
