-- Rollouts and task runs (DESIGN.md §2). The promotion round is PromoteTasks +
-- WriteWaitingCauses + NextRunAt under one transaction-level advisory lock (store/rollouts.go).

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

-- name: ListRollouts :many
SELECT * FROM rollouts WHERE id > @after_id ORDER BY id LIMIT @max_rows;

-- name: RolloutCounts :many
SELECT status, count(*)::bigint AS n FROM task_runs WHERE rollout_id = @rollout_id GROUP BY status;

-- name: SetRolloutStatus :one
UPDATE rollouts SET status = @status, updated_at = now()
WHERE id = @id AND status = ANY(@from_statuses::text[])
RETURNING *;

-- name: CancelRolloutTasks :many
UPDATE task_runs
SET status = 'CANCELED', finished_at = now(), waiting_cause = NULL, updated_at = now(),
    error = 'rollout canceled'
WHERE rollout_id = @rollout_id AND status IN ('NOT_STARTED', 'PENDING', 'AVAILABLE')
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
-- mutual exclusion for DDL/SDL, per-rollout parallel limit). Called under the promotion
-- advisory lock, so the live set it reads cannot change under another promoter.
WITH live AS (
    SELECT t.id, t.rollout_id, t.database, t.type, t.version_key, t.status, t.run_at,
           t.type IN ('DDL', 'SDL') AS seq
    FROM task_runs t
    WHERE t.status IN ('PENDING', 'AVAILABLE', 'RUNNING')
),
db_min AS (
    SELECT l.database, min(l.version_key) AS min_key FROM live l GROUP BY l.database
),
db_active AS (
    SELECT l.database, bool_or(l.seq) AS seq FROM live l
    WHERE l.status IN ('AVAILABLE', 'RUNNING') GROUP BY l.database
),
ro_active AS (
    SELECT l.rollout_id, count(*) AS n FROM live l
    WHERE l.status IN ('AVAILABLE', 'RUNNING') GROUP BY l.rollout_id
),
cand AS (
    SELECT l.id, l.rollout_id, l.database, l.seq, l.version_key,
           row_number() OVER (PARTITION BY l.database ORDER BY l.id) AS db_rank
    FROM live l
    JOIN rollouts r ON r.id = l.rollout_id AND r.status = 'RUNNING'
    JOIN db_min m ON m.database = l.database AND l.version_key = m.min_key
    LEFT JOIN db_active a ON a.database = l.database
    WHERE l.status = 'PENDING'
      AND (l.run_at IS NULL OR l.run_at <= now())
      -- a database with an AVAILABLE/RUNNING DDL/SDL task takes nothing; a DDL/SDL task
      -- needs the database idle.
      AND (a.database IS NULL OR (NOT a.seq AND NOT l.seq))
),
cand_first_seq AS (
    SELECT c.*, min(c.db_rank) FILTER (WHERE c.seq) OVER (PARTITION BY c.database) AS first_seq
    FROM cand c
),
picked AS (
    SELECT c.id, c.rollout_id,
           row_number() OVER (PARTITION BY c.rollout_id ORDER BY c.version_key, c.id) AS ro_rank
    FROM cand_first_seq c
    WHERE (c.seq AND c.db_rank = 1) OR (NOT c.seq AND (c.first_seq IS NULL OR c.db_rank < c.first_seq))
),
limited AS (
    SELECT p.id FROM picked p
    JOIN rollouts r ON r.id = p.rollout_id
    LEFT JOIN ro_active ra ON ra.rollout_id = p.rollout_id
    WHERE p.ro_rank <= r.parallel_limit - coalesce(ra.n, 0)
)
UPDATE task_runs t
SET status = 'AVAILABLE', waiting_cause = NULL, promoted_at = now(), updated_at = now()
FROM limited
WHERE t.id = limited.id AND t.status = 'PENDING'
RETURNING t.id, t.rollout_id;

