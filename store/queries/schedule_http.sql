-- The HTTP action (docs/schedules.md "HTTP action"; migrations/00094_http_action.sql): signing
-- secrets, delivery attempts, the dead letter and redrives.

-- name: ScheduleSecret :one
-- The signing secret of a schedule's http action.
SELECT k.secret FROM schedule_secrets k JOIN schedules s ON s.name = k.schedule_name WHERE s.id = @schedule_id;

-- name: SetScheduleSecret :exec
-- The first signing secret of a schedule that became an http one (or a new one, the old
-- one ending at once).
INSERT INTO schedule_secrets (schedule_name, secret) VALUES (@schedule_name, @secret)
ON CONFLICT (schedule_name) DO UPDATE SET secret = EXCLUDED.secret, rotated_at = now(), previous_secret = NULL, previous_valid_until = NULL;

-- name: RotateScheduleSecret :one
-- A rotation: the new secret signs from now on; with a grace period the old one signs too
-- until previous_valid_until (no grace ends it at once).
UPDATE schedule_secrets
SET previous_secret = CASE WHEN sqlc.narg(previous_valid_until)::timestamptz IS NOT NULL THEN secret END,
    previous_valid_until = sqlc.narg(previous_valid_until)::timestamptz,
    secret = sqlc.arg(new_secret)::text,
    rotated_at = now()
WHERE schedule_name = sqlc.arg(schedule_name)::text
RETURNING rotated_at;

-- name: ScheduleHeaderValues :one
-- The values of an http action's own headers (for an update that keeps some of them).
SELECT header_values FROM schedule_header_values WHERE schedule_name = @schedule_name;

-- name: SetScheduleHeaderValues :exec
INSERT INTO schedule_header_values (schedule_name, header_values) VALUES (@schedule_name, @header_values)
ON CONFLICT (schedule_name) DO UPDATE SET header_values = EXCLUDED.header_values, updated_at = now();

-- name: DeleteScheduleHeaderValues :exec
DELETE FROM schedule_header_values WHERE schedule_name = @schedule_name;

-- name: HTTPDeliveryOf :one
-- What a delivery of a run sends, read by the run's id alone and never taken from a
-- workflow's input: the run's tick key and series, its schedule's action and retry policy,
-- the secrets that sign (the previous one while its grace lasts; '' for none) and the
-- header values.
-- With it, what the attempts so far say: whether a 2xx was recorded for the run's key (then
-- nothing is sent again), and the first attempts of its current series that the worker which
-- released it sent (direct): how many, when the first began, and the last one's outcome,
-- answer, end and Retry-After.
SELECT r.id AS run_id, r.schedule_id, r.workflow_id, r.idempotency_key, r.scheduled_at, r.redrives, r.status,
       s.name AS schedule_name, s.action, s.retry,
       COALESCE(k.secret, '')::text AS secret,
       COALESCE(CASE WHEN k.previous_valid_until > now() THEN k.previous_secret END, '')::text AS previous_secret,
       COALESCE(h.header_values, '{}'::jsonb)::jsonb AS header_values,
       EXISTS (SELECT 1 FROM schedule_run_attempts a WHERE a.run_id = r.id AND a.outcome = 'succeeded') AS delivered,
       (SELECT count(*) FROM schedule_run_attempts a WHERE a.run_id = r.id AND a.workflow_id = r.workflow_id AND a.direct)::int AS direct_attempts,
       -- (a zero time, 0001-01-01, and '' stand for none)
       COALESCE(d.started_at, '0001-01-01 00:00:00+00'::timestamptz)::timestamptz AS direct_began,
       COALESCE(d.finished_at, '0001-01-01 00:00:00+00'::timestamptz)::timestamptz AS direct_finished,
       COALESCE(d.outcome, '')::text AS direct_outcome, COALESCE(d.status_code, 0)::int AS direct_status,
       COALESCE(d.error, '')::text AS direct_error, COALESCE(d.response_start, '')::text AS direct_response,
       COALESCE(d.retry_after_ms, 0)::bigint AS direct_retry_after_ms
FROM schedule_runs r
JOIN schedules s ON s.id = r.schedule_id
LEFT JOIN schedule_secrets k ON k.schedule_name = s.name
LEFT JOIN schedule_header_values h ON h.schedule_name = s.name
LEFT JOIN LATERAL (SELECT a.* FROM schedule_run_attempts a WHERE a.run_id = r.id AND a.workflow_id = r.workflow_id AND a.direct
                   ORDER BY a.attempt DESC LIMIT 1) d ON true
WHERE r.id = @run_id;

-- name: GetScheduleRunByID :one
SELECT * FROM schedule_runs WHERE id = @id;

-- name: RecordRunAttempt :execrows
-- One delivery attempt's answer, once: it completes the attempt recorded as being sent (or
-- lost meanwhile); the same (run, series, attempt) answered again changes nothing.
INSERT INTO schedule_run_attempts (run_id, workflow_id, attempt, redrive, started_at, latency_ms, status_code, outcome, error,
                                   response_start, retry_after_ms, finished_at)
VALUES (@run_id, @workflow_id, @attempt, @redrive, @started_at, @latency_ms, sqlc.narg(status_code), @outcome, @error,
        @response_start, sqlc.narg(retry_after_ms), @finished_at)
ON CONFLICT (run_id, workflow_id, attempt) DO UPDATE
SET latency_ms = EXCLUDED.latency_ms, status_code = EXCLUDED.status_code, outcome = EXCLUDED.outcome, error = EXCLUDED.error,
    response_start = EXCLUDED.response_start, retry_after_ms = EXCLUDED.retry_after_ms, finished_at = EXCLUDED.finished_at
WHERE schedule_run_attempts.outcome IN ('sending', 'lost');

-- name: StartRunAttempt :exec
-- A delivery attempt, recorded as being sent before it is. Attempts of the series before it
-- still recorded as being sent were lost: the worker sending them stopped before their
-- answer was recorded.
WITH lost AS (
    UPDATE schedule_run_attempts
    SET outcome = 'lost', finished_at = now(),
        error = 'the worker sending it stopped before its answer was recorded (the request may have reached the receiver, which dedupes on webhook-id)'
    WHERE run_id = @run_id AND workflow_id = @workflow_id AND attempt < @attempt AND outcome = 'sending'
)
INSERT INTO schedule_run_attempts (run_id, workflow_id, attempt, redrive, started_at, latency_ms, outcome)
VALUES (@run_id, @workflow_id, @attempt, @redrive, @started_at, 0, 'sending')
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
INSERT INTO schedule_run_redrives (run_id, n, workflow_id, previous_workflow_id, previous_error, failed_at, job_id)
VALUES (@run_id, @n, @workflow_id, @previous_workflow_id, @previous_error, @failed_at, sqlc.narg(job_id));

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
-- (An http fire queued for its first attempt has no delayed start: its retraction alone keeps
-- it from being sent.)
SELECT workflow_id FROM schedule_runs r
WHERE schedule_id = @schedule_id AND armed AND workflow_id <> '' AND visible_at > now() AND visible_at > release_frontier()
  AND NOT EXISTS (SELECT 1 FROM http_first_attempts q WHERE q.run_id = r.id);
