-- Rollouts and task runs (docs/rollouts.md). The promotion round is PromoteTasks +
-- NextGateChange under one transaction-level advisory lock (store/rollouts_promotion.go);
-- the gates both promotion statements apply are rollout_gates and the gate functions it
-- composes (store/schema.sql).

-- name: InsertRollout :one
INSERT INTO rollouts (name, parallel_limit, status, strategy, wave_count, window_start, window_end)
VALUES (@name, @parallel_limit, @status, sqlc.narg(strategy), @wave_count, sqlc.narg(window_start), sqlc.narg(window_end))
RETURNING *;

-- name: InsertTaskRuns :execrows
-- All tasks of a rollout in one statement: tasks is a JSON array of task objects.
INSERT INTO task_runs (rollout_id, database, type, version, version_key, run_at, executor, payload, status, wave)
SELECT @rollout_id::bigint, x.database, x.type, x.version, x.version_key, x.run_at, x.executor,
       coalesce(x.payload, '{}'::jsonb), @status::text, coalesce(x.wave, 1)
FROM jsonb_array_elements(@tasks::jsonb) WITH ORDINALITY AS e(doc, ord),
     jsonb_to_record(e.doc) AS x(database text, type text, version text, version_key text, run_at timestamptz, executor text, payload jsonb, wave integer)
ORDER BY e.ord;

-- name: GetRollout :one
SELECT * FROM rollouts WHERE id = @id;

-- name: GetRolloutSummary :one
-- A rollout with its task counts and its status as derived by the rollout_summaries view
-- (store/schema.sql), the one definition of a rollout's status.
SELECT * FROM rollout_summaries WHERE id = @id;

-- name: ListRolloutSummaries :many
SELECT * FROM rollout_summaries WHERE id > @after_id ORDER BY id LIMIT @max_rows;

-- name: SetRolloutStatus :one
-- reason: why (status_reason; '' clears it). A move to RUNNING (a resume) restarts the abort
-- threshold's count (resumed_at).
UPDATE rollouts SET status = @status, status_reason = @reason, updated_at = now(),
    resumed_at = CASE WHEN @status::text = 'RUNNING' THEN now() ELSE resumed_at END
WHERE id = @id AND status = ANY(@from_statuses::text[])
RETURNING *;

-- name: CancelRolloutTasks :many
UPDATE task_runs
SET status = 'CANCELED', finished_at = now(), waiting_cause = NULL, waiting_key = NULL, updated_at = now(),
    error = 'rollout canceled'
WHERE rollout_id = @rollout_id AND status IN ('PENDING', 'AVAILABLE')
RETURNING id;

-- name: GetTaskRun :one
SELECT * FROM task_runs WHERE id = @id;

-- name: ListTaskRuns :many
SELECT * FROM task_runs
WHERE rollout_id = @rollout_id AND id > @after_id
  AND (cardinality(@statuses::text[]) = 0 OR status = ANY(@statuses::text[]))
ORDER BY id
LIMIT @max_rows;

-- name: PromotionLock :exec
-- The promotion lock, and the rest of the transaction without JIT compilation
-- (store/rollouts_promotion.go says why).
SELECT pg_advisory_xact_lock(@key::bigint), set_config('jit', 'off', true);

