-- Bulk redrives of dead-lettered runs (migrations/00172_redrive_jobs.sql).

-- name: CreateRedriveJob :one
-- A bulk redrive begins: the dead letter's runs in its range that its selector reaches, up
-- to the newest run now, are what it matches.
WITH up_to AS (SELECT COALESCE(max(id), 0)::bigint AS id FROM schedule_runs)
INSERT INTO run_redrive_jobs (selector, since, until, requested_by, up_to_run_id, matched)
SELECT @selector, @since, @until, @requested_by, up_to.id,
       (SELECT count(*) FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id
        WHERE r.status = 'FAILED' AND r.workflow_id <> '' AND r.scheduled_at >= @since AND r.scheduled_at < @until AND r.id <= up_to.id
          AND s.labels @> @labels_match::jsonb AND NOT (s.labels @> ANY(@labels_exclude::jsonb[])))::int
FROM up_to
RETURNING *;

-- name: LockRedriveJob :one
-- A page of a bulk redrive holds its job: pages of one job follow each other.
SELECT * FROM run_redrive_jobs WHERE id = @id FOR UPDATE;

-- name: NextRedriveCandidates :many
-- The job's next page: dead-lettered runs in its range, of schedules its selector reaches,
-- after its cursor, in id order.
SELECT r.id FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id
WHERE r.status = 'FAILED' AND r.workflow_id <> '' AND r.scheduled_at >= @since AND r.scheduled_at < @until
  AND r.id > @after_id AND r.id <= @up_to_run_id
  AND s.labels @> @labels_match::jsonb AND NOT (s.labels @> ANY(@labels_exclude::jsonb[]))
ORDER BY r.id
LIMIT @max_rows;

-- name: CountRedriveRemaining :one
-- What the job has left: its dead-lettered runs after its cursor.
SELECT count(*)::int FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id
WHERE r.status = 'FAILED' AND r.workflow_id <> '' AND r.scheduled_at >= @since AND r.scheduled_at < @until
  AND r.id > @after_id AND r.id <= @up_to_run_id
  AND s.labels @> @labels_match::jsonb AND NOT (s.labels @> ANY(@labels_exclude::jsonb[]));

-- name: AdvanceRedriveJob :one
UPDATE run_redrive_jobs
SET cursor = GREATEST(cursor, @cursor), redriven = redriven + @redriven, skipped = skipped + @skipped,
    finished_at = CASE WHEN @done::boolean THEN COALESCE(finished_at, now()) END
WHERE id = @id
RETURNING *;
