-- +goose Up
-- Device dispatch, each step written once (docs/devices.md, "Where each rule lives"). The
-- steps that change executions — handing attempts out, recording a success, filling free
-- slots, canceling — are functions here, and every statement that takes a step calls
-- them: the single-request path (store/devices_*.go) one step per statement, the group
-- commit of agents' successes (device_results_record) all of them in one statement. No
-- statement spells a step out again. migrations/00022_device_rules.sql keeps the
-- deadline rule (attempt_deadline) the hand-out reads.

-- Which devices a refill may take, read from the device's own row (no search):
-- devices.last_task_id is the task of the device's last execution that counts (a canceled
-- one does not), and devices.in_use whether an execution holds the device now
-- (task_devices.holds_slot). Tasks become active one at a time, oldest first (D1), so the
-- running task is the newest task with executions, and a device has run it exactly when
-- last_task_id is its id. The two triggers below keep both columns, whoever writes
-- task_devices; the unique indexes on task_devices still enforce the rules. Before, a
-- refill tested each device of its PC it passed against the task's executions and the
-- device's slot holder (index probes), and the devices before the first free one were all
-- devices the task had run: a PC's k-th refill of a task cost k probes, and a probe of a
-- small partial index could be planned as a scan of all of it.
-- No foreign key on last_task_id: nothing is deleted through it, and a check per execution
-- would share-lock the task's row from every refill.
ALTER TABLE devices ADD COLUMN last_task_id bigint, ADD COLUMN in_use boolean NOT NULL DEFAULT false;
UPDATE devices d
SET last_task_id = (SELECT max(x.task_id) FROM task_devices x WHERE x.device_id = d.id AND x.status <> 'CANCELED'),
    in_use = EXISTS (SELECT 1 FROM task_devices y WHERE y.device_id = d.id AND y.holds_slot);
-- Each execution updates its device's row twice (taken, freed): room on the page keeps
-- those updates HOT.
ALTER TABLE devices SET (fillfactor = 50);

-- +goose StatementBegin
CREATE FUNCTION devices_note_created() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE devices d
    SET last_task_id = CASE WHEN c.status <> 'CANCELED' THEN c.task_id ELSE d.last_task_id END,
        in_use = d.in_use OR c.holds_slot
    FROM created c
    WHERE d.id = c.device_id;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER task_devices_note_created AFTER INSERT ON task_devices
    REFERENCING NEW TABLE AS created FOR EACH STATEMENT EXECUTE FUNCTION devices_note_created();

-- An execution that stops holding its slot frees its device; a canceled one no longer
-- counts as the device's run of its task. (Statuses never go back from final ones.)
-- +goose StatementBegin
CREATE FUNCTION devices_note_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE devices d
    SET in_use = a.holds_slot,
        last_task_id = CASE WHEN a.status = 'CANCELED' AND d.last_task_id = a.task_id THEN NULL ELSE d.last_task_id END
    FROM before b JOIN after a ON a.id = b.id
    WHERE d.id = a.device_id AND b.holds_slot AND NOT a.holds_slot;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER task_devices_note_changed AFTER UPDATE ON task_devices
    REFERENCING OLD TABLE AS before NEW TABLE AS after FOR EACH STATEMENT EXECUTE FUNCTION devices_note_changed();

-- +goose StatementBegin
CREATE FUNCTION devices_note_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE devices d SET in_use = false FROM gone g WHERE d.id = g.device_id AND g.holds_slot;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER task_devices_note_deleted AFTER DELETE ON task_devices
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION devices_note_deleted();

-- The once rule, for the running task: device d is eligible and still owes the task its
-- run. Inlined into the statement that calls it.
CREATE FUNCTION device_owes_run(d devices, running_task bigint) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT d.eligible AND d.last_task_id IS DISTINCT FROM running_task
$$;

-- D2's device: a device a free slot of its PC may get for the running task — it owes the
-- task its run and runs nothing now (a device runs one command at a time). Inlined.
CREATE FUNCTION device_free_for(d devices, running_task bigint) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT device_owes_run(d, running_task) AND NOT d.in_use
$$;

-- The devices the running task for_task may still run on (DeviceTaskProgress asks whether
-- any is left). Valid for the running task only, as device_owes_run.
CREATE OR REPLACE FUNCTION devices_unrun_by(for_task bigint) RETURNS SETOF devices
LANGUAGE sql STABLE AS $$
    SELECT d.* FROM devices d WHERE device_owes_run(d, for_task)
$$;

-- Which devices a free slot may get is now said by device_slots_fill alone.
DROP FUNCTION devices_free_for(bigint, bigint);