-- name: PromoteTasks :many
-- One full promotion round: the gates (rollout_gates, store/schema.sql) applied to every
-- PENDING task at once, called under the promotion advisory lock so the
-- live set they read cannot change under another promoter. In the same statement every task
-- left PENDING gets its waiting cause as of after the round; only causes that changed are
-- returned by rollout_gates, so only they are written. Returns the promoted rows (status AVAILABLE) and the rows whose cause changed
-- (status PENDING). as_of: see rollout_clock (NULL: the database's clock alone).
UPDATE task_runs t
SET status = CASE WHEN g.promote THEN 'AVAILABLE' ELSE 'PENDING' END,
    waiting_key = g.waiting_key,
    waiting_cause = g.waiting_cause,
    -- the promotion clock, which the rate gate counts against (rollout_clock).
    promoted_at = CASE WHEN g.promote THEN rollout_clock(sqlc.narg(as_of)::timestamptz) ELSE t.promoted_at END,
    updated_at = CASE WHEN g.promote THEN now() ELSE t.updated_at END
FROM rollout_gates(sqlc.narg(as_of)::timestamptz, true) g
WHERE t.id = g.id AND t.status = 'PENDING'
  AND (g.promote OR g.waiting_key IS DISTINCT FROM t.waiting_key)
RETURNING t.id, t.rollout_id, t.status, t.executor;

-- name: NextGateChange :many
-- The earliest moment ahead at which a gate bound by time may let a PENDING task through,
-- by the promotion clock (rollout_clock), and which gate (rollout_next_gate_change).
SELECT g.at::timestamptz AS at, g.why::text AS why
FROM rollout_next_gate_change(rollout_clock(sqlc.narg(as_of)::timestamptz)) g
WHERE g.at IS NOT NULL;

-- name: ClaimTasks :many
-- AVAILABLE → RUNNING for up to max_rows tasks of a rollout that may start new work
-- (rollout_may_start: the promotion's paused and freeze gates, so nothing starts while
-- paused or frozen); SKIP LOCKED makes each row go to exactly one claimer (R4).
-- The pick is a materialized CTE, not an IN subquery: as a semi-join's inner side the LIMIT
-- subquery is rescanned per candidate row, skips the rows this statement already updated,
-- and so claims more than max_rows. It reads task_runs_available in its order, and the
-- update finds the picked rows by their ids (= ANY, an index probe each), whatever the
-- statistics say.
WITH picked AS MATERIALIZED (
    SELECT a.id FROM task_runs a
    WHERE a.rollout_id = @rollout_id AND a.status = 'AVAILABLE'
      AND rollout_may_start(@rollout_id) IS TRUE
      -- external: NULL claims every executor; true only external tasks (the workflow waits
      -- for their result); false only the ones an executor runs (the rollout's runner).
      AND (sqlc.narg(external)::boolean IS NULL OR (a.executor = 'external') = sqlc.narg(external)::boolean)
    ORDER BY a.version_key, a.id
    LIMIT @max_rows
    FOR UPDATE SKIP LOCKED
)
UPDATE task_runs t
SET status = 'RUNNING', started_at = now(), attempt = t.attempt + 1, updated_at = now()
-- (… IS TRUE: found by the primary key, never by scanning a partial index on the status,
-- however few AVAILABLE rows the statistics promise.)
WHERE t.id = ANY (ARRAY(SELECT picked.id FROM picked)) AND (t.status = 'AVAILABLE') IS TRUE
RETURNING t.*;

-- name: RunningTasks :many
SELECT * FROM task_runs WHERE rollout_id = @rollout_id AND status = 'RUNNING' ORDER BY id;

-- name: CountUnfinished :one
SELECT count(*)::bigint FROM task_runs
WHERE rollout_id = @rollout_id AND status IN ('PENDING', 'AVAILABLE', 'RUNNING');

-- name: RetryTask :one
UPDATE task_runs
SET status = 'PENDING', finished_at = NULL, started_at = NULL, promoted_at = NULL, error = '',
    output = NULL, updated_at = now()
WHERE id = @id AND status IN ('FAILED', 'CANCELED')
RETURNING *;

-- name: SkipTask :one
UPDATE task_runs
SET status = 'SKIPPED', finished_at = now(), waiting_cause = NULL, waiting_key = NULL, updated_at = now()
WHERE id = @id AND status IN ('PENDING', 'AVAILABLE', 'FAILED', 'CANCELED')
RETURNING *;

-- name: CancelTask :one
UPDATE task_runs
SET status = 'CANCELED', finished_at = now(), waiting_cause = NULL, waiting_key = NULL, updated_at = now(), error = 'canceled'
WHERE id = @id AND status IN ('PENDING', 'AVAILABLE')
RETURNING *;

-- name: TaskRunStates :many
SELECT id, status, attempt FROM task_runs WHERE id = ANY(@ids::bigint[]);

-- name: TaskRunsByIDs :many
SELECT * FROM task_runs WHERE id = ANY(@ids::bigint[]) ORDER BY id;

-- name: RunningTaskIDs :many
SELECT id FROM task_runs WHERE rollout_id = @rollout_id AND status = 'RUNNING' ORDER BY id;

-- name: FinishTasks :many
-- RUNNING → DONE/FAILED/CANCELED for many tasks at once, each for the claim that holds it:
-- results is a JSON array of {id, attempt (the claim), status, error, output}; rows no
-- longer that RUNNING claim are left alone (a stale claim changes nothing). Every end of a
-- RUNNING task run is written here, and in the same statement the end of its executor
-- attempt still in flight (executor_attempts): succeeded with DONE, canceled with
-- CANCELED, lost with FAILED (a failed attempt was recorded when it failed: one still in
-- flight at a FAILED end is one the executor never finished). abort_rule says the task's
-- rollout has an abort threshold to check (store.FinishTaskRuns then checks it).
WITH finished AS (
    UPDATE task_runs t
    SET status = x.status, finished_at = now(), error = coalesce(x.error, ''), output = x.output, updated_at = now()
    FROM jsonb_to_recordset(@results::jsonb) AS x(id bigint, attempt integer, status text, error text, output jsonb)
    WHERE t.id = x.id AND t.status = 'RUNNING' AND t.attempt = x.attempt
      AND x.status IN ('DONE', 'FAILED', 'CANCELED')
    RETURNING t.id, t.attempt, t.status, t.rollout_id
), attempt_ended AS (
    UPDATE executor_attempts a
    SET ended_at = now(), outcome = CASE f.status WHEN 'DONE' THEN 'succeeded' WHEN 'CANCELED' THEN 'canceled' ELSE 'lost' END
    FROM finished f
    WHERE a.task_run_id = f.id AND a.claim = f.attempt AND a.ended_at IS NULL
)
SELECT f.id, f.status, f.rollout_id,
    EXISTS (SELECT 1 FROM rollouts r WHERE r.id = f.rollout_id AND r.strategy IS NOT NULL AND r.strategy->'abort' IS NOT NULL) AS abort_rule
FROM finished f;

-- name: RunningRunnableTasks :many
-- A rollout's RUNNING tasks that an executor runs (not external): all held by its one
-- runner activity, whose retry after a lost worker adopts them.
SELECT * FROM task_runs
WHERE rollout_id = @rollout_id AND status = 'RUNNING' AND executor <> 'external'
ORDER BY id;

-- name: PromoteHeads :many
-- PromoteTasks without the waiting causes, for a runner's round between two batches of its
-- tasks: the same gates (rollout_gates) under the same advisory lock, but only the heads of
-- each database (its smallest live version) are looked at — no other task can pass the
-- version gate — and no cause is written: the causes of the tasks left PENDING are brought
-- up to date by the next full round (PromoteTasks).
UPDATE task_runs t
SET status = 'AVAILABLE', waiting_key = NULL, waiting_cause = NULL, promoted_at = rollout_clock(sqlc.narg(as_of)::timestamptz), updated_at = now()
FROM rollout_gates(sqlc.narg(as_of)::timestamptz, false) g
WHERE t.id = g.id AND g.promote AND t.status = 'PENDING'
RETURNING t.id, t.rollout_id, t.status, t.executor;
