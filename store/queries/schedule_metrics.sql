-- Per-schedule Prometheus series for the schedules that ask for them (schedules.metrics;
-- metrics/schedules.go, docs/console.md#prometheus).

-- name: SetScheduleMetrics :one
-- Opts a schedule in or out. Opting in when max_schedules others already are changes
-- nothing and returns no row (so does an unknown name: the caller tells them apart).
UPDATE schedules s SET metrics = @metrics::boolean
WHERE s.name = @name::text
  AND (NOT @metrics::boolean OR s.metrics OR (SELECT count(*) FROM schedules o WHERE o.metrics) < @max_schedules::bigint)
RETURNING s.metrics;

-- name: CountSchedulesWithMetrics :one
SELECT count(*) FROM schedules WHERE metrics;

-- name: ScheduleSeriesCounts :many
-- The counters of the first max_rows opted-in schedules by name: fired, skipped and missed
-- as the schedule's workflow counts them, failed from the runs (schedule_runs_problems).
SELECT s.name, s.fired_count, s.skipped_count, s.missed_count,
       (SELECT count(*) FROM schedule_runs f WHERE f.schedule_id = s.id AND f.status = 'FAILED')::bigint AS failed_count
FROM schedules s
WHERE s.metrics
ORDER BY s.name
LIMIT @max_rows;

-- name: ScheduleSeriesLateness :many
-- The lateness of each of those schedules' last per_schedule scheduled and catch-up fires,
-- counted per histogram bucket: bucket is the number of bounds (ascending, in seconds) the
-- value exceeds, so 0 is "at most the first bound" and len(bounds) "above the last".
SELECT s.name, b.bucket::int AS bucket, count(*) AS n, COALESCE(sum(GREATEST(l.v, 0)), 0)::float8 AS sum_s
FROM (SELECT id, name FROM schedules WHERE metrics ORDER BY name LIMIT @max_rows) s
CROSS JOIN LATERAL (
    SELECT extract(epoch FROM r.fired_at - r.scheduled_at)::float8 AS v
    FROM schedule_runs r
    WHERE r.schedule_id = s.id AND NOT r.armed AND r.fired_at IS NOT NULL AND r.trigger IN ('scheduled', 'catchup')
    ORDER BY r.id DESC
    LIMIT @per_schedule
) l
CROSS JOIN LATERAL (SELECT count(*) AS bucket FROM unnest(@bounds::float8[]) AS u(le) WHERE l.v > u.le) b
GROUP BY s.name, b.bucket
ORDER BY s.name, b.bucket;
