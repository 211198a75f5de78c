-- First attempts of http fires, sent by the worker that released them (docs/schedules.md "How
-- an http fire is sent"; migrations/00170_http_first_attempts.sql).
--
-- A sender's rows are found by run id and then checked to be its own with `sender IS NOT
-- DISTINCT FROM`, never `sender =`: a strict `=` lets the planner take the partial index of
-- held rows (http_first_attempts_leased, which its statistics think nearly empty) and scan
-- every row the sender holds once per run given — a thousand runs recorded as being sent
-- took 800 ms of CPU in a 10,000-fire burst, against 8 ms by the primary key.

-- name: ClaimFirstAttempts :many
-- A sender takes up to @max_rows first attempts whose fires are released (their visible_at
-- within the release frontier) and still RUNNING, oldest first, skipping the rows another
-- sender holds or takes; it holds them until @lease_seconds from now, renewing the lease
-- while it does. In the same statement, what each sends (HTTPDeliveryOf's, for many runs):
-- the run's tick key, status and times, its schedule's action, retry policy, secrets and
-- header values.
WITH c AS (
    SELECT q.run_id FROM http_first_attempts q JOIN schedule_runs r ON r.id = q.run_id
    WHERE q.sender IS NULL AND q.visible_at <= release_frontier() AND r.status = 'RUNNING'
    ORDER BY q.visible_at, q.run_id
    LIMIT @max_rows
    FOR UPDATE OF q SKIP LOCKED
), claimed AS (
    UPDATE http_first_attempts q SET sender = sqlc.arg(sender)::text, lease_until = now() + make_interval(secs => @lease_seconds::float8)
    FROM c WHERE q.run_id = c.run_id
    RETURNING q.run_id
)
SELECT r.id AS run_id, r.schedule_id, r.workflow_id, r.idempotency_key, r.scheduled_at,
       COALESCE(r.visible_at, r.scheduled_at)::timestamptz AS visible_at, r.status, COALESCE(r.trace_context, '')::text AS trace_context,
       s.name AS schedule_name, s.action, s.retry,
       COALESCE(k.secret, '')::text AS secret,
       COALESCE(CASE WHEN k.previous_valid_until > now() THEN k.previous_secret END, '')::text AS previous_secret,
       COALESCE(h.header_values, '{}'::jsonb)::jsonb AS header_values
FROM claimed
JOIN schedule_runs r ON r.id = claimed.run_id
JOIN schedules s ON s.id = r.schedule_id
LEFT JOIN schedule_secrets k ON k.schedule_name = s.name
LEFT JOIN schedule_header_values h ON h.schedule_name = s.name;

-- name: NextFirstAttemptIn :one
-- How long until the next first attempt no sender holds comes due, by the database's clock
-- (+Inf: none queued).
SELECT COALESCE(EXTRACT(EPOCH FROM min(visible_at) - clock_timestamp())::float8, 'Infinity'::float8)::float8 AS seconds
FROM http_first_attempts WHERE sender IS NULL;

-- name: StartFirstAttempts :many
-- Records first attempts as being sent, before they are: only for the rows sqlc.arg(sender)::text still
-- holds, of runs still RUNNING (a run stopped or a row swept meanwhile is not sent). The
-- runs whose attempt was recorded are answered: those, and only those, are sent.
INSERT INTO schedule_run_attempts (run_id, workflow_id, attempt, redrive, started_at, latency_ms, outcome, direct)
SELECT q.run_id, r.workflow_id, 1, r.redrives, s.started_at, 0, 'sending', true
FROM (SELECT unnest(@run_ids::bigint[]) AS run_id, unnest(@started_at::timestamptz[]) AS started_at) s
JOIN http_first_attempts q ON q.run_id = s.run_id AND q.sender IS NOT DISTINCT FROM sqlc.arg(sender)::text
JOIN schedule_runs r ON r.id = q.run_id AND r.status = 'RUNNING'
ON CONFLICT (run_id, workflow_id, attempt) DO NOTHING
RETURNING run_id;

-- name: FinishFirstAttempts :exec
-- Records the answers of first attempts sent (or why none came). An attempt the sweep marked
-- lost meanwhile (its sender was slow, not dead) takes its true outcome: a 2xx recorded late
-- still stops every later attempt.
UPDATE schedule_run_attempts a
SET outcome = f.outcome, finished_at = f.finished_at, latency_ms = f.latency_ms, status_code = NULLIF(f.status_code, 0),
    error = f.error, response_start = f.response_start, retry_after_ms = NULLIF(f.retry_after_ms, 0)
FROM (SELECT unnest(@run_ids::bigint[]) AS run_id, unnest(@outcomes::text[]) AS outcome, unnest(@finished_at::timestamptz[]) AS finished_at,
             unnest(@latency_ms::bigint[]) AS latency_ms, unnest(@status_codes::int[]) AS status_code, unnest(@errors::text[]) AS error,
             unnest(@response_starts::text[]) AS response_start, unnest(@retry_after_ms::bigint[]) AS retry_after_ms) f
WHERE a.run_id = f.run_id AND a.direct AND a.attempt = 1 AND a.outcome IN ('sending', 'lost');

-- name: LockHeldFirstAttempts :many
-- The rows of the runs given that sqlc.arg(sender)::text still holds, locked: the runs whose outcome it may
-- record (a row another process swept, or a run stopped, is not its any more).
SELECT run_id FROM http_first_attempts
WHERE run_id = ANY(@run_ids::bigint[]) AND sender IS NOT DISTINCT FROM sqlc.arg(sender)::text
ORDER BY run_id
FOR UPDATE;

-- name: EndFirstAttemptRuns :many
-- The runs whose first attempt decided them: SUCCEEDED on a 2xx, FAILED on a final answer
-- (or a retryable one with no attempt left). fired_at is when the attempt was sent; reason
-- says, when the host's limits made it late, why.
UPDATE schedule_runs r
SET status = e.status, error = e.error, finished_at = e.finished_at, fired_at = e.fired_at,
    reason = CASE WHEN e.reason <> '' THEN e.reason ELSE r.reason END
FROM (SELECT unnest(@run_ids::bigint[]) AS run_id, unnest(@statuses::text[]) AS status, unnest(@errors::text[]) AS error,
             unnest(@finished_at::timestamptz[]) AS finished_at, unnest(@fired_at::timestamptz[]) AS fired_at, unnest(@reasons::text[]) AS reason) e
WHERE r.id = e.run_id AND r.status = 'RUNNING'
RETURNING r.id, r.schedule_id, r.status, r.scheduled_at;

-- name: MarkFirstAttemptRunsFired :exec
-- The runs whose first attempt was sent and go on to their delivery workflow: fired when the
-- attempt was sent, and late, when the host's limits made them, for that reason.
UPDATE schedule_runs r
SET fired_at = e.fired_at, reason = CASE WHEN e.reason <> '' THEN e.reason ELSE r.reason END
FROM (SELECT unnest(@run_ids::bigint[]) AS run_id, unnest(@fired_at::timestamptz[]) AS fired_at, unnest(@reasons::text[]) AS reason) e
WHERE r.id = e.run_id AND r.status = 'RUNNING';

-- name: LockSchedulesOfEndedRuns :exec
-- The schedules of runs a batch ended, locked in id order (every batch takes them so, after
-- its runs), before their last success and plans are moved on.
SELECT id FROM schedules WHERE id = ANY(@ids::bigint[]) ORDER BY id FOR NO KEY UPDATE;

-- name: NoteEndedRuns :exec
-- As FinishScheduleRun does for one run: a success is the schedule's newest one
-- (last_success_at) when the schedule is at rest, and a schedule at rest waiting for its runs
-- to end to complete (plan 'complete') is looked at now.
UPDATE schedules s
SET last_success_at = CASE WHEN e.last_success IS NOT NULL THEN GREATEST(s.last_success_at, e.last_success) ELSE s.last_success_at END,
    plan_at = CASE WHEN s.plan_action = 'complete' THEN now() ELSE s.plan_at END
FROM (SELECT x.schedule_id, max(x.scheduled_at) FILTER (WHERE x.status = 'SUCCEEDED') AS last_success
      FROM (SELECT unnest(@schedule_ids::bigint[]) AS schedule_id, unnest(@statuses::text[]) AS status,
                   unnest(@scheduled_at::timestamptz[]) AS scheduled_at) x
      GROUP BY x.schedule_id) e
WHERE s.id = e.schedule_id AND s.owner IS NULL AND (e.last_success IS NOT NULL OR s.plan_action = 'complete');

-- name: DeleteHeldFirstAttempts :exec
-- The rows of runs decided, or handed over to their delivery workflow (started before this).
DELETE FROM http_first_attempts WHERE run_id = ANY(@run_ids::bigint[]) AND sender IS NOT DISTINCT FROM sqlc.arg(sender)::text;

-- name: TakeExpiredFirstAttempts :many
-- The sweep: rows whose sender's lease ran out (it died, or stalled past its lease) are taken
-- by sqlc.arg(sender)::text, with what their attempt says: none recorded (the sender died before sending:
-- the row goes back to the queue), being sent (it died mid-send: the attempt is lost, and the
-- run goes on to its delivery workflow), or answered.
WITH x AS (
    SELECT q.run_id FROM http_first_attempts q
    WHERE q.sender IS NOT NULL AND q.lease_until < now()
    ORDER BY q.lease_until
    LIMIT @max_rows
    FOR UPDATE SKIP LOCKED
)
UPDATE http_first_attempts q SET sender = sqlc.arg(sender)::text, lease_until = now() + make_interval(secs => @lease_seconds::float8)
FROM x WHERE q.run_id = x.run_id
RETURNING q.run_id,
    COALESCE((SELECT a.outcome FROM schedule_run_attempts a WHERE a.run_id = q.run_id AND a.direct AND a.attempt = 1), '')::text AS outcome,
    (SELECT r.status FROM schedule_runs r WHERE r.id = q.run_id)::text AS run_status;

-- name: RequeueFirstAttempts :exec
-- Rows taken by the sweep whose attempt was never recorded: back to the queue, for any sender.
UPDATE http_first_attempts SET sender = NULL, lease_until = NULL WHERE run_id = ANY(@run_ids::bigint[]) AND sender IS NOT DISTINCT FROM sqlc.arg(sender)::text;

-- name: LoseFirstAttempts :exec
-- Attempts recorded as being sent whose sender died before their answer was recorded: lost.
-- The request may have reached the receiver, which dedupes on webhook-id.
UPDATE schedule_run_attempts
SET outcome = 'lost', finished_at = now(),
    error = 'the worker sending it stopped before its answer was recorded (the request may have reached the receiver, which dedupes on webhook-id)'
WHERE run_id = ANY(@run_ids::bigint[]) AND direct AND attempt = 1 AND outcome = 'sending';

-- name: MarkLostRunsFired :exec
-- A run whose first attempt was lost fired when it was sent.
UPDATE schedule_runs r SET fired_at = a.started_at
FROM schedule_run_attempts a
WHERE r.id = ANY(@run_ids::bigint[]) AND a.run_id = r.id AND a.direct AND a.attempt = 1 AND r.status = 'RUNNING';

-- name: DropStaleFirstAttempts :execrows
-- Rows of runs that are no longer RUNNING and that no live sender holds: a fire retracted
-- before its release, released MISSED, or stopped.
DELETE FROM http_first_attempts q USING schedule_runs r
WHERE r.id = q.run_id AND r.status <> 'RUNNING' AND (q.sender IS NULL OR q.lease_until < now());

-- name: StopFirstAttemptRun :many
-- A run whose first attempt is the sender's is stopped (overlap cancel_other or
-- terminate_other, which would cancel or terminate its delivery workflow — it has none yet):
-- its row goes, so nothing more is sent for it, and it ends as the command says. Only a fire
-- released (an armed one not yet due is retracted instead).
WITH r AS (
    SELECT x.id FROM schedule_runs x JOIN http_first_attempts q ON q.run_id = x.id
    WHERE x.workflow_id = @workflow_id AND x.status = 'RUNNING' AND run_shown(x.armed, x.visible_at)
    FOR UPDATE OF x, q
), gone AS (
    DELETE FROM http_first_attempts q USING r WHERE q.run_id = r.id
)
UPDATE schedule_runs x SET status = @status, error = @error, finished_at = now()
FROM r WHERE x.id = r.id
RETURNING x.id;

-- name: FirstAttemptRunState :one
-- A run by its workflow id, as a wait for its end sees it: whether its first attempt is still
-- the sender's (queued), whether its current series began with one (direct), and its status.
SELECT r.id, r.status, r.error,
       EXISTS (SELECT 1 FROM http_first_attempts q WHERE q.run_id = r.id) AS queued,
       EXISTS (SELECT 1 FROM schedule_run_attempts a WHERE a.run_id = r.id AND a.workflow_id = r.workflow_id AND a.direct) AS direct
FROM schedule_runs r
WHERE r.workflow_id = @workflow_id
ORDER BY r.id DESC
LIMIT 1;

-- name: HandedOverFirstAttempts :many
-- Rows sqlc.arg(sender)::text holds whose first attempt was answered retryably or lost: their runs go on to
-- their delivery workflow (started before their row is deleted).
SELECT q.run_id FROM http_first_attempts q
JOIN schedule_run_attempts a ON a.run_id = q.run_id AND a.direct AND a.attempt = 1 AND a.outcome IN ('retryable', 'lost')
WHERE q.run_id = ANY(@run_ids::bigint[]) AND q.sender IS NOT DISTINCT FROM sqlc.arg(sender)::text;

-- name: FirstAttemptQueued :one
-- Whether the run's first attempt is still the sender's (no delivery workflow may start).
SELECT EXISTS (SELECT 1 FROM http_first_attempts WHERE run_id = @run_id)::boolean AS queued;

-- name: RenewHeldFirstAttempts :execrows
-- A sender alive renews the leases of the rows it is working on.
UPDATE http_first_attempts SET lease_until = now() + make_interval(secs => @lease_seconds::float8)
WHERE run_id = ANY(@run_ids::bigint[]) AND sender IS NOT DISTINCT FROM sqlc.arg(sender)::text;
