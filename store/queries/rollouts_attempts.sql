-- Executor attempts (docs/rollouts.md, "Attempts"): each start of an executor on a task
-- run's target and how it ended, counted per claim in executor_attempts (store/schema.sql).
-- A task run's end (FinishTasks, in
-- rollouts.sql) writes the end of its attempt in flight in the same statement.

-- name: BeginExecutorAttempts :many
-- The executors of these claimed task runs start. A task run still RUNNING under the given
-- claim with no attempt recorded for it (a fresh claim: the common case) gets its first
-- attempt at once. For any other, an attempt of the claim that was started and never ended
-- is marked lost (whoever ran it is gone: it spends nothing), and a new attempt is recorded
-- unless the claim has spent max_attempts failed ones or one that could not be retried.
-- Per task run: the new attempt's number (0: none), whether the claim's attempts are
-- spent, the failed attempts so far and the last one's error. A task run missing from the
-- answer is no longer that RUNNING claim; one with no new attempt that is not spent had its
-- next attempt recorded by another runner first (ON CONFLICT): it is that runner's.
WITH req AS (
    SELECT unnest(@ids::bigint[]) AS id, unnest(@claims::integer[]) AS claim
), live AS (
    SELECT req.id, req.claim FROM req
    JOIN task_runs t ON t.id = req.id AND t.status = 'RUNNING' AND t.attempt = req.claim
), fresh AS (
    INSERT INTO executor_attempts (task_run_id, claim, attempt)
    SELECT live.id, live.claim, 1 FROM live
    ON CONFLICT DO NOTHING
    RETURNING task_run_id
), resumed AS (
    SELECT live.id, live.claim FROM live WHERE NOT EXISTS (SELECT 1 FROM fresh f WHERE f.task_run_id = live.id)
), lost AS (
    UPDATE executor_attempts a SET ended_at = now(), outcome = 'lost'
    FROM resumed WHERE a.task_run_id = resumed.id AND a.claim = resumed.claim AND a.ended_at IS NULL
), spent AS (
    SELECT resumed.id, resumed.claim,
           count(a.attempt) FILTER (WHERE a.outcome = 'failed') AS failed,
           coalesce(bool_or(NOT a.retryable) FILTER (WHERE a.outcome = 'failed'), false) AS final,
           coalesce(max(a.attempt), 0) AS last,
           coalesce((array_agg(a.error ORDER BY a.attempt DESC) FILTER (WHERE a.outcome = 'failed'))[1], '') AS last_error
    FROM resumed LEFT JOIN executor_attempts a ON a.task_run_id = resumed.id AND a.claim = resumed.claim
    GROUP BY resumed.id, resumed.claim
), began AS (
    INSERT INTO executor_attempts (task_run_id, claim, attempt)
    SELECT s.id, s.claim, s.last + 1 FROM spent s
    WHERE s.failed < @max_attempts::integer AND NOT s.final
    ON CONFLICT DO NOTHING
    RETURNING task_run_id, attempt
)
SELECT f.task_run_id::bigint AS task_run_id, 1::integer AS attempt, false::boolean AS spent, 0::integer AS failed, ''::text AS last_error
FROM fresh f
UNION ALL
SELECT s.id, coalesce(b.attempt, 0), s.failed >= @max_attempts::integer OR s.final, s.failed::integer, s.last_error
FROM spent s LEFT JOIN began b ON b.task_run_id = s.id;

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
