-- +goose Up
-- The rollout gates as parts (docs/rollouts.md, "The gates"; issues 34 and 36). Each gate is
-- one small function that says whether a PENDING task waits on it and, if so, its waiting
-- cause: the reason, a compact key (what a round compares to write only the causes that
-- changed) and, asked for detail, the cause as the API shows it, its words written here
-- once. rollout_wait_for composes them in their order, the first that holds a task winning;
-- rollout_gates applies them to every PENDING task in one promotion round. A new gate is one
-- function here and one line in rollout_wait_for.
--
-- The freeze check is written once, freeze_in_force, for rollouts and device tasks both.
--
-- A gate a rollout does not use costs it nothing: the wave, rate and window details are
-- read only for rollouts that have them, and the per-task work of every gate is a
-- comparison. rollout_gates' plan does not depend on the planner's statistics (it went
-- quadratic on a table not analysed since its rollout was inserted): it runs with nested
-- loops and sequential scans turned off, so its set-level joins are hash joins, its
-- per-rollout lookups (rollouts, waves, freezes) go through their indexes, and the live
-- tasks are read in the order of task_runs_active — one pass, whatever the estimates
-- (bench/README.md, "Plans that do not depend on luck", shows the plans).

-- +goose StatementBegin
CREATE FUNCTION freeze_in_force(of_rollout bigint) RETURNS bigint
LANGUAGE sql STABLE
AS $$
-- freeze_in_force is the freeze that stops new work of a rollout now: the global one first,
-- else the rollout's own (of_rollout NULL: the global one alone, as device tasks ask). NULL:
-- none is in force. Each is a probe of its partial unique index.
SELECT coalesce((SELECT g.id FROM freezes g WHERE g.rollout_id IS NULL AND g.lifted_at IS NULL),
                (SELECT f.id FROM freezes f WHERE f.rollout_id = of_rollout AND f.lifted_at IS NULL))
$$;
-- +goose StatementEnd

CREATE TYPE rollout_wait AS (reason text, key text, cause jsonb);
COMMENT ON COLUMN rollout_waves.status IS 'The wave boundary''s progress, written by the rollout''s workflow: WAITING (an earlier wave is not through yet); RUNNING (open: its tasks may be promoted); BAKING (its tasks all ended DONE or SKIPPED; the next wave waits until bake_until); CHECKING (the bake is over; the health checks run); PASSED (checks passed, or none: the next wave is open); FAILED (a task ended FAILED or CANCELED, failure tasks, or a health check failed, failure health; the rollout was paused, and resuming it takes the wave back to RUNNING or CHECKING).';
COMMENT ON TYPE rollout_wait IS 'A PENDING task''s waiting cause: the gate that holds it (reason), a compact key a round compares to write only the causes that changed, and, asked for detail, the cause as the API shows it (NULL without).';

-- +goose StatementBegin
CREATE FUNCTION rollout_utc(at timestamptz, format text) RETURNS text
LANGUAGE sql STABLE
AS $$
-- rollout_utc writes a time the way causes show it, in UTC.
SELECT to_char(at AT TIME ZONE 'UTC', format)
$$;
-- +goose StatementEnd

-- The gates, in the order rollout_wait_for asks them. Each returns NULL when the task
-- passes it. r is the task's rollout, f the freeze in force (NULL: none), w its rollout's
-- open wave (NULL: a rollout of one wave).

