-- The engines' figures a metrics scrape reads (metrics.SQLCollector, through api): the same on
-- every API replica.

-- name: RecentFireLateness :many
-- The lateness of the last max_rows scheduled and catch-up fires that are true (armed fires
-- count once settled), per histogram bucket: bucket is the number of bounds (ascending, in
-- seconds) the value exceeds. Read backwards along the primary key, not over every run.
SELECT b.bucket::int AS bucket, count(*) AS n, COALESCE(sum(GREATEST(l.v, 0)), 0)::float8 AS sum_s
FROM (
    SELECT extract(epoch FROM r.fired_at - r.scheduled_at)::float8 AS v
    FROM schedule_runs r
    WHERE r.fired_at IS NOT NULL AND NOT r.armed AND r.trigger IN ('scheduled', 'catchup')
    ORDER BY r.id DESC
    LIMIT @max_rows
) l
CROSS JOIN LATERAL (SELECT count(*) AS bucket FROM unnest(@bounds::float8[]) AS u(le) WHERE l.v > u.le) b
GROUP BY b.bucket
ORDER BY b.bucket;

-- name: RecentRefillLatency :many
-- For the last max_rows device executions, the time from their PC's last slot freed (within
-- five minutes before) to their creation, per histogram bucket as RecentFireLateness.
SELECT b.bucket::int AS bucket, count(*) AS n, COALESCE(sum(GREATEST(l.v, 0)), 0)::float8 AS sum_s
FROM (
    SELECT extract(epoch FROM td.created_at - f.freed)::float8 AS v
    FROM (SELECT id, pc_id, created_at FROM task_devices ORDER BY id DESC LIMIT @max_rows) td
    CROSS JOIN LATERAL (SELECT max(p.completed_at) AS freed FROM task_devices p
                        WHERE p.pc_id = td.pc_id AND p.id < td.id
                          AND p.completed_at <= td.created_at
                          AND p.completed_at > td.created_at - interval '5 minutes') f
    WHERE f.freed IS NOT NULL
) l
CROSS JOIN LATERAL (SELECT count(*) AS bucket FROM unnest(@bounds::float8[]) AS u(le) WHERE l.v > u.le) b
GROUP BY b.bucket
ORDER BY b.bucket;

-- name: ScheduleRunStatusCounts :many
-- Schedule runs that are true, by status: as the API shows them, without the records of
-- retracted armed fires (their ticks are decided again, and counted then).
SELECT status::text AS status, count(*) AS n FROM schedule_runs WHERE NOT armed AND retracted_at IS NULL GROUP BY status ORDER BY status;

-- name: TaskRunStatusCounts :many
SELECT status::text AS status, count(*) AS n FROM task_runs GROUP BY status ORDER BY status;

-- name: DeviceTaskStatusCounts :many
SELECT status::text AS status, count(*) AS n FROM tasks GROUP BY status ORDER BY status;

-- name: PCSlotCounts :many
-- Per PC, the slots in use and the slots it should keep busy.
SELECT pc_name::text AS pc_name, running::bigint AS running, target::bigint AS target FROM pc_device_summary ORDER BY pc_name;
