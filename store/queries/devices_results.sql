-- Device dispatch: agents' results, group-committed (store/devices_results.go). The
-- results that arrive together are recorded by ONE statement, each with its own answer.

-- name: RecordSuccesses :many
-- Records the successes reported in one batch (arrays, one element per request, as
-- River's completer does) and answers each request from this same statement:
--   1. the agent's PC check: an agent may report only its own PC's executions;
--   2. the request's Idempotency-Key: a key seen before answers with its first answer and
--      changes nothing; a new key is stored, with what this answer is made of, in this
--      statement (so a 200 and its key commit together);
--   3. the attempt in flight succeeds, with its event — for a running task with neither
--      target_count nor abort rule (no task lock needed; a success cannot abort it), nor a
--      rate or windows, while no freeze holds (what may be sent is the claim's to decide);
--   4. each freed slot is refilled with the running task's next execution on that PC
--      (D2: one freed slot, at most one new execution; results of one PC in the batch take
--      distinct devices), and when the request asks (claim_next) that execution is handed
--      to it at once: SENT, its deadline started, with its events.
-- Anything else (a failure, another kind of task, an attempt no longer in flight, an
-- execution another transaction holds) is left unchanged with verdict 'undecided': the
-- general path decides it. SKIP LOCKED throughout: the statement never waits for a row
-- before it picks a device (a statement that waited would pick from the snapshot it took
-- before the wait). A device picked but not taken (a concurrent refill took it first)
-- comes back as picked without a next; the caller refills that slot again.
WITH req AS (
    SELECT i AS n, (@ids::bigint[])[i] AS id, (@attempts::integer[])[i] AS attempt,
           (@agent_pcs::text[])[i] AS agent_pc, (@token_ids::bigint[])[i] AS token_id,
           (@keys::text[])[i] AS key, (@paths::text[])[i] AS path, (@hashes::bytea[])[i] AS hash,
           (@claim_next::boolean[])[i] AS claim_next
    FROM generate_subscripts(@ids::bigint[], 1) AS i
), target AS (
    -- The lookups by key are LATERAL … OFFSET 0: one index probe per request, whatever the
    -- tables' sizes were when the cached plan was made (a hash join planned on a small table
    -- would scan the whole table on every batch as it grows).
    SELECT req.n, x.id, x.task_id, x.pc_id, x.pc_name
    FROM req CROSS JOIN LATERAL (
        SELECT td.id, td.task_id, td.pc_id, p.name AS pc_name
        FROM task_devices td JOIN pcs p ON p.id = td.pc_id
        WHERE td.id = req.id
        OFFSET 0) x
), seen AS (
    SELECT req.n, k.same_request, k.status, k.content_type, k.body, k.answer
    FROM req CROSS JOIN LATERAL (
        SELECT k.request_hash = req.hash AS same_request, k.status, k.content_type, k.body, k.answer
        FROM idempotency_keys k
        WHERE k.token_id = req.token_id AND k.key = req.key AND k.method = 'POST' AND k.path = req.path
        OFFSET 0) k
    WHERE req.key <> ''
), cur AS (
    SELECT c.id, req.n
    FROM req JOIN target ON target.n = req.n
    CROSS JOIN LATERAL (
        SELECT td.id FROM task_devices td JOIN tasks t ON t.id = td.task_id
        WHERE td.id = req.id AND td.status IN ('SENT', 'ACKED')
          AND (req.attempt = 0 OR td.attempt = req.attempt)
          AND t.status = 'running' AND t.target_count IS NULL AND t.abort_min_executed IS NULL
          -- a task with a rate or windows, or the global freeze, sends only through the
          -- claim (its gate): the general path records such a result, without a next.
          AND t.rate IS NULL AND t.windows IS NULL
          AND NOT EXISTS (SELECT 1 FROM freezes f WHERE f.rollout_id IS NULL AND f.lifted_at IS NULL)
        FOR UPDATE OF td SKIP LOCKED) c
    WHERE (req.agent_pc = '' OR target.pc_name = req.agent_pc)
      AND NOT EXISTS (SELECT 1 FROM seen WHERE seen.n = req.n)
), done AS (
    UPDATE task_devices x SET status = 'SUCCEEDED', completed_at = clock_timestamp(), error = ''
    FROM cur WHERE x.id = cur.id
    RETURNING x.id, x.task_id, x.device_id, x.pc_id, x.slot, x.status, x.attempt, x.max_attempts, x.error,
              x.created_at, x.sent_at, x.acked_at, x.completed_at, x.timeout_at, cur.n
), done_ev AS (
    INSERT INTO task_device_events (task_device_id, attempt, type)
    SELECT done.id, done.attempt, 'SUCCEEDED' FROM done ORDER BY done.id
), freed AS (
    SELECT done.n, done.pc_id, done.task_id, done.slot,
           row_number() OVER (PARTITION BY done.pc_id ORDER BY done.slot) AS rn
    FROM done
), freed_pcs AS (
    SELECT freed.pc_id, freed.task_id, count(*) AS slots FROM freed GROUP BY freed.pc_id, freed.task_id
), pick AS (
    SELECT f.pc_id, c.id AS device_id, row_number() OVER (PARTITION BY f.pc_id ORDER BY c.id) AS rn
    FROM freed_pcs f CROSS JOIN LATERAL (
        SELECT d.id FROM devices d
        WHERE d.id IN (SELECT free.id FROM devices_free_for(f.pc_id, f.task_id) free)
        ORDER BY d.id
        LIMIT f.slots
        FOR NO KEY UPDATE OF d SKIP LOCKED
    ) c
), placed AS (
    -- Each freed slot with the device it gets and whether its request takes the execution now.
    SELECT freed.n, freed.task_id, freed.pc_id, freed.slot, pick.device_id, req.claim_next,
           t.max_attempts, t.device_timeout_ms, clock_timestamp() AS at
    FROM freed JOIN pick ON pick.pc_id = freed.pc_id AND pick.rn = freed.rn
    JOIN req ON req.n = freed.n
    JOIN tasks t ON t.id = freed.task_id
), ins AS (
    INSERT INTO task_devices (task_id, device_id, pc_id, max_attempts, slot, status, sent_at, timeout_at)
    SELECT placed.task_id, placed.device_id, placed.pc_id, placed.max_attempts, placed.slot,
           CASE WHEN placed.claim_next THEN 'SENT' ELSE 'CREATED' END,
           CASE WHEN placed.claim_next THEN placed.at END,
           CASE WHEN placed.claim_next THEN attempt_deadline(placed.at, placed.device_timeout_ms) END
    FROM placed
    ORDER BY placed.device_id
    ON CONFLICT DO NOTHING
    RETURNING id, task_id, device_id, pc_id, slot, status, attempt, max_attempts, sent_at, timeout_at
), ins_ev AS (
    INSERT INTO task_device_events (task_device_id, attempt, type)
    SELECT ins.id, ins.attempt, e.type
    FROM ins CROSS JOIN LATERAL (VALUES (1, 'CREATED'), (2, 'SENT')) AS e (step, type)
    WHERE e.step = 1 OR ins.status = 'SENT'
    ORDER BY ins.id, e.step
), left_on_pc AS MATERIALIZED (
    -- What this PC still runs of the task once the batch commits, as this statement sees it
    -- (0: the PC's share of the task may be over). Concurrent writers are not seen: the
    -- caller counts again after the commit when this is not 0 and nothing was refilled.
    -- MATERIALIZED: counted once per PC, not once per row it is joined to.
    SELECT f.pc_id,
           (SELECT count(*) FROM task_devices y WHERE y.pc_id = f.pc_id AND y.task_id = f.task_id AND y.holds_slot)
           - f.slots + (SELECT count(*) FROM ins WHERE ins.pc_id = f.pc_id) AS executions
    FROM freed_pcs f
), answered AS (
    SELECT done.n,
           jsonb_build_object(
               'done', jsonb_build_object(
                   'id', done.id, 'task_id', done.task_id, 'device_id', done.device_id, 'pc_id', done.pc_id,
                   'slot', done.slot, 'status', done.status, 'attempt', done.attempt,
                   'max_attempts', done.max_attempts, 'error', done.error, 'created_at', done.created_at,
                   'sent_at', done.sent_at, 'acked_at', done.acked_at, 'completed_at', done.completed_at,
                   'timeout_at', done.timeout_at, 'device_serial', dd.serial, 'pc_name', target.pc_name),
               'next', CASE WHEN ins.status = 'SENT' THEN jsonb_build_object(
                   'id', ins.id, 'task_id', ins.task_id, 'slot', ins.slot, 'attempt', ins.attempt,
                   'max_attempts', ins.max_attempts, 'sent_at', ins.sent_at, 'timeout_at', ins.timeout_at,
                   'device_serial', nd.serial) END
           ) AS answer,
           placed.device_id IS NOT NULL AS picked, ins.id AS created_id, ins.status AS created_status,
           l.executions AS left_on_pc
    FROM done
    JOIN target ON target.n = done.n
    JOIN devices dd ON dd.id = done.device_id
    LEFT JOIN placed ON placed.n = done.n
    LEFT JOIN ins ON ins.pc_id = done.pc_id AND ins.slot = done.slot
    LEFT JOIN devices nd ON nd.id = ins.device_id
    LEFT JOIN left_on_pc l ON l.pc_id = done.pc_id
), keys AS (
    INSERT INTO idempotency_keys (token_id, key, method, path, request_hash, status, answer)
    SELECT req.token_id, req.key, 'POST', req.path, req.hash, 200, answered.answer
    FROM answered JOIN req ON req.n = answered.n
    WHERE req.key <> ''
    ON CONFLICT DO NOTHING
    RETURNING token_id, key, path
)
SELECT req.n::integer AS n,
       (CASE
            WHEN target.n IS NULL THEN 'not_found'
            WHEN req.agent_pc <> '' AND target.pc_name <> req.agent_pc THEN 'forbidden'
            WHEN seen.n IS NOT NULL AND NOT seen.same_request THEN 'key_reused'
            WHEN seen.n IS NOT NULL AND seen.status = 0 THEN 'key_in_progress'
            WHEN seen.n IS NOT NULL THEN 'replayed'
            WHEN answered.n IS NOT NULL THEN 'recorded'
            ELSE 'undecided'
        END)::text AS verdict,
       COALESCE(target.pc_name, '')::text AS pc_name,
       COALESCE(target.task_id, 0)::bigint AS task_id,
       COALESCE(target.pc_id, 0)::bigint AS pc_id,
       COALESCE(answered.answer, seen.answer) AS answer,
       -- The next execution's payload, read here rather than kept with the key: a task's
       -- payload never changes.
       nt.payload AS next_payload,
       COALESCE(seen.status, 0)::integer AS stored_status,
       COALESCE(seen.content_type, '')::text AS stored_content_type,
       COALESCE(seen.body, ''::bytea) AS stored_body,
       COALESCE(answered.picked, false)::boolean AS picked,
       COALESCE(answered.created_id, 0)::bigint AS created_id,
       COALESCE(answered.created_status, '')::text AS created_status,
       COALESCE(answered.left_on_pc, 0)::bigint AS left_on_pc,
       (keys.key IS NOT NULL)::boolean AS key_stored
FROM req
LEFT JOIN target ON target.n = req.n
LEFT JOIN seen ON seen.n = req.n
LEFT JOIN answered ON answered.n = req.n
LEFT JOIN keys ON keys.token_id = req.token_id AND keys.key = req.key AND keys.path = req.path
LEFT JOIN tasks nt ON nt.id = (COALESCE(answered.answer, seen.answer) -> 'next' ->> 'task_id')::bigint
ORDER BY req.n;

-- name: PCsWithoutExecutionsOf :many
-- Of the given (PC, task) pairs, those where the PC holds no execution of the task any
-- more: the PC's share of the task is over, and the dispatcher should look at the task.
-- Read after the batch that freed their last slots committed, so that of several batches
-- finishing a PC's share at once, the last to commit sees every other one.
SELECT p.pc_id::bigint AS pc_id, p.task_id::bigint AS task_id
FROM (SELECT (@pc_ids::bigint[])[i] AS pc_id, (@task_ids::bigint[])[i] AS task_id
      FROM generate_subscripts(@pc_ids::bigint[], 1) AS i) p
WHERE NOT EXISTS (SELECT 1 FROM task_devices y WHERE y.pc_id = p.pc_id AND y.task_id = p.task_id AND y.holds_slot);