-- D2: the numbered slots of PC of_pc a bulk refill fills now: the lowest free ones, as
-- many as the PC's target (min(capacity, eligible devices)) exceeds what runs on it.
CREATE FUNCTION pc_free_slots(of_pc bigint) RETURNS SETOF integer
LANGUAGE sql STABLE AS $$
    SELECT s.n
    FROM pc_device_summary p CROSS JOIN LATERAL generate_series(1, p.device_capacity) AS s (n)
    WHERE p.pc_id = of_pc
      AND NOT EXISTS (SELECT 1 FROM task_devices y WHERE y.pc_id = p.pc_id AND y.slot = s.n AND y.holds_slot)
    ORDER BY s.n
    LIMIT (SELECT GREATEST(q.target - q.running, 0) FROM pc_device_summary q WHERE q.pc_id = of_pc)
$$;

-- What a PC still runs of a task: its executions of the task that hold a slot. 0 once the
-- PC's share of the task is over (then the dispatcher looks at the task).
CREATE FUNCTION device_pc_share_left(of_pc bigint, for_task bigint) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT count(*) FROM task_devices WHERE pc_id = of_pc AND task_id = for_task AND holds_slot
$$;

-- The hand-out (D3): an attempt handed to its agent at `at` is SENT from then on, not
-- acknowledged, and its deadline starts then. A claim hands out executions that wait
-- (device_attempts_hand_out); a refill may create its execution handed out already
-- (device_slots_fill, for a result that asks for its slot's next execution). Both take
-- the attempt's state from here, and both record the SENT event.
CREATE TYPE attempt_hand_out AS (status text, sent_at timestamptz, acked_at timestamptz, timeout_at timestamptz);
CREATE FUNCTION attempt_handed_out(at timestamptz, timeout_ms bigint) RETURNS attempt_hand_out
LANGUAGE sql IMMUTABLE AS $$
    SELECT ROW('SENT', at, NULL, attempt_deadline(at, timeout_ms))::attempt_hand_out
$$;

-- A claim's step: the waiting executions ids (CREATED or RETRY_SCHEDULED; the caller
-- holds their rows) are handed out now, each with its SENT event.
CREATE FUNCTION device_attempts_hand_out(ids bigint[]) RETURNS SETOF task_devices
LANGUAGE sql AS $$
    WITH sent AS (
        UPDATE task_devices td
        SET (status, sent_at, acked_at, timeout_at) =
            (SELECT h.status, h.sent_at, h.acked_at, h.timeout_at FROM attempt_handed_out(clock_timestamp(), t.device_timeout_ms) h)
        FROM tasks t
        WHERE td.id = ANY (ids) AND td.status IN ('CREATED', 'RETRY_SCHEDULED') AND t.id = td.task_id
        RETURNING td.*
    ), ev AS (
        INSERT INTO task_device_events (task_device_id, attempt, type)
        SELECT sent.id, sent.attempt, 'SENT' FROM sent ORDER BY sent.id
    )
    SELECT * FROM sent
$$;

-- A success: the attempts in flight among ids (the caller holds their rows) succeed, each
-- with its SUCCEEDED event. Their slots are free: the caller refills them
-- (device_slots_fill) in the same transaction.
CREATE FUNCTION device_attempts_succeed(ids bigint[]) RETURNS SETOF task_devices
LANGUAGE sql AS $$
    WITH done AS (
        UPDATE task_devices
        SET status = 'SUCCEEDED', completed_at = clock_timestamp(), error = ''
        -- (… IS TRUE: read by the primary key, never by scanning a partial index on
        -- the status, however small the planner believes it.)
        WHERE id = ANY (ids) AND (status IN ('SENT', 'ACKED')) IS TRUE
        RETURNING *
    ), ev AS (
        INSERT INTO task_device_events (task_device_id, attempt, type)
        SELECT done.id, done.attempt, 'SUCCEEDED' FROM done ORDER BY done.id
    )
    SELECT * FROM done
$$;

-- A cancel: the slot-holding executions among ids (with unsent_only, only those not out on
-- a device) are canceled for reason, each with its CANCELED event. Rows another
-- transaction changed meanwhile are judged as they are now.
CREATE FUNCTION device_executions_cancel(ids bigint[], reason text, unsent_only boolean) RETURNS SETOF task_devices
LANGUAGE sql AS $$
    WITH c AS (
        UPDATE task_devices
        SET status = 'CANCELED', completed_at = now(), error = reason
        WHERE id = ANY (ids) AND holds_slot AND (NOT unsent_only OR status IN ('CREATED', 'RETRY_SCHEDULED'))
        RETURNING *
    ), ev AS (
        INSERT INTO task_device_events (task_device_id, attempt, type, detail)
        SELECT c.id, c.attempt, 'CANCELED', reason FROM c ORDER BY c.id
    )
    SELECT * FROM c
