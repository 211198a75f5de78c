-- Executor attempts (docs/rollouts.md, "Attempts"): each start of an executor on a task
-- run's target and how it ended, counted per claim in executor_attempts (store/schema.sql).
-- A task run's end (FinishTasks, in
-- rollouts.sql) writes the end of its attempt in flight in the same statement.

-- name: BeginExecutorAttempts :many
-- The executors of these claimed task runs start: for each that is still RUNNING under the
-- given claim, an attempt that was started and never ended is marked lost (whoever ran it
-- is gone: it spends nothing), and a new attempt is recorded unless the claim has spent
-- max_attempts failed ones or one that could not be retried. Per task run: the new
-- attempt's number (0: none), whether the claim's attempts are spent, the failed attempts
-- so far and the last one's error. A task run missing from the answer is no longer that
-- RUNNING claim; one with no new attempt that is not spent had its next attempt recorded
-- by another runner first (ON CONFLICT): it is that runner's.
WITH req AS (
    SELECT unnest(@ids::bigint[]) AS id, unnest(@claims::integer[]) AS claim
), live AS (
    SELECT req.id, req.claim FROM req
    JOIN task_runs t ON t.id = req.id AND t.status = 'RUNNING' AND t.attempt = req.claim
), lost AS (
    UPDATE executor_attempts a SET ended_at = now(), outcome = 'lost'
    FROM live WHERE a.task_run_id = live.id AND a.claim = live.claim AND a.ended_at IS NULL
), spent AS (
    SELECT live.id, live.claim,
           count(a.attempt) FILTER (WHERE a.outcome = 'failed') AS failed,
           coalesce(bool_or(NOT a.retryable) FILTER (WHERE a.outcome = 'failed'), false) AS final,
           coalesce(max(a.attempt), 0) AS last,
           coalesce((array_agg(a.error ORDER BY a.attempt DESC) FILTER (WHERE a.outcome = 'failed'))[1], '') AS last_error
    FROM live LEFT JOIN executor_attempts a ON a.task_run_id = live.id AND a.claim = live.claim
    GROUP BY live.id, live.claim
), began AS (
    INSERT INTO executor_attempts (task_run_id, claim, attempt)
    SELECT s.id, s.claim, s.last + 1 FROM spent s
    WHERE s.failed < @max_attempts::integer AND NOT s.final
    ON CONFLICT DO NOTHING
    RETURNING task_run_id, attempt
)
SELECT s.id::bigint AS task_run_id, coalesce(b.attempt, 0)::integer AS attempt,
       (s.failed >= @max_attempts::integer OR s.final)::boolean AS spent,
       s.failed::integer AS failed, s.last_error::text AS last_error
FROM spent s LEFT JOIN began b ON b.task_run_id = s.id
ORDER BY s.id;

-- name: FailExecutorAttempt :one
-- An attempt's executor failed: recorded as soon as it did, before any retry, so a runner
-- lost after it still counts it. No row: the attempt was no longer in flight (a runner that
-- took over marked it lost).
UPDATE executor_attempts
SET ended_at = now(), outcome = 'failed', retryable = @retryable, error = @error
WHERE task_run_id = @task_run_id AND claim = @claim AND attempt = @attempt AND ended_at IS NULL
RETURNING attempt;

-- name: ExecutorAttemptsOf :many
SELECT * FROM executor_attempts WHERE task_run_id = @task_run_id ORDER BY claim, attempt;
