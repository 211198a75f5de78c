-- The HTTP action (docs/schedules.md "HTTP action"; migrations/00094_http_action.sql): signing
-- secrets, delivery attempts, the dead letter and redrives.

-- name: ScheduleSecret :one
-- The signing secret of a schedule's http action, for the activity that signs a request.
SELECT k.secret FROM schedule_secrets k JOIN schedules s ON s.name = k.schedule_name WHERE s.id = @schedule_id;

-- name: SetScheduleSecret :exec
-- A new signing secret (a rotation, or the first of a schedule that became an http one).
INSERT INTO schedule_secrets (schedule_name, secret) VALUES (@schedule_name, @secret)
ON CONFLICT (schedule_name) DO UPDATE SET secret = EXCLUDED.secret, rotated_at = now();

-- name: GetScheduleRunByID :one
SELECT * FROM schedule_runs WHERE id = @id;

-- name: RecordRunAttempt :execrows
-- One delivery attempt, once: the same (run, series, attempt) recorded again changes nothing.
INSERT INTO schedule_run_attempts (run_id, workflow_id, attempt, redrive, started_at, latency_ms, status_code, outcome, error,
                                   response_start, retry_after_ms)
VALUES (@run_id, @workflow_id, @attempt, @redrive, @started_at, @latency_ms, sqlc.narg(status_code), @outcome, @error,
        @response_start, sqlc.narg(retry_after_ms))
ON CONFLICT (run_id, workflow_id, attempt) DO NOTHING;

-- name: ListRunAttempts :many
-- The attempts of the runs given, in the order they were made.
SELECT * FROM schedule_run_attempts WHERE run_id = ANY(@run_ids::bigint[]) ORDER BY run_id, started_at, attempt;

-- name: ListRunRedrives :many
SELECT * FROM schedule_run_redrives WHERE run_id = ANY(@run_ids::bigint[]) ORDER BY run_id, n;

-- name: LockScheduleRun :one
SELECT sqlc.embed(r), s.name AS schedule_name, s.action AS schedule_action
FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id
WHERE r.id = @id AND run_shown(r.armed, r.visible_at) AND r.retracted_at IS NULL
FOR NO KEY UPDATE OF r;

-- name: InsertRunRedrive :exec
INSERT INTO schedule_run_redrives (run_id, n, workflow_id, previous_workflow_id, previous_error, failed_at)
VALUES (@run_id, @n, @workflow_id, @previous_workflow_id, @previous_error, @failed_at);

-- name: MarkRunRedriven :one
-- A FAILED run delivered again: RUNNING under its new workflow id, with no watcher yet (the
-- watcher that leases it finds no such workflow and starts it).
UPDATE schedule_runs
SET status = 'RUNNING', error = '', finished_at = NULL, workflow_id = @workflow_id, redrives = redrives + 1, watched_until = NULL
WHERE id = @id AND status = 'FAILED'
RETURNING *;

-- name: ListDeadLetterRuns :many
-- The dead letter: FAILED runs of http and workflow actions (a redriven run is RUNNING, or
-- ended again), whose tick lies in [since, until), newest first, along schedule_runs_dead_letter.
SELECT sqlc.embed(r), s.name AS schedule_name
FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id
WHERE r.status = 'FAILED' AND r.workflow_id <> '' AND r.scheduled_at >= @since AND r.scheduled_at < @until
  AND (@before_id::bigint = 0 OR r.id < @before_id::bigint)
  AND (cardinality(@triggers::text[]) = 0 OR r.trigger = ANY(@triggers::text[]))
ORDER BY r.id DESC
LIMIT @max_rows;

-- name: ListArmedStartsNotDue :many
-- The delayed starts of a schedule's armed workflow and http fires whose time has not come:
-- what a command stops before its transaction retracts them (that transaction retracts only
-- fires still not due then, a subset of these).
SELECT workflow_id FROM schedule_runs
WHERE schedule_id = @schedule_id AND armed AND workflow_id <> '' AND visible_at > now() AND visible_at > release_frontier();
