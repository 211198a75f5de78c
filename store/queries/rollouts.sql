-- Rollouts and task runs (DESIGN.md §2). The promotion round is PromoteTasks + NextRunAt
-- under one transaction-level advisory lock (store/rollouts.go).

-- name: InsertRollout :one
INSERT INTO rollouts (name, parallel_limit, status)
VALUES (@name, @parallel_limit, @status)
RETURNING *;

-- name: InsertTaskRuns :execrows
-- All tasks of a rollout in one statement: tasks is a JSON array of task objects.
INSERT INTO task_runs (rollout_id, database, type, version, version_key, run_at, executor, payload, status)
SELECT @rollout_id::bigint, x.database, x.type, x.version, x.version_key, x.run_at, x.executor,
       coalesce(x.payload, '{}'::jsonb), @status::text
FROM jsonb_array_elements(@tasks::jsonb) WITH ORDINALITY AS e(doc, ord),
     jsonb_to_record(e.doc) AS x(database text, type text, version text, version_key text, run_at timestamptz, executor text, payload jsonb)
ORDER BY e.ord;

-- name: GetRollout :one
SELECT * FROM rollouts WHERE id = @id;

-- name: GetRolloutSummary :one
-- A rollout with its task counts and its status as derived by the rollout_summaries view
-- (migrations/00005_rollout_status.sql), the one definition of a rollout's status.
SELECT * FROM rollout_summaries WHERE id = @id;

-- name: ListRolloutSummaries :many
SELECT * FROM rollout_summaries WHERE id > @after_id ORDER BY id LIMIT @max_rows;

-- name: SetRolloutStatus :one
UPDATE rollouts SET status = @status, updated_at = now()
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

-- name: AdvisoryXactLock :exec
SELECT pg_advisory_xact_lock(@key::bigint);