$$;

-- D2, the one way an execution is created: each free numbered slot given (slot slots[i]
-- of PC pcs[i]) gets the running task's next execution there, on a device of its PC that
-- owes the task its run and runs nothing now, lowest device ids first, a PC's slots in
-- the order given, within the task's target_count (slots in the order given; the caller
-- holds the task's row when it has one); with hand_out[i] that execution is handed out at
-- once (attempt_handed_out). Every creation records its CREATED event (and SENT when
-- handed out).
--
-- Each device is locked as it is taken, skipping those another refill holds, and rechecked
-- as locked (device_free_for on its row as it is then): a refill that took a device and
-- committed meanwhile has set its last_task_id and in_use, so no two refills create the
-- task's execution on one device, and no refill waits for another. A slot that gets no device stays free (its PC has none left
-- for the task, or every free one is being taken). Returns one row per slot given, in
-- the order given.
-- +goose StatementBegin
CREATE FUNCTION device_slots_fill(pcs bigint[], slots integer[], hand_out boolean[])
RETURNS TABLE (pc_id bigint, slot integer, execution_id bigint, task_id bigint, device_id bigint, status text,
               attempt integer, max_attempts integer, sent_at timestamptz, timeout_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    t tasks;
    quota bigint;
BEGIN
    SELECT * INTO t FROM tasks WHERE tasks.status = 'running';
    IF NOT FOUND THEN
        RETURN QUERY SELECT g.pc, g.slot, NULL::bigint, NULL::bigint, NULL::bigint, NULL::text, NULL::integer,
                            NULL::integer, NULL::timestamptz, NULL::timestamptz
                     FROM unnest(pcs, slots) WITH ORDINALITY AS g (pc, slot, i) ORDER BY g.i;
        RETURN;
    END IF;
    quota := coalesce(t.target_count - (SELECT count(*) FROM task_devices x
                                        WHERE x.task_id = t.id AND x.status <> 'CANCELED'),
                      cardinality(slots));
    RETURN QUERY
    WITH given AS (
        SELECT g.pc, g.slot, coalesce(g.hand_out, false) AS hand_out, g.i,
               row_number() OVER (PARTITION BY g.pc ORDER BY g.i) AS k
        FROM unnest(pcs, slots, hand_out) WITH ORDINALITY AS g (pc, slot, hand_out, i)
        -- Within the quota, in the order given.
        WHERE g.i <= quota
    ), wanted AS (
        SELECT given.pc, count(*) AS n FROM given GROUP BY given.pc
    ), picked AS (
        SELECT wanted.pc, d.id, row_number() OVER (PARTITION BY wanted.pc ORDER BY d.id) AS k
        FROM wanted CROSS JOIN LATERAL (
            SELECT d.id FROM devices d
            WHERE d.pc_id = wanted.pc AND device_free_for(d, t.id)
            ORDER BY d.id
            LIMIT wanted.n
            FOR NO KEY UPDATE SKIP LOCKED) d
    ), placed AS (
        SELECT given.pc, given.slot, given.hand_out, given.i, picked.id AS device_id,
               attempt_handed_out(clock_timestamp(), t.device_timeout_ms) AS h
        FROM given JOIN picked ON picked.pc = given.pc AND picked.k = given.k
    ), ins AS (
        INSERT INTO task_devices AS x (task_id, device_id, pc_id, max_attempts, slot, status, sent_at, timeout_at)
        SELECT t.id, placed.device_id, placed.pc, t.max_attempts, placed.slot,
               CASE WHEN placed.hand_out THEN (placed.h).status ELSE 'CREATED' END,
               CASE WHEN placed.hand_out THEN (placed.h).sent_at END,
               CASE WHEN placed.hand_out THEN (placed.h).timeout_at END
        FROM placed
        ORDER BY placed.device_id
        ON CONFLICT DO NOTHING
        RETURNING x.id, x.task_id, x.device_id, x.pc_id, x.slot, x.status, x.attempt, x.max_attempts, x.sent_at, x.timeout_at
    ), ev AS (
        INSERT INTO task_device_events (task_device_id, attempt, type)
        SELECT ins.id, ins.attempt, e.type
        FROM ins CROSS JOIN LATERAL (VALUES (1, 'CREATED'), (2, 'SENT')) AS e (step, type)
        WHERE e.step = 1 OR ins.status = 'SENT'
        ORDER BY ins.id, e.step
    )
    SELECT g.pc, g.slot, ins.id, ins.task_id, ins.device_id, ins.status, ins.attempt, ins.max_attempts,
           ins.sent_at, ins.timeout_at
    FROM unnest(pcs, slots) WITH ORDINALITY AS g (pc, slot, i)
    LEFT JOIN ins ON ins.pc_id = g.pc AND ins.slot = g.slot
    ORDER BY g.i;
END $$;
-- +goose StatementEnd

-- One report of the group commit as its first step found it (device_results_record).
CREATE TYPE device_result_check AS (
    n integer,             -- its place in the batch
    claim_next boolean,
    token_id bigint, key text, path text, hash bytea,
    execution_id bigint,   -- null: no such execution
    task_id bigint, pc_id bigint, pc_name text,
    forbidden boolean,     -- another PC's agent reported it
    seen boolean,          -- its Idempotency-Key was stored before
    same_request boolean, stored_status integer, stored_content_type text, stored_body bytea, stored_answer jsonb,
    recording boolean      -- this statement records it (its row is locked)
);

-- The group commit (store.ResultBatcher): the successes reported in one batch (arrays, one
-- element per request, as River's completer does), recorded in ONE statement that answers
-- each request. It takes the same steps as the single-request path, by the same functions:
--   1. each report is checked: its execution and the agent's PC (an agent reports only its
--      own PC's executions), its Idempotency-Key (a key seen before answers with its first
--      answer and changes nothing), and whether this statement can decide it: the attempt
--      in flight of a running task with neither target_count nor abort rule (no task lock
--      needed; a success cannot abort it), nor a rate or windows, while no freeze holds
--      (what may be sent is the claim's gate to decide), its row locked, skipping a row
--      another transaction holds;
--   2. those attempts succeed (device_attempts_succeed);
--   3. each freed slot is refilled (device_slots_fill; results of one PC in the batch take
--      distinct devices, D2), and its execution handed out at once to a request that asks
--      (claim_next);
--   4. each request is answered, and a new key is stored with what its answer is made of,
--      in this statement (so a 200 and its key commit together).
-- Anything else (a failure, another kind of task, an attempt no longer in flight, a row
-- another transaction holds) is left unchanged with verdict 'undecided': the general path
-- (store.ReportResult) decides it.
-- +goose StatementBegin
CREATE FUNCTION device_results_record(ids bigint[], attempts integer[], agent_pcs text[], token_ids bigint[],
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

-- +goose Down
DROP FUNCTION device_results_record(bigint[], integer[], text[], bigint[], text[], text[], bytea[], boolean[]);
DROP TYPE device_result_check;
DROP FUNCTION device_slots_fill(bigint[], integer[], boolean[]);
DROP FUNCTION device_executions_cancel(bigint[], text, boolean);
DROP FUNCTION device_attempts_succeed(bigint[]);
DROP FUNCTION device_attempts_hand_out(bigint[]);
DROP FUNCTION attempt_handed_out(timestamptz, bigint);
DROP TYPE attempt_hand_out;
DROP FUNCTION device_pc_share_left(bigint, bigint);
DROP FUNCTION pc_free_slots(bigint);
CREATE OR REPLACE FUNCTION devices_unrun_by(for_task bigint) RETURNS SETOF devices
LANGUAGE sql STABLE AS $$
    SELECT d.* FROM devices d
    WHERE d.eligible
      AND NOT EXISTS (SELECT 1 FROM task_devices x
                      WHERE x.task_id = for_task AND x.device_id = d.id AND x.status <> 'CANCELED')
$$;
CREATE FUNCTION devices_free_for(of_pc bigint, for_task bigint) RETURNS SETOF devices
LANGUAGE sql STABLE AS $$
    SELECT d.* FROM devices_unrun_by(for_task) d
    WHERE d.pc_id = of_pc
      AND NOT EXISTS (SELECT 1 FROM task_devices y WHERE y.device_id = d.id AND y.holds_slot)
$$;
DROP FUNCTION device_free_for(devices, bigint);
DROP FUNCTION device_owes_run(devices, bigint);
DROP TRIGGER task_devices_note_deleted ON task_devices;
DROP FUNCTION devices_note_deleted();
DROP TRIGGER task_devices_note_changed ON task_devices;
DROP FUNCTION devices_note_changed();
DROP TRIGGER task_devices_note_created ON task_devices;
DROP FUNCTION devices_note_created();
ALTER TABLE devices RESET (fillfactor);
ALTER TABLE devices DROP COLUMN in_use, DROP COLUMN last_task_id;
