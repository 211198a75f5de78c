-- +goose Up
-- The rollout gates, written once (docs/rollouts.md, "Where each rule lives"). Both promotion
-- statements (PromoteTasks and PromoteHeads in store/queries/rollouts.sql) are an UPDATE of
-- what rollout_gates returns; before this migration each wrote the gates out itself.

-- rollout_clock is the time the run_at gate reads: the later of the database's clock and
-- as_of (the promoter's workflow time, whose timer woke it for a run_at, so a database clock
-- a little behind Temporal's does not hold the task back). as_of NULL: the database's clock.
-- +goose StatementBegin
CREATE FUNCTION rollout_clock(as_of timestamptz) RETURNS timestamptz
LANGUAGE sql STABLE
AS $$ SELECT GREATEST(now(), as_of) $$;
-- +goose StatementEnd

-- rollout_gates is one promotion round's verdict. A PENDING task is promoted (promote true)
-- only when every gate passes:
--   * its rollout is RUNNING (not paused or cancelled);
--   * run_at: its run_at is NULL or not after rollout_clock(as_of);
--   * R2 version order: no live (PENDING, AVAILABLE, RUNNING) task on its database has a
--     smaller version (version_key, the natural-order key of internal/version);
--   * R1 one schema change per database: no DDL/SDL task is AVAILABLE or RUNNING on its
--     database and, if it is DDL/SDL itself, no task at all is; among the tasks that pass,
--     per database, a DDL/SDL task goes alone and first in id order, or the DML/OTHER tasks
--     before the first DDL/SDL one go together;
--   * R3 parallel limit: its rollout's AVAILABLE + RUNNING, counting the tasks promoted in
--     this round (in version order), stays within parallel_limit.
-- With with_causes, every other PENDING task whose waiting cause changed gets a row too
-- (promote false) with its cause as of after the round, the first failing gate winning:
-- rollout_paused, run_at, version, database_busy, parallel_limit, or queued (it passes every
-- gate and waits for the next round), as waiting_cause (JSON, what the API shows) and
-- waiting_key (compact: "version:42"; a cause whose key is the task's waiting_key already
-- is left out, so a round writes only the causes that changed). Without, only the heads of each database (its
-- smallest live version; no other task can pass R2) are looked at: cheaper, same promotions.
--
-- The function reads a snapshot; the gates hold with concurrent promoters only because
-- every caller runs it under the promotion advisory lock (store/rollouts_promotion.go).
-- LANGUAGE sql and STABLE, so PostgreSQL inlines it into the calling UPDATE.
-- +goose StatementBegin
CREATE FUNCTION rollout_gates(as_of timestamptz, with_causes boolean)
RETURNS TABLE (id bigint, rollout_id bigint, promote boolean, waiting_key text, waiting_cause jsonb)
LANGUAGE sql STABLE
AS $$
WITH live AS (
    SELECT t.id, t.rollout_id, t.database, t.version, t.version_key, t.status, t.run_at, t.waiting_key,
           t.type IN ('DDL', 'SDL') AS seq
    FROM task_runs t
    WHERE t.status IN ('PENDING', 'AVAILABLE', 'RUNNING')
),
-- R3: the active tasks of each rollout that has PENDING ones.
ro_active AS (
    SELECT l.rollout_id, count(*) AS n FROM live l
    WHERE l.status IN ('AVAILABLE', 'RUNNING') GROUP BY l.rollout_id
),
ro AS MATERIALIZED (
    SELECT r.id, r.status, r.parallel_limit, coalesce(a.n, 0) AS active
    FROM rollouts r LEFT JOIN ro_active a ON a.rollout_id = r.id
    WHERE r.id IN (SELECT DISTINCT l.rollout_id FROM live l WHERE l.status = 'PENDING')
),
-- R2: each database's smallest live version (and its task, named in a version cause).
db_min AS MATERIALIZED (
    SELECT DISTINCT ON (l.database) l.database, l.id AS min_id, l.version AS min_version, l.version_key AS min_key
    FROM live l ORDER BY l.database, l.version_key, l.id
),
-- R1: each database's active task, a DDL/SDL one first when there is one.
db_busy AS MATERIALIZED (
    SELECT DISTINCT ON (l.database) l.database, l.id AS busy_id, l.seq
    FROM live l WHERE l.status IN ('AVAILABLE', 'RUNNING')
    ORDER BY l.database, l.seq DESC, l.id
),
pend AS MATERIALIZED (
    SELECT l.id, l.rollout_id, l.database, l.seq, l.version_key, l.run_at, l.waiting_key,
           ro.status AS ro_status, ro.parallel_limit, ro.active AS ro_active,
           m.min_id, m.min_version, m.min_key,
           (ro.status = 'RUNNING'
            AND (l.run_at IS NULL OR l.run_at <= rollout_clock(as_of))
            AND l.version_key = m.min_key
            -- a database with an AVAILABLE/RUNNING DDL/SDL task takes nothing; a DDL/SDL
            -- task needs the database idle.
            AND (b.busy_id IS NULL OR (NOT b.seq AND NOT l.seq))) AS eligible
    FROM live l
    JOIN ro ON ro.id = l.rollout_id
    JOIN db_min m ON m.database = l.database
    LEFT JOIN db_busy b ON b.database = l.database
    WHERE l.status = 'PENDING' AND (with_causes OR l.version_key = m.min_key)
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
-- The causes, as of after the round: the promoted tasks count as active.
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
    SELECT p.id, p.rollout_id, p.waiting_key, p.min_id, p.min_version, p.run_at, p.parallel_limit, ba.busy_id,
           CASE
               WHEN p.ro_status <> 'RUNNING' THEN 'rollout_paused'
               WHEN p.run_at > rollout_clock(as_of) THEN 'run_at'
               WHEN p.version_key > p.min_key THEN 'version'
               WHEN ba.busy_id IS NOT NULL AND (ba.seq OR p.seq) THEN 'database_busy'
               WHEN p.ro_active + coalesce(ra.n, 0) >= p.parallel_limit THEN 'parallel_limit'
               ELSE 'queued'
           END AS reason
    FROM pend p
    LEFT JOIN busy_after ba ON ba.database = p.database
    LEFT JOIN ro_after ra ON ra.rollout_id = p.rollout_id
    WHERE with_causes AND NOT EXISTS (SELECT 1 FROM limited x WHERE x.id = p.id)
),
causes AS (
    SELECT r.id, r.rollout_id, r.waiting_key AS old_key, r.reason,
           CASE r.reason WHEN 'version' THEN r.min_id WHEN 'database_busy' THEN r.busy_id
                         WHEN 'parallel_limit' THEN r.parallel_limit::bigint END AS ref,
           CASE r.reason WHEN 'version' THEN r.min_version
                         WHEN 'run_at' THEN to_char(r.run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') END AS note
    FROM reasons r
)
SELECT l.id, l.rollout_id, true, NULL::text, NULL::jsonb
FROM limited l
UNION ALL
SELECT c.id, c.rollout_id, false,
       c.reason || coalesce(':' || c.ref::text, ''),
       CASE c.reason
           WHEN 'version' THEN jsonb_build_object('reason', c.reason, 'blocked_by_task', c.ref, 'blocked_by_version', c.note)
           WHEN 'database_busy' THEN jsonb_build_object('reason', c.reason, 'busy_task', c.ref)
           WHEN 'parallel_limit' THEN jsonb_build_object('reason', c.reason, 'limit', c.ref)
           WHEN 'run_at' THEN jsonb_build_object('reason', c.reason, 'run_at', c.note)
           ELSE jsonb_build_object('reason', c.reason)
       END
FROM causes c
WHERE c.reason || coalesce(':' || c.ref::text, '') IS DISTINCT FROM c.old_key
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION rollout_gates(timestamptz, boolean);
DROP FUNCTION rollout_clock(timestamptz);