-- name: PromoteTasks :many
-- One set-based round of the four gates (run_at, version order per database, database
-- mutual exclusion for DDL/SDL, per-rollout parallel limit), called under the promotion
-- advisory lock so the live set it reads cannot change under another promoter. In the same
-- statement every task left PENDING gets its waiting cause as of after the round (first
-- failing gate wins); only causes that changed are written. Returns the promoted rows
-- (status AVAILABLE) and the rows whose cause changed (status PENDING).
-- The run_at gate reads the clock as of max(now(), as_of): the promoter passes the time of
-- its workflow, whose timer woke it for that run_at, so a database clock a little behind
-- the Temporal server's does not leave the task PENDING (and the promoter re-running rounds
-- until the database catches up). as_of NULL: the database's clock alone.
WITH live AS (
    SELECT t.id, t.rollout_id, t.database, t.version, t.version_key, t.status, t.run_at, t.waiting_key,
           t.type IN ('DDL', 'SDL') AS seq
    FROM task_runs t
    WHERE t.status IN ('PENDING', 'AVAILABLE', 'RUNNING')
),
ro_active AS (
    SELECT l.rollout_id, count(*) AS n FROM live l
    WHERE l.status IN ('AVAILABLE', 'RUNNING') GROUP BY l.rollout_id
),
ro AS MATERIALIZED (
    SELECT r.id, r.status, r.parallel_limit, coalesce(a.n, 0) AS active
    FROM rollouts r LEFT JOIN ro_active a ON a.rollout_id = r.id
    WHERE r.id IN (SELECT DISTINCT l.rollout_id FROM live l WHERE l.status = 'PENDING')
),
db_min AS MATERIALIZED (
    SELECT DISTINCT ON (l.database) l.database, l.id AS min_id, l.version AS min_version, l.version_key AS min_key
    FROM live l ORDER BY l.database, l.version_key, l.id
),
db_busy AS MATERIALIZED (
    SELECT DISTINCT ON (l.database) l.database, l.id AS busy_id, l.seq
    FROM live l WHERE l.status IN ('AVAILABLE', 'RUNNING')
    ORDER BY l.database, l.seq DESC, l.id
),
pend AS MATERIALIZED (
    SELECT l.id, l.rollout_id, l.database, l.seq, l.version_key, l.run_at, l.waiting_key,
           ro.status AS ro_status, ro.parallel_limit, ro.active AS ro_active,
           m.min_id, m.min_version, m.min_key,
           (ro.status = 'RUNNING' AND (l.run_at IS NULL OR l.run_at <= GREATEST(now(), sqlc.narg(as_of)::timestamptz)) AND l.version_key = m.min_key
            -- a database with an AVAILABLE/RUNNING DDL/SDL task takes nothing; a DDL/SDL
            -- task needs the database idle.
            AND (b.busy_id IS NULL OR (NOT b.seq AND NOT l.seq))) AS eligible
    FROM live l
    JOIN ro ON ro.id = l.rollout_id
    JOIN db_min m ON m.database = l.database
    LEFT JOIN db_busy b ON b.database = l.database
    WHERE l.status = 'PENDING'
),
cand AS (
    SELECT p.id, p.rollout_id, p.database, p.seq, p.version_key, p.parallel_limit, p.ro_active,
           row_number() OVER (PARTITION BY p.database ORDER BY p.id) AS db_rank
    FROM pend p WHERE p.eligible
),
cand_first_seq AS (
    SELECT c.*, min(c.db_rank) FILTER (WHERE c.seq) OVER (PARTITION BY c.database) AS first_seq
    FROM cand c
),
picked AS (
    SELECT c.id, c.rollout_id, c.database, c.seq, c.parallel_limit, c.ro_active,
           row_number() OVER (PARTITION BY c.rollout_id ORDER BY c.version_key, c.id) AS ro_rank
    FROM cand_first_seq c
    -- per database: the first candidate alone if it is DDL/SDL, else the DML/OTHER ones
    -- before the first DDL/SDL.
    WHERE (c.seq AND c.db_rank = 1) OR (NOT c.seq AND (c.first_seq IS NULL OR c.db_rank < c.first_seq))
),
limited AS MATERIALIZED (
    SELECT p.id, p.rollout_id, p.database, p.seq FROM picked p
    WHERE p.ro_rank <= p.parallel_limit - p.ro_active
),
busy_after AS (
    SELECT DISTINCT ON (x.database) x.database, x.busy_id, x.seq
    FROM (SELECT b.database, b.busy_id, b.seq FROM db_busy b
          UNION ALL SELECT l.database, l.id, l.seq FROM limited l) x
    ORDER BY x.database, x.seq DESC, x.busy_id
),
ro_after AS (
    SELECT l.rollout_id, count(*) AS n FROM limited l GROUP BY l.rollout_id
),
reasons AS (
    SELECT p.id, p.waiting_key, p.min_id, p.min_version, p.run_at, p.parallel_limit, ba.busy_id,
           CASE
               WHEN p.ro_status <> 'RUNNING' THEN 'rollout_paused'
               WHEN p.run_at > GREATEST(now(), sqlc.narg(as_of)::timestamptz) THEN 'run_at'
               WHEN p.version_key > p.min_key THEN 'version'
               WHEN ba.busy_id IS NOT NULL AND (ba.seq OR p.seq) THEN 'database_busy'
               WHEN p.ro_active + coalesce(ra.n, 0) >= p.parallel_limit THEN 'parallel_limit'
               ELSE 'queued'
           END AS reason
    FROM pend p
    LEFT JOIN busy_after ba ON ba.database = p.database
    LEFT JOIN ro_after ra ON ra.rollout_id = p.rollout_id
    WHERE NOT EXISTS (SELECT 1 FROM limited x WHERE x.id = p.id)
),
causes AS (
    SELECT r.id, r.waiting_key, r.reason,
           CASE r.reason WHEN 'version' THEN r.min_id WHEN 'database_busy' THEN r.busy_id
                         WHEN 'parallel_limit' THEN r.parallel_limit::bigint END AS ref,
           CASE r.reason WHEN 'version' THEN r.min_version
                         WHEN 'run_at' THEN to_char(r.run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') END AS note
    FROM reasons r
),
changes AS (
    SELECT l.id, 'AVAILABLE'::text AS status, NULL::text AS reason, NULL::bigint AS ref, NULL::text AS note, NULL::text AS key
    FROM limited l
    UNION ALL
    SELECT c.id, 'PENDING', c.reason, c.ref, c.note, c.reason || coalesce(':' || c.ref::text, '')
    FROM causes c
    WHERE c.reason || coalesce(':' || c.ref::text, '') IS DISTINCT FROM c.waiting_key
)
UPDATE task_runs t
SET status = ch.status,
    waiting_key = ch.key,
    waiting_cause = CASE
        WHEN ch.reason IS NULL THEN NULL
        WHEN ch.reason = 'version' THEN jsonb_build_object('reason', ch.reason, 'blocked_by_task', ch.ref, 'blocked_by_version', ch.note)
        WHEN ch.reason = 'database_busy' THEN jsonb_build_object('reason', ch.reason, 'busy_task', ch.ref)
        WHEN ch.reason = 'parallel_limit' THEN jsonb_build_object('reason', ch.reason, 'limit', ch.ref)
        WHEN ch.reason = 'run_at' THEN jsonb_build_object('reason', ch.reason, 'run_at', ch.note)
        ELSE jsonb_build_object('reason', ch.reason)
    END,
    promoted_at = CASE WHEN ch.status = 'AVAILABLE' THEN now() ELSE t.promoted_at END,
    updated_at = CASE WHEN ch.status = 'AVAILABLE' THEN now() ELSE t.updated_at END
FROM changes ch
WHERE t.id = ch.id AND t.status = 'PENDING'
RETURNING t.id, t.rollout_id, t.status, t.executor;

-- name: NextRunAt :many
-- The earliest run_at still ahead, by the same clock as PromoteTasks.
SELECT run_at FROM task_runs
WHERE status = 'PENDING' AND run_at > GREATEST(now(), sqlc.narg(as_of)::timestamptz)
ORDER BY run_at LIMIT 1;

-- name: ClaimTasks :many
-- AVAILABLE → RUNNING for up to max_rows tasks of a running rollout; SKIP LOCKED makes each
-- row go to exactly one claimer (R4). The pick is a materialized CTE, not an IN subquery:
-- as a semi-join's inner side the LIMIT subquery is rescanned per candidate row, skips the
-- rows this statement already updated, and so claims more than max_rows.
WITH picked AS MATERIALIZED (
    SELECT a.id FROM task_runs a
    WHERE a.rollout_id = @rollout_id AND a.status = 'AVAILABLE'
      AND EXISTS (SELECT 1 FROM rollouts r WHERE r.id = @rollout_id AND r.status = 'RUNNING')
      -- external: NULL claims every executor; true only external tasks (the workflow waits
      -- for their result); false only the ones an executor runs (the rollout's runner).
      AND (sqlc.narg(external)::boolean IS NULL OR (a.executor = 'external') = sqlc.narg(external)::boolean)
    ORDER BY a.version_key, a.id
    LIMIT @max_rows
    FOR UPDATE SKIP LOCKED
)
UPDATE task_runs t
SET status = 'RUNNING', started_at = now(), attempt = t.attempt + 1, updated_at = now()
FROM picked
WHERE t.id = picked.id AND t.status = 'AVAILABLE'
RETURNING t.*;

-- name: FinishTask :one
-- RUNNING → DONE/FAILED/CANCELED for the attempt that claimed it (a stale attempt changes nothing).
UPDATE task_runs
SET status = @status, finished_at = now(), error = @error, output = @output, updated_at = now()
WHERE id = @id AND status = 'RUNNING' AND attempt = @attempt
RETURNING *;

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

-- name: CancelRunningTask :one
UPDATE task_runs
SET status = 'CANCELED', finished_at = now(), updated_at = now(), error = 'canceled by operator'
WHERE id = @id AND status = 'RUNNING'
RETURNING *;

-- name: TaskRunStates :many
SELECT id, status, attempt FROM task_runs WHERE id = ANY(@ids::bigint[]);

-- name: AnalyzeTaskRuns :exec
-- Refreshes the planner's statistics after a large insert, so the promotion round's joins
-- are planned for the real size of the live set (autovacuum would take up to a minute).
ANALYZE task_runs;

-- name: TaskRunsByIDs :many
SELECT * FROM task_runs WHERE id = ANY(@ids::bigint[]) ORDER BY id;

-- name: RunningTaskIDs :many
SELECT id FROM task_runs WHERE rollout_id = @rollout_id AND status = 'RUNNING' ORDER BY id;

-- name: FinishTasks :many
-- FinishTask for many tasks at once: results is a JSON array of {id, attempt, status,
-- error, output}; rows no longer that RUNNING claim are left alone.
UPDATE task_runs t
SET status = x.status, finished_at = now(), error = coalesce(x.error, ''), output = x.output, updated_at = now()
FROM jsonb_to_recordset(@results::jsonb) AS x(id bigint, attempt integer, status text, error text, output jsonb)
WHERE t.id = x.id AND t.status = 'RUNNING' AND t.attempt = x.attempt
  AND x.status IN ('DONE', 'FAILED', 'CANCELED')
RETURNING t.id, t.status;

-- name: RunningRunnableTasks :many
-- A rollout's RUNNING tasks that an executor runs (not external): all held by its one
-- runner activity, whose retry after a lost worker adopts them.
SELECT * FROM task_runs
WHERE rollout_id = @rollout_id AND status = 'RUNNING' AND executor <> 'external'
ORDER BY id;

-- name: PromoteHeads :many
-- PromoteTasks without the waiting causes, for a runner's round between two batches of
-- its tasks: the same four gates, applied the same way under the promotion advisory lock,
-- but only the heads of each database (its smallest live version) are looked at — no
-- other task can pass the version gate — and no cause is written: the causes of the
-- tasks left PENDING are brought up to date by the next full round (PromoteTasks).
WITH live AS (
    SELECT t.id, t.rollout_id, t.database, t.version_key, t.status, t.run_at,
           t.type IN ('DDL', 'SDL') AS seq
    FROM task_runs t
    WHERE t.status IN ('PENDING', 'AVAILABLE', 'RUNNING')
),
db_min AS MATERIALIZED (
    SELECT l.database, min(l.version_key) AS min_key FROM live l GROUP BY l.database
),
heads AS MATERIALIZED (
    SELECT l.id, l.rollout_id, l.database, l.version_key, l.run_at, l.seq
    FROM live l JOIN db_min m ON m.database = l.database AND l.version_key = m.min_key
    WHERE l.status = 'PENDING'
),
ro_active AS (
    SELECT l.rollout_id, count(*) AS n FROM live l
    WHERE l.status IN ('AVAILABLE', 'RUNNING') GROUP BY l.rollout_id
),
ro AS MATERIALIZED (
    SELECT r.id, r.parallel_limit, coalesce(a.n, 0) AS active
    FROM rollouts r LEFT JOIN ro_active a ON a.rollout_id = r.id
    WHERE r.status = 'RUNNING' AND r.id IN (SELECT DISTINCT h.rollout_id FROM heads h)
),
db_busy AS MATERIALIZED (
    SELECT DISTINCT ON (l.database) l.database, l.id AS busy_id, l.seq
    FROM live l WHERE l.status IN ('AVAILABLE', 'RUNNING')
    ORDER BY l.database, l.seq DESC, l.id
),
cand AS (
    SELECT h.id, h.rollout_id, h.database, h.seq, h.version_key, ro.parallel_limit, ro.active AS ro_active,
           row_number() OVER (PARTITION BY h.database ORDER BY h.id) AS db_rank
    FROM heads h
    JOIN ro ON ro.id = h.rollout_id
    LEFT JOIN db_busy b ON b.database = h.database
    WHERE (h.run_at IS NULL OR h.run_at <= GREATEST(now(), sqlc.narg(as_of)::timestamptz))
      AND (b.busy_id IS NULL OR (NOT b.seq AND NOT h.seq))
),
cand_first_seq AS (
    SELECT c.*, min(c.db_rank) FILTER (WHERE c.seq) OVER (PARTITION BY c.database) AS first_seq
    FROM cand c
),
picked AS (
    SELECT c.id, c.rollout_id, c.parallel_limit, c.ro_active,
           row_number() OVER (PARTITION BY c.rollout_id ORDER BY c.version_key, c.id) AS ro_rank
    FROM cand_first_seq c
    WHERE (c.seq AND c.db_rank = 1) OR (NOT c.seq AND (c.first_seq IS NULL OR c.db_rank < c.first_seq))
)
UPDATE task_runs t
SET status = 'AVAILABLE', waiting_key = NULL, waiting_cause = NULL, promoted_at = now(), updated_at = now()
FROM picked p
WHERE t.id = p.id AND p.ro_rank <= p.parallel_limit - p.ro_active AND t.status = 'PENDING'
RETURNING t.id, t.rollout_id, t.status, t.executor;