-- name: WriteWaitingCauses :execrows
-- Records, set-based, why each still-PENDING task waits (first failing gate wins); only rows
-- whose cause changed are written.
WITH live AS (
    SELECT t.id, t.rollout_id, t.database, t.type, t.version, t.version_key, t.status, t.run_at,
           t.type IN ('DDL', 'SDL') AS seq
    FROM task_runs t
    WHERE t.status IN ('PENDING', 'AVAILABLE', 'RUNNING')
),
db_min AS (
    SELECT DISTINCT ON (l.database) l.database, l.id AS min_id, l.version AS min_version, l.version_key AS min_key
    FROM live l ORDER BY l.database, l.version_key, l.id
),
db_busy AS (
    SELECT DISTINCT ON (l.database) l.database, l.id AS busy_id, l.seq
    FROM live l WHERE l.status IN ('AVAILABLE', 'RUNNING')
    ORDER BY l.database, l.seq DESC, l.id
),
ro_active AS (
    SELECT l.rollout_id, count(*) AS n FROM live l
    WHERE l.status IN ('AVAILABLE', 'RUNNING') GROUP BY l.rollout_id
),
causes AS (
    SELECT l.id,
        CASE
            WHEN r.status <> 'RUNNING' THEN jsonb_build_object('reason', 'rollout_paused')
            WHEN l.run_at > now() THEN jsonb_build_object('reason', 'run_at', 'run_at', l.run_at)
            WHEN l.version_key > m.min_key THEN jsonb_build_object('reason', 'version',
                'blocked_by_task', m.min_id, 'blocked_by_version', m.min_version)
            WHEN b.busy_id IS NOT NULL AND (b.seq OR l.seq) THEN jsonb_build_object('reason', 'database_busy',
                'busy_task', b.busy_id)
            WHEN coalesce(ra.n, 0) >= r.parallel_limit THEN jsonb_build_object('reason', 'parallel_limit',
                'limit', r.parallel_limit)
            ELSE jsonb_build_object('reason', 'queued')
        END AS cause
    FROM live l
    JOIN rollouts r ON r.id = l.rollout_id
    JOIN db_min m ON m.database = l.database
    LEFT JOIN db_busy b ON b.database = l.database
    LEFT JOIN ro_active ra ON ra.rollout_id = l.rollout_id
    WHERE l.status = 'PENDING'
)
UPDATE task_runs t
SET waiting_cause = c.cause
FROM causes c
WHERE t.id = c.id AND t.status = 'PENDING' AND t.waiting_cause IS DISTINCT FROM c.cause;

-- name: NextRunAt :many
SELECT run_at FROM task_runs WHERE status = 'PENDING' AND run_at > now() ORDER BY run_at LIMIT 1;

-- name: ClaimTasks :many
-- AVAILABLE → RUNNING for up to max_rows tasks of a running rollout; SKIP LOCKED makes each
-- row go to exactly one claimer (R4).
UPDATE task_runs t
SET status = 'RUNNING', started_at = now(), attempt = t.attempt + 1, updated_at = now()
WHERE t.id IN (
    SELECT a.id FROM task_runs a
    WHERE a.rollout_id = @rollout_id AND a.status = 'AVAILABLE'
      AND EXISTS (SELECT 1 FROM rollouts r WHERE r.id = @rollout_id AND r.status = 'RUNNING')
    ORDER BY a.version_key, a.id
    LIMIT @max_rows
    FOR UPDATE SKIP LOCKED
) AND t.status = 'AVAILABLE'
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
WHERE rollout_id = @rollout_id AND status IN ('NOT_STARTED', 'PENDING', 'AVAILABLE', 'RUNNING');

-- name: RetryTask :one
UPDATE task_runs
SET status = 'PENDING', finished_at = NULL, started_at = NULL, promoted_at = NULL, error = '',
    output = NULL, updated_at = now()
WHERE id = @id AND status IN ('FAILED', 'CANCELED')
RETURNING *;

-- name: SkipTask :one
UPDATE task_runs
SET status = 'SKIPPED', finished_at = now(), waiting_cause = NULL, updated_at = now()
WHERE id = @id AND status IN ('NOT_STARTED', 'PENDING', 'AVAILABLE', 'FAILED', 'CANCELED')
RETURNING *;

-- name: CancelTask :one
UPDATE task_runs
SET status = 'CANCELED', finished_at = now(), waiting_cause = NULL, updated_at = now(), error = 'canceled'
WHERE id = @id AND status IN ('NOT_STARTED', 'PENDING', 'AVAILABLE')
RETURNING *;

-- name: CancelRunningTask :one
UPDATE task_runs
SET status = 'CANCELED', finished_at = now(), updated_at = now(), error = 'canceled by operator'
WHERE id = @id AND status = 'RUNNING'
RETURNING *;

-- name: TaskRunStates :many
SELECT id, status, attempt FROM task_runs WHERE id = ANY(@ids::bigint[]);