-- +goose StatementBegin
CREATE FUNCTION rollout_gate_freeze(f freezes, detail boolean) RETURNS rollout_wait
LANGUAGE sql STABLE
AS $$
-- freeze: a freeze is in force (freeze_in_force), global or the rollout's own.
SELECT CASE WHEN f.id IS NOT NULL THEN ROW('frozen', 'frozen:' || f.id,
    CASE WHEN detail THEN jsonb_build_object('reason', 'frozen', 'scope', CASE WHEN f.rollout_id IS NULL THEN 'global' ELSE 'rollout' END,
        'freeze_id', f.id, 'why', f.reason, 'frozen_by', f.frozen_by,
        'frozen_at', rollout_utc(f.frozen_at, 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
        'message', CASE WHEN f.rollout_id IS NULL THEN 'frozen (everything) by ' ELSE 'rollout frozen by ' END
                   || f.frozen_by || ': ' || f.reason) END)::rollout_wait END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION rollout_wave_waits(wave integer, r rollouts, w rollout_waves) RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
-- rollout_wave_waits says what a task of wave waits for: an earlier wave to start, or the
-- open wave w to bake, pass its health checks or run; or w failed (its tasks, or its checks).
SELECT CASE
    WHEN wave > r.open_wave + 1 THEN 'earlier_wave'
    WHEN w.status = 'BAKING' THEN 'bake'
    WHEN w.status = 'CHECKING' THEN 'health_checks'
    WHEN w.status = 'FAILED' AND w.failure = 'health' THEN 'health_failed'
    WHEN w.status = 'FAILED' THEN 'tasks_failed'
    ELSE 'wave_running'
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION rollout_gate_wave(wave integer, r rollouts, w rollout_waves, detail boolean) RETURNS rollout_wait
LANGUAGE sql STABLE
AS $$
-- wave (W1): the task's wave is after its rollout's open wave.
SELECT CASE WHEN wave > r.open_wave THEN ROW('wave',
    'wave:' || wave || ':' || r.open_wave || ':' || rollout_wave_waits(wave, r, w)
        || coalesce(':' || extract(epoch FROM w.bake_until)::bigint, '')
        || CASE WHEN rollout_wave_waits(wave, r, w) IN ('health_failed', 'tasks_failed') THEN ':' || left(md5(w.reason), 12) ELSE '' END,
    CASE WHEN detail THEN jsonb_strip_nulls(jsonb_build_object('reason', 'wave', 'wave', wave, 'open_wave', r.open_wave,
        'waits', rollout_wave_waits(wave, r, w),
        'bake_ends', CASE WHEN rollout_wave_waits(wave, r, w) = 'bake' THEN rollout_utc(w.bake_until, 'YYYY-MM-DD"T"HH24:MI:SS"Z"') END,
        'message', 'wave ' || wave || ' waits: ' || CASE rollout_wave_waits(wave, r, w)
            WHEN 'earlier_wave' THEN 'wave ' || (wave - 1) || ' has not started'
            WHEN 'bake' THEN 'bake ends ' || rollout_utc(w.bake_until, 'HH24:MI') || ' UTC'
            WHEN 'health_checks' THEN 'health checks are running'
            WHEN 'wave_running' THEN 'wave ' || r.open_wave || ' is running'
            ELSE w.reason
        END)) END)::rollout_wait END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION rollout_gate_paused(r rollouts, detail boolean) RETURNS rollout_wait
LANGUAGE sql STABLE
AS $$
-- paused: the rollout is not RUNNING (paused, by an operator or by the engine, which says
-- why in status_reason; or canceled).
SELECT CASE WHEN r.status <> 'RUNNING' THEN ROW('rollout_paused',
    'rollout_paused' || CASE WHEN r.status_reason <> '' THEN ':' || left(md5(r.status_reason), 12) ELSE '' END,
    CASE WHEN NOT detail THEN NULL
         WHEN r.status_reason = '' THEN jsonb_build_object('reason', 'rollout_paused')
         ELSE jsonb_build_object('reason', 'rollout_paused', 'why', r.status_reason, 'message', 'rollout paused: ' || r.status_reason)
    END)::rollout_wait END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION rollout_gate_window(r rollouts, clock timestamptz, detail boolean) RETURNS rollout_wait
LANGUAGE sql STABLE
AS $$
-- window: the rollout has windows and the promotion clock is outside the span that holds it
-- or opens next ([window_start, window_end), kept current by the round).
SELECT CASE WHEN r.window_end IS NOT NULL AND NOT (clock >= r.window_start AND clock < r.window_end) THEN ROW('window',
    'window:' || coalesce(extract(epoch FROM r.window_start)::bigint::text, ''),
    CASE WHEN detail THEN jsonb_strip_nulls(jsonb_build_object('reason', 'window',
        'opens_at', CASE WHEN r.window_start > clock THEN rollout_utc(r.window_start, 'YYYY-MM-DD"T"HH24:MI:SS"Z"') END,
        'message', 'outside every window' || CASE WHEN r.window_start > clock
            THEN '; the next opens ' || rollout_utc(r.window_start, 'YYYY-MM-DD HH24:MI') || ' UTC' ELSE '' END)) END)::rollout_wait END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION rollout_gate_time(run_at timestamptz, clock timestamptz, detail boolean) RETURNS rollout_wait
LANGUAGE sql STABLE
AS $$
-- time: the task's run_at is ahead of the promotion clock.
SELECT CASE WHEN run_at > clock THEN ROW('run_at', 'run_at',
    CASE WHEN detail THEN jsonb_build_object('reason', 'run_at', 'run_at', rollout_utc(run_at, 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')) END)::rollout_wait END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION rollout_gate_version(before_id bigint, before_version text, detail boolean) RETURNS rollout_wait
LANGUAGE sql STABLE
AS $$
-- version order (R2): a live task on the task's database has a smaller version. The cause
-- names the one it waits for directly: the task with the next smaller live version (before_id
-- at before_version, the smallest id among equals; NULL: none, the task heads its
-- database). Named so, a cause stays true and unchanged while the versions before it run
-- one after the other, and a round writes it again only when that task is gone.
SELECT CASE WHEN before_id IS NOT NULL THEN ROW('version', 'version:' || before_id,
    CASE WHEN detail THEN jsonb_build_object('reason', 'version', 'blocked_by_task', before_id, 'blocked_by_version', before_version) END)::rollout_wait END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION rollout_gate_ddl(seq boolean, busy_id bigint, busy_seq boolean, detail boolean) RETURNS rollout_wait
LANGUAGE sql STABLE
AS $$
-- one schema change per database (R1): task busy_id keeps the database busy (busy_seq: it is
-- DDL/SDL) and it or this task (seq) is DDL/SDL.
SELECT CASE WHEN busy_id IS NOT NULL AND (busy_seq OR seq) THEN ROW('database_busy', 'database_busy:' || busy_id,
    CASE WHEN detail THEN jsonb_build_object('reason', 'database_busy', 'busy_task', busy_id) END)::rollout_wait END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION rollout_gate_parallel(r rollouts, active bigint, detail boolean) RETURNS rollout_wait
LANGUAGE sql STABLE
AS $$
-- parallel limit (R3): the rollout's AVAILABLE and RUNNING tasks (active) fill its limit.
SELECT CASE WHEN active >= r.parallel_limit THEN ROW('parallel_limit', 'parallel_limit:' || r.parallel_limit,
    CASE WHEN detail THEN jsonb_build_object('reason', 'parallel_limit', 'limit', r.parallel_limit) END)::rollout_wait END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION rollout_gate_rate(per_minute bigint, started bigint, detail boolean) RETURNS rollout_wait
LANGUAGE sql STABLE
AS $$
-- rate: the rollout has a rate (per_minute now: rollout_rate) and started that many
-- tasks in the last minute.
SELECT CASE WHEN started >= per_minute THEN ROW('rate', 'rate:' || per_minute,
    CASE WHEN detail THEN jsonb_build_object('reason', 'rate', 'per_minute', per_minute,
        'message', 'rate: ' || per_minute || ' tasks started in the last minute') END)::rollout_wait END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION rollout_gate_window_change(r rollouts, clock timestamptz, OUT at timestamptz, OUT why text)
LANGUAGE sql STABLE
AS $$
-- When the gates bound by time may next let a PENDING task through, by the promotion
-- clock (the promoter arms its timer for the earliest: store/queries/rollouts.sql,
-- NextGateChange). The time gate: the task's run_at. The window gate: its span opening,
-- or the open span ending (the round then moves it to the next span); NULL: no windows.
-- The rate gate: the rollout's oldest start of the last minute leaving the minute.
SELECT CASE WHEN r.window_end > clock THEN CASE WHEN r.window_start > clock THEN r.window_start ELSE r.window_end END END,
       CASE WHEN r.window_start > clock THEN 'window opens' ELSE 'window ends' END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION rollout_gate_rate_change(of_rollout bigint, clock timestamptz) RETURNS timestamptz
LANGUAGE sql STABLE
AS $$
SELECT min(p.promoted_at) + interval '1 minute' FROM task_runs p
WHERE p.rollout_id = of_rollout AND p.promoted_at > clock - interval '1 minute'
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION rollout_next_gate_change(clock timestamptz, OUT at timestamptz, OUT why text)
LANGUAGE sql STABLE
AS $$
-- rollout_next_gate_change is the earliest of those ahead, and which gate: the time gate's
-- next run_at, or for a running rollout with PENDING tasks and a strategy, its window
-- gate's or its rate gate's next change. (A bake's end is its rollout workflow's own timer.)
WITH progressive AS (
    SELECT r FROM rollouts r
    WHERE r.strategy IS NOT NULL AND r.status = 'RUNNING'
      AND EXISTS (SELECT 1 FROM task_runs t WHERE t.rollout_id = r.id AND t.status = 'PENDING')
)
SELECT x.at, x.why FROM (
    SELECT min(t.run_at) AS at, 'run_at' AS why FROM task_runs t WHERE t.status = 'PENDING' AND t.run_at > clock
    UNION ALL
    SELECT w.at, w.why FROM progressive p, rollout_gate_window_change(p.r, clock) w
    UNION ALL
    SELECT rollout_gate_rate_change((p.r).id, clock), 'rate' FROM progressive p WHERE (p.r).strategy->'rate' IS NOT NULL
) x
WHERE x.at IS NOT NULL
ORDER BY x.at LIMIT 1
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION rollout_may_start(of_rollout bigint) RETURNS boolean
LANGUAGE sql STABLE
AS $$
-- rollout_may_start says whether a rollout may start new work now: what the claim asks of
-- it (store/queries/rollouts.sql, ClaimTasks), the paused and freeze gates of a promotion.
SELECT rollout_gate_paused(r, false) IS NULL AND freeze_in_force(r.id) IS NULL FROM rollouts r WHERE r.id = of_rollout
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION rollout_wait_for(clock timestamptz, r rollouts, f freezes, w rollout_waves,
                                 wave integer, run_at timestamptz, seq boolean, before_id bigint, before_version text,
                                 busy_id bigint, busy_seq boolean, active bigint, per_minute bigint, started bigint,
                                 detail boolean) RETURNS rollout_wait
LANGUAGE sql STABLE
AS $$
-- rollout_wait_for is a PENDING task's waiting cause: the gates in order, the first that
-- holds it winning, or queued (it passes them all and waits for the next round). The same
-- composition decides eligibility (the round's start), the round's own picks and the causes
-- left after it, told what keeps the database busy and how full the rollout is at that
-- point (busy_id NULL: nothing; active, per_minute or started NULL: that gate not asked).
SELECT coalesce(
    rollout_gate_freeze(f, detail),
    rollout_gate_wave(wave, r, w, detail),
    rollout_gate_paused(r, detail),
    rollout_gate_window(r, clock, detail),
    rollout_gate_time(run_at, clock, detail),
    rollout_gate_version(before_id, before_version, detail),
    rollout_gate_ddl(seq, busy_id, busy_seq, detail),
    rollout_gate_parallel(r, active, detail),
    rollout_gate_rate(per_minute, started, detail),
    ROW('queued', 'queued', CASE WHEN detail THEN jsonb_build_object('reason', 'queued') END)::rollout_wait)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION rollout_gates(as_of timestamptz, with_causes boolean)
RETURNS TABLE (id bigint, rollout_id bigint, promote boolean, waiting_key text, waiting_cause jsonb)
LANGUAGE plpgsql STABLE
SET enable_nestloop = off
SET enable_seqscan = off
SET enable_bitmapscan = off
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $fn$
-- rollout_gates is one promotion round's verdict, the statements PromoteTasks and
-- PromoteHeads apply (store/queries/rollouts.sql) under the promotion advisory lock
-- (store/rollouts_promotion.go): the tasks to promote (promote true) and, with
-- with_causes, every other PENDING task whose waiting cause changed (promote false, its
-- cause as of after the round; an unchanged cause is left out). Without, only the heads of
-- each database (its smallest live version: no other task can pass the version gate) are
-- looked at: the same promotions, cheaper. A round:
--   1. every PENDING task meets the gates with the database and rollout as they are;
--   2. those that pass all are picked per database in id order: a DDL/SDL task alone and
--      first, or the DML/OTHER tasks before the first DDL/SDL one (the DDL gate, against
--      the candidates before it);
--   3. the picked are promoted per rollout in version order while the parallel limit and
--      the rate allow (their gates, against the ones promoted before it);
--   4. the others' causes are the gates as of after the round (the promoted count as active).
-- Its plan does not depend on the statistics (the SET clauses above): with nested loops
-- off its joins are hash joins, with sequential and bitmap scans off the live tasks are
-- read in one ordered pass of task_runs_active, and each rollout is read by its key, once;
-- one generic plan serves every call of a session.
DECLARE
    clock timestamptz := rollout_clock(as_of);
BEGIN
RETURN QUERY
WITH ordered AS MATERIALIZED (
    -- With causes: every live task, in the order of task_runs_active (per database, by
    -- version), with its place among its database's versions and the task it waits for
    -- directly (the smallest id of the next smaller version), in one pass.
    SELECT t.id, t.rollout_id, t.database, t.version_key, t.status <> 'PENDING' AS active, t.run_at, t.waiting_key, t.wave,
           t.type IN ('DDL', 'SDL') AS seq, rank() OVER db AS rank,
           min(t.id) OVER before AS before_id, min(t.version) OVER before AS before_version
    FROM task_runs t
    WHERE with_causes AND t.status IN ('PENDING', 'AVAILABLE', 'RUNNING')
    WINDOW db AS (PARTITION BY t.database ORDER BY t.version_key),
           before AS (db GROUPS BETWEEN 1 PRECEDING AND 1 PRECEDING)
),
head_rows AS MATERIALIZED (
    -- The live tasks a promotion decides with: each database's heads (its smallest live
    -- version, R2; ties included) and the AVAILABLE and RUNNING tasks (R1, R3). Without
    -- causes, read in one pass of task_runs_active in its order.
    SELECT o.id, o.rollout_id, o.database, o.version_key, o.active, o.run_at, o.waiting_key, o.wave, o.seq, o.rank = 1 AS head
    FROM ordered o WHERE o.rank = 1 OR o.active
    UNION ALL
    SELECT h.id, h.rollout_id, h.database, h.version_key, h.active, h.run_at, h.waiting_key, h.wave, h.seq, h.rank = 1
    FROM (SELECT t.id, t.rollout_id, t.database, t.version_key, t.status <> 'PENDING' AS active, t.run_at, t.waiting_key, t.wave,
                 t.type IN ('DDL', 'SDL') AS seq, rank() OVER (PARTITION BY t.database ORDER BY t.version_key) AS rank
          FROM task_runs t WHERE NOT with_causes AND t.status IN ('PENDING', 'AVAILABLE', 'RUNNING')) h
    WHERE h.rank = 1 OR h.active
),
busy AS MATERIALIZED (
    -- Per database, the task keeping it busy (R1): a DDL/SDL one first.
    SELECT DISTINCT ON (h.database) h.database, h.id AS busy_id, h.seq AS busy_seq
    FROM head_rows h WHERE h.active ORDER BY h.database, h.seq DESC, h.id
),
ro AS MATERIALIZED (
    -- Each rollout with PENDING tasks as its gates read it: its row, its active tasks, the
    -- freeze in force and, only when it has them, its open wave and its rate (the rate now
    -- after its DONE tasks, and the tasks it started in the last minute). Each a probe of
    -- an index by the rollout's id.
    SELECT x.id, x.r, coalesce(a.n, 0) AS active,
           (SELECT f FROM freezes f WHERE f.id = freeze_in_force(x.id)) AS f,
           CASE WHEN (x.r).wave_count > 1
                THEN (SELECT w FROM rollout_waves w WHERE w.rollout_id = x.id AND w.wave = (x.r).open_wave) END AS w,
           CASE WHEN (x.r).strategy->'rate' IS NOT NULL THEN rollout_rate((x.r).strategy->'rate',
               (SELECT count(*) FROM task_runs d WHERE d.rollout_id = x.id AND d.status = 'DONE')) END AS per_minute,
           CASE WHEN (x.r).strategy->'rate' IS NOT NULL THEN (SELECT count(*) FROM task_runs p
               WHERE p.rollout_id = x.id AND p.promoted_at > clock - interval '1 minute') END AS started
    FROM (SELECT p.rollout_id AS id, (SELECT r FROM rollouts r WHERE r.id = p.rollout_id) AS r
          FROM (SELECT h.rollout_id FROM head_rows h WHERE NOT h.active
                UNION SELECT o.rollout_id FROM ordered o WHERE NOT o.active) p
          OFFSET 0) x  -- (each rollout's row read once)
    LEFT JOIN (SELECT h.rollout_id, count(*) AS n FROM head_rows h WHERE h.active GROUP BY h.rollout_id) a ON a.rollout_id = x.id
),
cand AS MATERIALIZED (
    -- 1. The PENDING heads, each with the first gate that holds it as its database and
    -- rollout are now (the parallel limit and the rate apart: 3.); 'queued' passes.
    SELECT c.id, c.rollout_id, c.database, c.version_key, c.run_at, c.waiting_key, c.wave, c.seq, b.busy_id, b.busy_seq,
           rollout_wait_for(clock, ro.r, ro.f, ro.w, c.wave, c.run_at, c.seq, NULL, NULL, b.busy_id, b.busy_seq,
                            NULL, NULL, NULL, false) AS wait
    FROM head_rows c
    JOIN ro ON ro.id = c.rollout_id
    LEFT JOIN busy b ON b.database = c.database
    WHERE c.head AND NOT c.active
),
picked AS (
    -- 2. Per database in id order, the DDL gate against the candidates before each.
    SELECT c.id, c.rollout_id, c.database, c.seq, c.version_key
    FROM (SELECT p.*, min(p.id) OVER earlier AS earlier_id, bool_or(p.seq) OVER earlier AS earlier_seq
          FROM cand p WHERE (p.wait).reason = 'queued'
          WINDOW earlier AS (PARTITION BY p.database ORDER BY p.id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)) c
    WHERE rollout_gate_ddl(c.seq, c.earlier_id, c.earlier_seq, false) IS NULL
),
promoted AS MATERIALIZED (
    -- 3. Per rollout in version order, the parallel limit and the rate against the tasks
    -- promoted before each.
    SELECT k.id, k.rollout_id, k.database, k.seq
    FROM (SELECT c.*, ro.r, ro.active, ro.per_minute, ro.started,
                 row_number() OVER (PARTITION BY c.rollout_id ORDER BY c.version_key, c.id) - 1 AS before
          FROM picked c JOIN ro ON ro.id = c.rollout_id) k
    WHERE rollout_gate_parallel(k.r, k.active + k.before, false) IS NULL
      AND rollout_gate_rate(k.per_minute, k.started + k.before, false) IS NULL
),
after AS (
    -- 4. The heads left PENDING, with the database and the rollout as the round leaves
    -- them (the promoted tasks busy and active); a cause from a gate before the DDL gate
    -- does not depend on the round and stays.
    SELECT p.id, p.rollout_id, p.waiting_key, p.wave, p.run_at, p.seq, ro.r, ro.f, ro.w, ro.per_minute,
           coalesce(least(CASE WHEN p.busy_seq THEN p.busy_id END, b.seq_id), least(p.busy_id, b.any_id)) AS busy_id,
           p.busy_seq OR b.seq_id IS NOT NULL AS busy_seq,
           ro.active + coalesce(n.promoted, 0) AS active, ro.started + coalesce(n.promoted, 0) AS started,
           CASE WHEN (p.wait).reason IN ('database_busy', 'queued') THEN NULL ELSE p.wait END AS wait
    FROM cand p
    JOIN ro ON ro.id = p.rollout_id
    LEFT JOIN (SELECT y.database, min(y.id) FILTER (WHERE y.seq) AS seq_id, min(y.id) AS any_id FROM promoted y GROUP BY y.database) b
           ON b.database = p.database
    LEFT JOIN (SELECT y.rollout_id, count(*) AS promoted FROM promoted y GROUP BY y.rollout_id) n ON n.rollout_id = p.rollout_id
    WHERE with_causes AND NOT EXISTS (SELECT 1 FROM promoted y WHERE y.id = p.id)
),
caused AS (
    SELECT a.*, coalesce(a.wait, rollout_wait_for(clock, a.r, a.f, a.w, a.wave, a.run_at, a.seq, NULL, NULL, a.busy_id, a.busy_seq,
                                                  a.active, a.per_minute, a.started, false)) AS after_wait
    FROM after a
),
others AS (
    -- The PENDING tasks behind their database's head: held by the version gate or a gate
    -- before it, which the round does not change.
    SELECT o.id, o.rollout_id, o.waiting_key, o.wave, o.run_at, o.before_id, o.before_version, ro.r, ro.f, ro.w,
           rollout_wait_for(clock, ro.r, ro.f, ro.w, o.wave, o.run_at, false, o.before_id, o.before_version,
                            NULL, NULL, NULL, NULL, NULL, false) AS wait
    FROM ordered o
    JOIN ro ON ro.id = o.rollout_id
    WHERE o.rank > 1 AND NOT o.active
)
SELECT y.id, y.rollout_id, true, NULL::text, NULL::jsonb
FROM promoted y
UNION ALL
SELECT c.id, c.rollout_id, false, (c.after_wait).key,
       (rollout_wait_for(clock, c.r, c.f, c.w, c.wave, c.run_at, c.seq, NULL, NULL, c.busy_id, c.busy_seq,
                         c.active, c.per_minute, c.started, true)).cause
FROM caused c
WHERE (c.after_wait).key IS DISTINCT FROM c.waiting_key
UNION ALL
SELECT o.id, o.rollout_id, false, (o.wait).key,
       (rollout_wait_for(clock, o.r, o.f, o.w, o.wave, o.run_at, false, o.before_id, o.before_version,
                         NULL, NULL, NULL, NULL, NULL, true)).cause
FROM others o
WHERE (o.wait).key IS DISTINCT FROM o.waiting_key;
END
$fn$;
-- +goose StatementEnd


-- device_results_record (first written in 00092) asks the one freeze check: a result of a
-- device task decided in the group commit only while no freeze holds. Otherwise unchanged.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION device_results_record(ids bigint[], attempts integer[], agent_pcs text[], token_ids bigint[],
                                      keys text[], paths text[], hashes bytea[], claim_next boolean[])
RETURNS TABLE (n integer, verdict text, pc_name text, task_id bigint, pc_id bigint, answer jsonb,
               next_payload jsonb, stored_status integer, stored_content_type text, stored_body bytea,
               created_id bigint, created_status text, left_on_pc bigint, key_stored boolean)
LANGUAGE plpgsql AS $$
DECLARE
    checked device_result_check[];
BEGIN
    -- 1. The checks. The lookups by key are LATERAL … OFFSET 0: one index probe per
    -- request, whatever the tables' sizes were when the cached plan was made.
    checked := ARRAY(
        SELECT ROW(req.n, req.claim_next, req.token_id, req.key, req.path, req.hash,
                   x.id, x.task_id, x.pc_id, x.pc_name,
                   req.agent_pc <> '' AND x.pc_name <> req.agent_pc,
                   k.same_request IS NOT NULL, k.same_request, k.status, k.content_type, k.body, k.answer,
                   c.id IS NOT NULL)::device_result_check
        FROM unnest(ids, attempts, agent_pcs, token_ids, keys, paths, hashes, claim_next)
             WITH ORDINALITY AS req (id, attempt, agent_pc, token_id, key, path, hash, claim_next, n)
        LEFT JOIN LATERAL (
            SELECT td.id, td.task_id, td.pc_id, p.name AS pc_name
            FROM task_devices td JOIN pcs p ON p.id = td.pc_id
            WHERE td.id = req.id
            OFFSET 0) x ON true
        LEFT JOIN LATERAL (
            SELECT k.request_hash = req.hash AS same_request, k.status, k.content_type, k.body, k.answer
            FROM idempotency_keys k
            WHERE req.key <> '' AND k.token_id = req.token_id AND k.key = req.key AND k.method = 'POST' AND k.path = req.path
            OFFSET 0) k ON true
        LEFT JOIN LATERAL (
            -- (… IS TRUE: read by the primary key, never by scanning a partial index on
            -- the status, however small the planner believes it.)
            SELECT td.id FROM task_devices td JOIN tasks t ON t.id = td.task_id
            WHERE td.id = x.id AND (td.status IN ('SENT', 'ACKED')) IS TRUE
              AND (req.attempt = 0 OR td.attempt = req.attempt)
              AND t.status = 'running' AND t.target_count IS NULL AND t.abort_min_executed IS NULL
              -- a task with a rate or windows, or the global freeze, sends only through the
              -- claim (its gate): the general path records such a result, without a next.
              AND t.rate IS NULL AND t.windows IS NULL
              AND freeze_in_force(NULL) IS NULL
              AND (req.agent_pc = '' OR x.pc_name = req.agent_pc)
              AND k.same_request IS NULL
            FOR UPDATE OF td SKIP LOCKED) c ON true
        ORDER BY req.n);

    -- 2. The successes.
    PERFORM 1 FROM device_attempts_succeed(ARRAY(SELECT c.execution_id FROM unnest(checked) c WHERE c.recording));

    -- 3. Their slots refilled, each execution handed out to the request that asks.
    PERFORM 1
    FROM (SELECT array_agg(td.pc_id ORDER BY td.pc_id, td.slot) AS pcs, array_agg(td.slot ORDER BY td.pc_id, td.slot) AS slots,
                 array_agg(c.claim_next ORDER BY td.pc_id, td.slot) AS hand_out
          FROM unnest(checked) c JOIN task_devices td ON td.id = c.execution_id
          WHERE c.recording) f
    CROSS JOIN LATERAL device_slots_fill(f.pcs, f.slots, f.hand_out) s;

    -- 4. The answers, read as the steps left the rows; the keys stored with them.
    RETURN QUERY
    WITH c AS (
        SELECT * FROM unnest(checked)
    ), recorded AS (
        -- Each recorded execution as the result left it, and its slot's next execution.
        SELECT c.n, done.id, done.task_id, done.pc_id, done.slot, nx.id AS next_id, nx.status AS next_status,
               jsonb_build_object(
                   'done', jsonb_build_object(
                       'id', done.id, 'task_id', done.task_id, 'device_id', done.device_id, 'pc_id', done.pc_id,
                       'slot', done.slot, 'status', done.status, 'attempt', done.attempt,
                       'max_attempts', done.max_attempts, 'error', done.error, 'created_at', done.created_at,
                       'sent_at', done.sent_at, 'acked_at', done.acked_at, 'completed_at', done.completed_at,
                       'timeout_at', done.timeout_at, 'device_serial', dd.serial, 'pc_name', c.pc_name),
                   'next', CASE WHEN nx.status = 'SENT' AND c.claim_next THEN jsonb_build_object(
                       'id', nx.id, 'task_id', nx.task_id, 'slot', nx.slot, 'attempt', nx.attempt,
                       'max_attempts', nx.max_attempts, 'sent_at', nx.sent_at, 'timeout_at', nx.timeout_at,
                       'device_serial', nd.serial) END
               ) AS answer
        FROM c
        JOIN task_devices done ON done.id = c.execution_id
        JOIN devices dd ON dd.id = done.device_id
        LEFT JOIN task_devices nx ON nx.pc_id = done.pc_id AND nx.slot = done.slot AND nx.holds_slot
        LEFT JOIN devices nd ON nd.id = nx.device_id
        WHERE c.recording
    ), left_on_pc AS MATERIALIZED (
        -- What each PC still runs of the task as this statement sees it (0: the PC's share
        -- may be over). Concurrent writers are not seen: the caller counts again after the
        -- commit when this is not 0 and nothing was refilled.
        SELECT r.pc_id, device_pc_share_left(r.pc_id, r.task_id) AS executions
        FROM (SELECT DISTINCT recorded.pc_id, recorded.task_id FROM recorded) r
    ), stored AS (
        INSERT INTO idempotency_keys (token_id, key, method, path, request_hash, status, answer)
        SELECT c.token_id, c.key, 'POST', c.path, c.hash, 200, recorded.answer
        FROM recorded JOIN c ON c.n = recorded.n
        WHERE c.key <> ''
        ON CONFLICT DO NOTHING
        RETURNING token_id, key, path
    )
    SELECT c.n::integer,
           (CASE
                WHEN c.execution_id IS NULL THEN 'not_found'
                WHEN c.forbidden THEN 'forbidden'
                WHEN c.seen AND NOT c.same_request THEN 'key_reused'
                WHEN c.seen AND c.stored_status = 0 THEN 'key_in_progress'
                WHEN c.seen THEN 'replayed'
                WHEN c.recording THEN 'recorded'
                ELSE 'undecided'
            END)::text,
           coalesce(c.pc_name, '')::text,
           coalesce(c.task_id, 0)::bigint,
           coalesce(c.pc_id, 0)::bigint,
           coalesce(recorded.answer, c.stored_answer),
           -- The next execution's payload, read here rather than kept with the key: a
           -- task's payload never changes.
           nt.payload,
           coalesce(c.stored_status, 0)::integer,
           coalesce(c.stored_content_type, '')::text,
           coalesce(c.stored_body, ''::bytea),
           coalesce(recorded.next_id, 0)::bigint,
           coalesce(recorded.next_status, '')::text,
           coalesce(l.executions, 0)::bigint,
           (stored.key IS NOT NULL)::boolean
    FROM c
    LEFT JOIN recorded ON recorded.n = c.n
    LEFT JOIN left_on_pc l ON l.pc_id = recorded.pc_id
    LEFT JOIN stored ON stored.token_id = c.token_id AND stored.key = c.key AND stored.path = c.path
    LEFT JOIN tasks nt ON nt.id = (coalesce(recorded.answer, c.stored_answer) -> 'next' ->> 'task_id')::bigint
    ORDER BY c.n;
END $$;
-- +goose StatementEnd

-- +goose Down
COMMENT ON COLUMN rollout_waves.status IS NULL;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION device_results_record(ids bigint[], attempts integer[], agent_pcs text[], token_ids bigint[],
                                      keys text[], paths text[], hashes bytea[], claim_next boolean[])
RETURNS TABLE (n integer, verdict text, pc_name text, task_id bigint, pc_id bigint, answer jsonb,
               next_payload jsonb, stored_status integer, stored_content_type text, stored_body bytea,
               created_id bigint, created_status text, left_on_pc bigint, key_stored boolean)
LANGUAGE plpgsql AS $$
DECLARE
    checked device_result_check[];
BEGIN
    -- 1. The checks. The lookups by key are LATERAL … OFFSET 0: one index probe per
    -- request, whatever the tables' sizes were when the cached plan was made.
    checked := ARRAY(
        SELECT ROW(req.n, req.claim_next, req.token_id, req.key, req.path, req.hash,
                   x.id, x.task_id, x.pc_id, x.pc_name,
                   req.agent_pc <> '' AND x.pc_name <> req.agent_pc,
                   k.same_request IS NOT NULL, k.same_request, k.status, k.content_type, k.body, k.answer,
                   c.id IS NOT NULL)::device_result_check
        FROM unnest(ids, attempts, agent_pcs, token_ids, keys, paths, hashes, claim_next)
             WITH ORDINALITY AS req (id, attempt, agent_pc, token_id, key, path, hash, claim_next, n)
        LEFT JOIN LATERAL (
            SELECT td.id, td.task_id, td.pc_id, p.name AS pc_name
            FROM task_devices td JOIN pcs p ON p.id = td.pc_id
            WHERE td.id = req.id
            OFFSET 0) x ON true
        LEFT JOIN LATERAL (
            SELECT k.request_hash = req.hash AS same_request, k.status, k.content_type, k.body, k.answer
            FROM idempotency_keys k
            WHERE req.key <> '' AND k.token_id = req.token_id AND k.key = req.key AND k.method = 'POST' AND k.path = req.path
            OFFSET 0) k ON true
        LEFT JOIN LATERAL (
            -- (… IS TRUE: read by the primary key, never by scanning a partial index on
            -- the status, however small the planner believes it.)
            SELECT td.id FROM task_devices td JOIN tasks t ON t.id = td.task_id
            WHERE td.id = x.id AND (td.status IN ('SENT', 'ACKED')) IS TRUE
              AND (req.attempt = 0 OR td.attempt = req.attempt)
              AND t.status = 'running' AND t.target_count IS NULL AND t.abort_min_executed IS NULL
              -- a task with a rate or windows, or the global freeze, sends only through the
              -- claim (its gate): the general path records such a result, without a next.
              AND t.rate IS NULL AND t.windows IS NULL
              AND NOT EXISTS (SELECT 1 FROM freezes f WHERE f.rollout_id IS NULL AND f.lifted_at IS NULL)
              AND (req.agent_pc = '' OR x.pc_name = req.agent_pc)
              AND k.same_request IS NULL
            FOR UPDATE OF td SKIP LOCKED) c ON true
        ORDER BY req.n);

    -- 2. The successes.
    PERFORM 1 FROM device_attempts_succeed(ARRAY(SELECT c.execution_id FROM unnest(checked) c WHERE c.recording));

    -- 3. Their slots refilled, each execution handed out to the request that asks.
    PERFORM 1
    FROM (SELECT array_agg(td.pc_id ORDER BY td.pc_id, td.slot) AS pcs, array_agg(td.slot ORDER BY td.pc_id, td.slot) AS slots,
                 array_agg(c.claim_next ORDER BY td.pc_id, td.slot) AS hand_out
          FROM unnest(checked) c JOIN task_devices td ON td.id = c.execution_id
          WHERE c.recording) f
    CROSS JOIN LATERAL device_slots_fill(f.pcs, f.slots, f.hand_out) s;

    -- 4. The answers, read as the steps left the rows; the keys stored with them.
    RETURN QUERY
    WITH c AS (
        SELECT * FROM unnest(checked)
    ), recorded AS (
        -- Each recorded execution as the result left it, and its slot's next execution.
        SELECT c.n, done.id, done.task_id, done.pc_id, done.slot, nx.id AS next_id, nx.status AS next_status,
               jsonb_build_object(
                   'done', jsonb_build_object(
                       'id', done.id, 'task_id', done.task_id, 'device_id', done.device_id, 'pc_id', done.pc_id,
                       'slot', done.slot, 'status', done.status, 'attempt', done.attempt,
                       'max_attempts', done.max_attempts, 'error', done.error, 'created_at', done.created_at,
                       'sent_at', done.sent_at, 'acked_at', done.acked_at, 'completed_at', done.completed_at,
                       'timeout_at', done.timeout_at, 'device_serial', dd.serial, 'pc_name', c.pc_name),
                   'next', CASE WHEN nx.status = 'SENT' AND c.claim_next THEN jsonb_build_object(
                       'id', nx.id, 'task_id', nx.task_id, 'slot', nx.slot, 'attempt', nx.attempt,
                       'max_attempts', nx.max_attempts, 'sent_at', nx.sent_at, 'timeout_at', nx.timeout_at,
                       'device_serial', nd.serial) END
               ) AS answer
        FROM c
        JOIN task_devices done ON done.id = c.execution_id
        JOIN devices dd ON dd.id = done.device_id
        LEFT JOIN task_devices nx ON nx.pc_id = done.pc_id AND nx.slot = done.slot AND nx.holds_slot
        LEFT JOIN devices nd ON nd.id = nx.device_id
        WHERE c.recording
    ), left_on_pc AS MATERIALIZED (
        -- What each PC still runs of the task as this statement sees it (0: the PC's share
        -- may be over). Concurrent writers are not seen: the caller counts again after the
        -- commit when this is not 0 and nothing was refilled.
        SELECT r.pc_id, device_pc_share_left(r.pc_id, r.task_id) AS executions
        FROM (SELECT DISTINCT recorded.pc_id, recorded.task_id FROM recorded) r
    ), stored AS (
        INSERT INTO idempotency_keys (token_id, key, method, path, request_hash, status, answer)
        SELECT c.token_id, c.key, 'POST', c.path, c.hash, 200, recorded.answer
        FROM recorded JOIN c ON c.n = recorded.n
        WHERE c.key <> ''
        ON CONFLICT DO NOTHING
        RETURNING token_id, key, path
    )
    SELECT c.n::integer,
           (CASE
                WHEN c.execution_id IS NULL THEN 'not_found'
                WHEN c.forbidden THEN 'forbidden'
                WHEN c.seen AND NOT c.same_request THEN 'key_reused'
                WHEN c.seen AND c.stored_status = 0 THEN 'key_in_progress'
                WHEN c.seen THEN 'replayed'
                WHEN c.recording THEN 'recorded'
                ELSE 'undecided'
            END)::text,
           coalesce(c.pc_name, '')::text,
           coalesce(c.task_id, 0)::bigint,
           coalesce(c.pc_id, 0)::bigint,
           coalesce(recorded.answer, c.stored_answer),
           -- The next execution's payload, read here rather than kept with the key: a
           -- task's payload never changes.
           nt.payload,
           coalesce(c.stored_status, 0)::integer,
           coalesce(c.stored_content_type, '')::text,
           coalesce(c.stored_body, ''::bytea),
           coalesce(recorded.next_id, 0)::bigint,
           coalesce(recorded.next_status, '')::text,
           coalesce(l.executions, 0)::bigint,
           (stored.key IS NOT NULL)::boolean
    FROM c
    LEFT JOIN recorded ON recorded.n = c.n
    LEFT JOIN left_on_pc l ON l.pc_id = recorded.pc_id
    LEFT JOIN stored ON stored.token_id = c.token_id AND stored.key = c.key AND stored.path = c.path
    LEFT JOIN tasks nt ON nt.id = (coalesce(recorded.answer, c.stored_answer) -> 'next' ->> 'task_id')::bigint
    ORDER BY c.n;
END $$;
-- +goose StatementEnd
DROP FUNCTION rollout_gates(timestamptz, boolean);
-- +goose StatementBegin
CREATE FUNCTION rollout_gates(as_of timestamptz, with_causes boolean)
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
DROP FUNCTION rollout_wait_for(timestamptz, rollouts, freezes, rollout_waves, integer, timestamptz, boolean, bigint, text,
                               bigint, boolean, bigint, bigint, bigint, boolean);
DROP FUNCTION rollout_may_start(bigint);
DROP FUNCTION rollout_next_gate_change(timestamptz);
DROP FUNCTION rollout_gate_rate_change(bigint, timestamptz);
DROP FUNCTION rollout_gate_window_change(rollouts, timestamptz);
DROP FUNCTION rollout_gate_rate(bigint, bigint, boolean);
DROP FUNCTION rollout_gate_parallel(rollouts, bigint, boolean);
DROP FUNCTION rollout_gate_ddl(boolean, bigint, boolean, boolean);
DROP FUNCTION rollout_gate_version(bigint, text, boolean);
DROP FUNCTION rollout_gate_time(timestamptz, timestamptz, boolean);
DROP FUNCTION rollout_gate_window(rollouts, timestamptz, boolean);
DROP FUNCTION rollout_gate_paused(rollouts, boolean);
DROP FUNCTION rollout_gate_wave(integer, rollouts, rollout_waves, boolean);
DROP FUNCTION rollout_wave_waits(integer, rollouts, rollout_waves);
DROP FUNCTION rollout_gate_freeze(freezes, boolean);
DROP FUNCTION rollout_utc(timestamptz, text);
DROP TYPE rollout_wait;
DROP FUNCTION freeze_in_force(bigint);
