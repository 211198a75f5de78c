-- +goose Up
-- Progressive rollouts (docs/progressive.md, issue 27): waves with a bake and health checks
-- between them, an abort threshold, a rate, windows and freezes. A rollout without a
-- strategy has one wave, no window, no rate and behaves as before.

-- strategy: what the user sent (domain.Strategy, validated). wave_count and open_wave: the
-- rollout's waves and the last one whose tasks may be promoted (the wave gate). window_start
-- and window_end: the span of its windows that holds the promotion clock, or the next one
-- to open ([start, end), refreshed by the full promotion round once it has ended; NULL: no
-- windows). status_reason: why the rollout is PAUSED or CANCELED when the engine did it (an
-- abort threshold, a failed wave) or who paused it. resumed_at: the abort threshold counts
-- the tasks finished since.
ALTER TABLE rollouts
    ADD COLUMN strategy      jsonb CHECK (strategy IS NULL OR jsonb_typeof(strategy) = 'object'),
    ADD COLUMN wave_count    integer     NOT NULL DEFAULT 1 CHECK (wave_count >= 1),
    ADD COLUMN open_wave     integer     NOT NULL DEFAULT 1,
    ADD COLUMN window_start  timestamptz,
    ADD COLUMN window_end    timestamptz,
    ADD COLUMN status_reason text        NOT NULL DEFAULT '' CHECK (length(status_reason) <= 2000),
    ADD COLUMN resumed_at    timestamptz,
    ADD CONSTRAINT rollouts_open_wave CHECK (open_wave BETWEEN 1 AND wave_count),
    ADD CONSTRAINT rollouts_window CHECK ((window_start IS NULL) = (window_end IS NULL) AND (window_end IS NULL OR window_end > window_start));
CREATE INDEX rollouts_progressive ON rollouts (id) WHERE strategy IS NOT NULL;

-- The wave of each task run (a database's tasks are all in one wave).
ALTER TABLE task_runs ADD COLUMN wave integer NOT NULL DEFAULT 1 CHECK (wave >= 1);

-- One row per wave of a rollout with more than one. Its status is the wave boundary's
-- progress, written by the rollout's workflow (store/rollouts_waves.go):
--   WAITING   an earlier wave is not through yet;
--   RUNNING   open: its tasks may be promoted;
--   BAKING    its tasks all ended DONE or SKIPPED; the next wave waits until bake_until;
--   CHECKING  the bake is over; the health checks run;
--   PASSED    checks passed (or none): the next wave is open; the last wave once its tasks ended well;
--   FAILED    a task ended FAILED or CANCELED (failure 'tasks') or a health check failed
--             (failure 'health'), reason says which; the rollout was paused. Resuming it
--             takes the wave back to RUNNING or CHECKING.
-- health: the last checks' results, [{check, target, ok, detail, at}].
CREATE TABLE rollout_waves (
    rollout_id  bigint      NOT NULL REFERENCES rollouts (id) ON DELETE CASCADE,
    wave        integer     NOT NULL CHECK (wave >= 1),
    databases   text[]      NOT NULL,
    status      text        NOT NULL DEFAULT 'WAITING'
                CHECK (status IN ('WAITING', 'RUNNING', 'BAKING', 'CHECKING', 'PASSED', 'FAILED')),
    failure     text        NOT NULL DEFAULT '' CHECK (failure IN ('', 'tasks', 'health')),
    reason      text        NOT NULL DEFAULT '',
    health      jsonb       NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(health) = 'array'),
    started_at  timestamptz,
    finished_at timestamptz,
    bake_until  timestamptz,
    checked_at  timestamptz,
    passed_at   timestamptz,
    PRIMARY KEY (rollout_id, wave),
    CONSTRAINT rollout_waves_failure CHECK ((status = 'FAILED') = (failure <> '')),
    CONSTRAINT rollout_waves_bake CHECK (status <> 'BAKING' OR bake_until IS NOT NULL),
    CONSTRAINT rollout_waves_started CHECK (status = 'WAITING' OR started_at IS NOT NULL)
);

-- Freezes: while one is in force (lifted_at NULL) nothing new starts — the global one
-- (rollout_id NULL) stops every rollout and device task, a rollout's stops that rollout.
-- Lifted rows stay: they are the history of who froze, when and why, and who lifted it.
CREATE TABLE freezes (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    rollout_id    bigint      REFERENCES rollouts (id) ON DELETE CASCADE,
    reason        text        NOT NULL CHECK (reason <> '' AND length(reason) <= 1000),
    frozen_by     text        NOT NULL,
    frozen_by_token bigint,
    frozen_at     timestamptz NOT NULL DEFAULT now(),
    lifted_by     text,
    lifted_by_token bigint,
    lifted_at     timestamptz,
    CONSTRAINT freezes_lifted CHECK ((lifted_at IS NULL) = (lifted_by IS NULL))
);
CREATE UNIQUE INDEX freezes_one_global ON freezes ((true)) WHERE rollout_id IS NULL AND lifted_at IS NULL;
CREATE UNIQUE INDEX freezes_one_per_rollout ON freezes (rollout_id) WHERE rollout_id IS NOT NULL AND lifted_at IS NULL;
CREATE INDEX freezes_by_rollout ON freezes (rollout_id, id);

-- rollout_rate is a rate's tasks per minute once succeeded tasks succeeded (domain.Rate's
-- PerMinuteAfter, which a test holds equal): floor(base · factor^⌊succeeded / after⌋), the
-- exponent capped at 100, capped by per_minute.
-- +goose StatementBegin
CREATE FUNCTION rollout_rate(rate jsonb, succeeded bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE
AS $$
SELECT least(
    coalesce((rate->>'per_minute')::bigint, 2147483647),
    CASE WHEN rate->'exponential' IS NULL OR (rate->'exponential'->>'after_succeeded')::bigint < 1 THEN 2147483647
         ELSE least(2147483647, floor((rate->'exponential'->>'base_per_minute')::float8
                    * power((rate->'exponential'->>'factor')::float8,
                            least(succeeded / (rate->'exponential'->>'after_succeeded')::bigint, 100))))::bigint
    END)
$$;
-- +goose StatementEnd

-- rollout_gates (first written in 00041): the same verdict with the progressive gates
-- joined, in the same one function both promotion statements apply under the promotion
-- lock. A PENDING task is promoted only when, besides run_at, R1, R2 and R3:
--   * no freeze is in force: neither the global one nor its rollout's;
--   * wave: its wave is not after its rollout's open wave;
--   * window: its rollout has no windows, or the promotion clock lies in [window_start, window_end);
--   * rate: the tasks its rollout promoted in the last minute (promoted_at, stamped with the
--     promotion clock), counting the ones promoted in this round, stay within rollout_rate.
-- Causes, the first failing gate winning: frozen, wave ("wave 2 waits: bake ends 14:05
-- UTC"), rollout_paused (with the rollout's status_reason), window, run_at, version,
-- database_busy, parallel_limit, rate, queued. The new causes carry a message.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION rollout_gates(as_of timestamptz, with_causes boolean)
RETURNS TABLE (id bigint, rollout_id bigint, promote boolean, waiting_key text, waiting_cause jsonb)
LANGUAGE sql STABLE
AS $$
WITH live AS (
    SELECT t.id, t.rollout_id, t.database, t.version, t.version_key, t.status, t.run_at, t.waiting_key, t.wave,
           t.type IN ('DDL', 'SDL') AS seq
    FROM task_runs t
    WHERE t.status IN ('PENDING', 'AVAILABLE', 'RUNNING')
),
-- R3: the active tasks of each rollout that has PENDING ones.
ro_active AS (
    SELECT l.rollout_id, count(*) AS n FROM live l
    WHERE l.status IN ('AVAILABLE', 'RUNNING') GROUP BY l.rollout_id
),
-- Per rollout what the gates read. The freeze in force (the global one first), the
-- rate and the tasks promoted in its last minute are scalar subqueries, the rate's run only
-- for a rollout with a rate (in a lateral they ran for every rollout): ro keeps the plain
-- join of 00041, and the details a cause shows are in ro_details.
ro AS MATERIALIZED (
    SELECT r.id, r.status, r.status_reason, r.parallel_limit, coalesce(a.n, 0) AS active,
           r.open_wave, r.window_start,
           (r.window_end IS NULL OR (rollout_clock(as_of) >= r.window_start AND rollout_clock(as_of) < r.window_end)) AS in_window,
           coalesce((SELECT g.id FROM freezes g WHERE g.rollout_id IS NULL AND g.lifted_at IS NULL),
                    (SELECT f.id FROM freezes f WHERE f.rollout_id = r.id AND f.lifted_at IS NULL)) AS freeze_id,
           CASE WHEN r.strategy->'rate' IS NOT NULL THEN rollout_rate(r.strategy->'rate',
               (SELECT count(*) FROM task_runs d WHERE d.rollout_id = r.id AND d.status = 'DONE')) END AS rate,
           CASE WHEN r.strategy->'rate' IS NOT NULL THEN (SELECT count(*) FROM task_runs p
               WHERE p.rollout_id = r.id AND p.promoted_at > rollout_clock(as_of) - interval '1 minute') END AS recent
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
-- (Only what the gates read: a cause's details are joined from ro for the tasks that wait.)
pend AS MATERIALIZED (
    SELECT l.id, l.rollout_id, l.database, l.seq, l.version_key, l.run_at, l.waiting_key, l.wave,
           ro.status AS ro_status, ro.parallel_limit, ro.active AS ro_active,
           ro.open_wave, ro.in_window, ro.freeze_id, ro.rate - ro.recent AS rate_room,
           m.min_id, m.min_version, m.min_key,
           (ro.status = 'RUNNING'
            AND ro.freeze_id IS NULL
            AND l.wave <= ro.open_wave
            AND ro.in_window
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
    SELECT p.id, p.rollout_id, p.database, p.seq, p.version_key, p.parallel_limit, p.ro_active, p.rate_room,
           row_number() OVER (PARTITION BY p.database ORDER BY p.id) AS db_rank
    FROM pend p WHERE p.eligible
),
cand_first_seq AS (
    SELECT c.*, min(c.db_rank) FILTER (WHERE c.seq) OVER (PARTITION BY c.database) AS first_seq
    FROM cand c
),
picked AS (
    SELECT c.id, c.rollout_id, c.database, c.seq, c.parallel_limit, c.ro_active, c.rate_room,
           row_number() OVER (PARTITION BY c.rollout_id ORDER BY c.version_key, c.id) AS ro_rank
    FROM cand_first_seq c
    -- per database: the first candidate alone if it is DDL/SDL, else the DML/OTHER ones
    -- before the first DDL/SDL.
    WHERE (c.seq AND c.db_rank = 1) OR (NOT c.seq AND (c.first_seq IS NULL OR c.db_rank < c.first_seq))
),
limited AS MATERIALIZED (
    SELECT p.id, p.rollout_id, p.database, p.seq FROM picked p
    WHERE p.ro_rank <= p.parallel_limit - p.ro_active
      AND (p.rate_room IS NULL OR p.ro_rank <= p.rate_room)
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
    SELECT p.id, p.rollout_id, p.waiting_key, p.min_id, p.min_version, p.run_at, p.parallel_limit, p.wave, p.open_wave,
           ba.busy_id,
           CASE
               WHEN p.freeze_id IS NOT NULL THEN 'frozen'
               WHEN p.wave > p.open_wave THEN 'wave'
               WHEN p.ro_status <> 'RUNNING' THEN 'rollout_paused'
               WHEN NOT p.in_window THEN 'window'
               WHEN p.run_at > rollout_clock(as_of) THEN 'run_at'
               WHEN p.version_key > p.min_key THEN 'version'
               WHEN ba.busy_id IS NOT NULL AND (ba.seq OR p.seq) THEN 'database_busy'
               WHEN p.ro_active + coalesce(ra.n, 0) >= p.parallel_limit THEN 'parallel_limit'
               WHEN p.rate_room IS NOT NULL AND p.rate_room - coalesce(ra.n, 0) <= 0 THEN 'rate'
               ELSE 'queued'
           END AS reason
    FROM pend p
    LEFT JOIN busy_after ba ON ba.database = p.database
    LEFT JOIN ro_after ra ON ra.rollout_id = p.rollout_id
    WHERE with_causes AND NOT EXISTS (SELECT 1 FROM limited x WHERE x.id = p.id)
),
-- A wave cause's words: what the wave before it (the open one) is doing.
-- What a progressive cause shows of its rollout: the freeze in force, the open wave (one row
-- per rollout, joined to the waiting tasks by rollout).
ro_details AS MATERIALIZED (
    SELECT ro.id, ro.status_reason, ro.window_start, ro.rate, ro.freeze_id,
           w.status AS wave_status, w.failure AS wave_failure, w.reason AS wave_reason, w.bake_until,
           fz.rollout_id IS NULL AS freeze_global, fz.reason AS freeze_reason, fz.frozen_by, fz.frozen_at
    FROM ro
    LEFT JOIN rollout_waves w ON w.rollout_id = ro.id AND w.wave = ro.open_wave
    LEFT JOIN freezes fz ON fz.id = ro.freeze_id
    WHERE with_causes
),
wave_words AS (
    SELECT r.*, d.status_reason, d.window_start, d.rate, d.freeze_id, d.wave_status, d.wave_failure, d.wave_reason,
           d.bake_until, d.freeze_global, d.freeze_reason, d.frozen_by, d.frozen_at,
           CASE
               WHEN r.reason <> 'wave' THEN NULL
               WHEN r.wave > r.open_wave + 1 THEN 'earlier_wave'
               WHEN d.wave_status = 'BAKING' THEN 'bake'
               WHEN d.wave_status = 'CHECKING' THEN 'health_checks'
               WHEN d.wave_status = 'FAILED' AND d.wave_failure = 'health' THEN 'health_failed'
               WHEN d.wave_status = 'FAILED' THEN 'tasks_failed'
               ELSE 'wave_running'
           END AS waits
    FROM reasons r JOIN ro_details d ON d.id = r.rollout_id
),
causes AS (
    SELECT w.id, w.rollout_id, w.waiting_key AS old_key, w.reason,
           CASE w.reason
               WHEN 'version' THEN 'version:' || w.min_id
               WHEN 'database_busy' THEN 'database_busy:' || w.busy_id
               WHEN 'parallel_limit' THEN 'parallel_limit:' || w.parallel_limit
               WHEN 'frozen' THEN 'frozen:' || w.freeze_id
               WHEN 'wave' THEN 'wave:' || w.wave || ':' || w.open_wave || ':' || w.waits
                                || coalesce(':' || extract(epoch FROM w.bake_until)::bigint, '')
                                || CASE WHEN w.waits IN ('health_failed', 'tasks_failed') THEN ':' || left(md5(w.wave_reason), 12) ELSE '' END
               WHEN 'rollout_paused' THEN 'rollout_paused' || CASE WHEN w.status_reason <> '' THEN ':' || left(md5(w.status_reason), 12) ELSE '' END
               WHEN 'window' THEN 'window:' || coalesce(extract(epoch FROM w.window_start)::bigint::text, '')
               WHEN 'rate' THEN 'rate:' || w.rate
               ELSE w.reason
           END AS key,
           CASE w.reason
               WHEN 'version' THEN jsonb_build_object('reason', w.reason, 'blocked_by_task', w.min_id, 'blocked_by_version', w.min_version)
               WHEN 'database_busy' THEN jsonb_build_object('reason', w.reason, 'busy_task', w.busy_id)
               WHEN 'parallel_limit' THEN jsonb_build_object('reason', w.reason, 'limit', w.parallel_limit)
               WHEN 'run_at' THEN jsonb_build_object('reason', w.reason, 'run_at', to_char(w.run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))
               WHEN 'frozen' THEN jsonb_build_object('reason', w.reason, 'scope', CASE WHEN w.freeze_global THEN 'global' ELSE 'rollout' END, 'freeze_id', w.freeze_id,
                   'why', w.freeze_reason, 'frozen_by', w.frozen_by,
                   'frozen_at', to_char(w.frozen_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                   'message', CASE WHEN w.freeze_global THEN 'frozen (everything) by ' ELSE 'rollout frozen by ' END
                              || w.frozen_by || ': ' || w.freeze_reason)
               WHEN 'wave' THEN jsonb_strip_nulls(jsonb_build_object('reason', w.reason, 'wave', w.wave, 'open_wave', w.open_wave, 'waits', w.waits,
                   'bake_ends', CASE WHEN w.waits = 'bake' THEN to_char(w.bake_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') END,
                   'message', 'wave ' || w.wave || ' waits: ' || CASE w.waits
                       WHEN 'earlier_wave' THEN 'wave ' || (w.wave - 1) || ' has not started'
                       WHEN 'bake' THEN 'bake ends ' || to_char(w.bake_until AT TIME ZONE 'UTC', 'HH24:MI') || ' UTC'
                       WHEN 'health_checks' THEN 'health checks are running'
                       WHEN 'wave_running' THEN 'wave ' || w.open_wave || ' is running'
                       ELSE w.wave_reason
                   END))
               WHEN 'rollout_paused' THEN CASE WHEN w.status_reason = '' THEN jsonb_build_object('reason', w.reason)
                   ELSE jsonb_build_object('reason', w.reason, 'why', w.status_reason, 'message', 'rollout paused: ' || w.status_reason) END
               WHEN 'window' THEN jsonb_strip_nulls(jsonb_build_object('reason', w.reason,
                   'opens_at', CASE WHEN w.window_start > rollout_clock(as_of) THEN to_char(w.window_start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') END,
                   'message', 'outside every window' || CASE WHEN w.window_start > rollout_clock(as_of)
                       THEN '; the next opens ' || to_char(w.window_start AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') || ' UTC' ELSE '' END))
               WHEN 'rate' THEN jsonb_build_object('reason', w.reason, 'per_minute', w.rate,
                   'message', 'rate: ' || w.rate || ' tasks started in the last minute')
               ELSE jsonb_build_object('reason', w.reason)
           END AS cause
    FROM wave_words w
)
SELECT l.id, l.rollout_id, true, NULL::text, NULL::jsonb
FROM limited l
UNION ALL
SELECT c.id, c.rollout_id, false, c.key, c.cause
FROM causes c
WHERE c.key IS DISTINCT FROM c.old_key
$$;
-- +goose StatementEnd

-- rollout_summaries (00005) shows the strategy, the waves and why the engine paused or
-- canceled the rollout; the status rule is unchanged.
CREATE OR REPLACE VIEW rollout_summaries AS
SELECT r.id, r.name, r.parallel_limit, r.status AS operator_status,
       CASE
           WHEN r.status = 'CANCELED' THEN 'CANCELED'
           WHEN c.pending + c.available + c.running > 0 THEN r.status
           WHEN c.failed > 0 THEN 'FAILED'
           WHEN c.done > 0 AND c.canceled = 0 THEN 'DONE'
           ELSE 'CANCELED'
       END::text AS status,
       c.pending, c.available, c.running, c.done, c.failed, c.canceled, c.skipped,
       r.created_at, r.updated_at,
       r.strategy, r.wave_count, r.open_wave, r.status_reason
FROM rollouts r
CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE t.status = 'PENDING')   AS pending,
           count(*) FILTER (WHERE t.status = 'AVAILABLE') AS available,
           count(*) FILTER (WHERE t.status = 'RUNNING')   AS running,
           count(*) FILTER (WHERE t.status = 'DONE')      AS done,
           count(*) FILTER (WHERE t.status = 'FAILED')    AS failed,
           count(*) FILTER (WHERE t.status = 'CANCELED')  AS canceled,
           count(*) FILTER (WHERE t.status = 'SKIPPED')   AS skipped
    FROM task_runs t
    WHERE t.rollout_id = r.id
) c;

-- +goose Down
DROP VIEW rollout_summaries;
CREATE VIEW rollout_summaries AS
SELECT r.id, r.name, r.parallel_limit, r.status AS operator_status,
       CASE
           WHEN r.status = 'CANCELED' THEN 'CANCELED'
           WHEN c.pending + c.available + c.running > 0 THEN r.status
           WHEN c.failed > 0 THEN 'FAILED'
           WHEN c.done > 0 AND c.canceled = 0 THEN 'DONE'
           ELSE 'CANCELED'
       END::text AS status,
       c.pending, c.available, c.running, c.done, c.failed, c.canceled, c.skipped,
       r.created_at, r.updated_at
FROM rollouts r
CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE t.status = 'PENDING')   AS pending,
           count(*) FILTER (WHERE t.status = 'AVAILABLE') AS available,
           count(*) FILTER (WHERE t.status = 'RUNNING')   AS running,
           count(*) FILTER (WHERE t.status = 'DONE')      AS done,
           count(*) FILTER (WHERE t.status = 'FAILED')    AS failed,
           count(*) FILTER (WHERE t.status = 'CANCELED')  AS canceled,
           count(*) FILTER (WHERE t.status = 'SKIPPED')   AS skipped
    FROM task_runs t
    WHERE t.rollout_id = r.id
) c;
-- The gates of 00041, as they were.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION rollout_gates(as_of timestamptz, with_causes boolean)
RETURNS TABLE (id bigint, rollout_id bigint, promote boolean, waiting_key text, waiting_cause jsonb)
LANGUAGE sql STABLE
AS $$
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
           (ro.status = 'RUNNING'
            AND (l.run_at IS NULL OR l.run_at <= rollout_clock(as_of))
            AND l.version_key = m.min_key
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
DROP FUNCTION rollout_rate(jsonb, bigint);
DROP TABLE freezes;
DROP TABLE rollout_waves;
ALTER TABLE task_runs DROP COLUMN wave;
DROP INDEX rollouts_progressive;
ALTER TABLE rollouts
    DROP COLUMN strategy, DROP COLUMN wave_count, DROP COLUMN open_wave, DROP COLUMN window_start,
    DROP COLUMN window_end, DROP COLUMN status_reason, DROP COLUMN resumed_at;
