-- name: InsertSchedule :one
INSERT INTO schedules (name, spec, action, overlap, catchup_window_ms, skip_if_successful, paused, pause_note, next_run_at)
VALUES (@name, @spec, @action, @overlap, @catchup_window_ms, @skip_if_successful, @paused, @pause_note, @next_run_at)
RETURNING *;

-- name: GetScheduleByName :one
SELECT * FROM schedules WHERE name = @name;

-- name: GetScheduleByID :one
SELECT * FROM schedules WHERE id = @id;

-- name: LockScheduleByID :one
SELECT * FROM schedules WHERE id = @id FOR NO KEY UPDATE;

-- name: ListSchedules :many
SELECT * FROM schedules WHERE name > @after_name ORDER BY name LIMIT @max_rows;

-- name: ListAllScheduleNames :many
SELECT id, name FROM schedules ORDER BY id;

-- name: DeleteSchedule :one
DELETE FROM schedules WHERE name = @name RETURNING id;

-- name: SetSchedulePaused :one
UPDATE schedules
SET paused = @paused, pause_note = @pause_note, version = version + 1, updated_at = now(),
    next_run_at = CASE WHEN @paused::boolean THEN NULL ELSE next_run_at END
WHERE id = @id
RETURNING *;

-- name: SetScheduleNextRunAt :exec
UPDATE schedules SET next_run_at = @next_run_at, updated_at = now() WHERE id = @id;

-- name: UpdateScheduleAfterFire :exec
UPDATE schedules
SET next_run_at   = @next_run_at,
    last_run_at   = COALESCE(@last_run_at, last_run_at),
    fired_count   = fired_count + @fired,
    skipped_count = skipped_count + @skipped,
    missed_count  = missed_count + @missed,
    updated_at    = now()
WHERE id = @id;

-- name: InsertScheduleRun :one
-- S1: a second insert of the same idempotency key inserts nothing and returns no row.
-- Two exceptions turn the recorded row into the new outcome: a backfill may run a tick that
-- was only recorded MISSED (it never ran), and a BUFFERED tick (waiting under its overlap
-- policy) starts or is superseded.
-- An armed run (armed, visible_at, release_next_run_at) is hidden until its release.
-- A workflow id given for a tick whose earlier armed fire was retracted (its delayed start
-- terminated, so the id cannot be started again) gets a suffix of its own: ~2, ~3, …
INSERT INTO schedule_runs (schedule_id, scheduled_at, fired_at, trigger, status, reason, idempotency_key, workflow_id, finished_at,
                           armed, visible_at, release_next_run_at, trace_context)
VALUES (@schedule_id, @scheduled_at, @fired_at, @trigger, @status, @reason, @idempotency_key,
        @workflow_id::text || CASE WHEN @workflow_id::text = '' THEN '' ELSE COALESCE(
            (SELECT '~' || (count(*) + 1) FROM schedule_runs p
             WHERE p.schedule_id = @schedule_id AND p.scheduled_at = @scheduled_at AND p.retracted_at IS NOT NULL
             HAVING count(*) > 0), '') END,
        @finished_at, @armed, sqlc.narg(visible_at), sqlc.narg(release_next_run_at), sqlc.narg(trace_context))
ON CONFLICT (idempotency_key) DO UPDATE
SET fired_at = EXCLUDED.fired_at, trigger = EXCLUDED.trigger, status = EXCLUDED.status, reason = EXCLUDED.reason,
    workflow_id = EXCLUDED.workflow_id, finished_at = EXCLUDED.finished_at,
    trace_context = COALESCE(EXCLUDED.trace_context, schedule_runs.trace_context)
WHERE (schedule_runs.status = 'MISSED' AND EXCLUDED.trigger = 'backfill' AND EXCLUDED.fired_at IS NOT NULL)
   OR (schedule_runs.status = 'BUFFERED' AND EXCLUDED.status <> 'BUFFERED')
RETURNING *;

-- name: GetScheduleRunByKey :one
SELECT * FROM schedule_runs WHERE idempotency_key = @idempotency_key;

-- name: FinishScheduleRun :one
UPDATE schedule_runs
SET status = @status, error = @error, finished_at = now()
WHERE id = @id AND status = 'RUNNING'
RETURNING *;

-- name: ListScheduleRuns :many
-- Armed runs are not runs yet: they show once released; retracted ones never ran.
SELECT * FROM schedule_runs
WHERE schedule_id = @schedule_id AND NOT armed AND retracted_at IS NULL AND (@before_id::bigint = 0 OR id < @before_id::bigint)
ORDER BY id DESC
LIMIT @max_rows;

-- name: ListRunningScheduleRuns :many
SELECT * FROM schedule_runs WHERE schedule_id = @schedule_id AND status = 'RUNNING' ORDER BY id;

-- name: UpdateScheduleDefinition :one
-- Optimistic: the row changes only when its version is the one the caller read
-- (expected_version 0 skips the check).
UPDATE schedules
SET spec = @spec, action = @action, overlap = @overlap, catchup_window_ms = @catchup_window_ms,
    skip_if_successful = @skip_if_successful, version = version + 1, updated_at = now()
WHERE name = @name AND (@expected_version::bigint = 0 OR version = @expected_version::bigint)
RETURNING *;

-- name: GetScheduleRun :one
SELECT * FROM schedule_runs WHERE id = @id AND schedule_id = @schedule_id AND NOT armed AND retracted_at IS NULL;

-- name: DeleteArmedEvents :exec
-- Retraction, part 1 (under the schedule's row lock): the events of the schedule's armed,
-- unreleased runs, and by cascade their outbox messages, which never had a feed position.
-- keep_due keeps those whose visible time has come (a late releaser still releases them:
-- their fire was due before the command); a deleted schedule takes them all.
DELETE FROM event_store e USING schedule_runs r
WHERE e.schedule_run_id = r.id AND r.schedule_id = @schedule_id AND r.armed
  AND (NOT @keep_due::boolean OR r.visible_at > now());

-- name: DeleteArmedRuns :many
-- Retraction, part 2: the armed, unreleased runs of event fires themselves; it answers their
-- ticks. A run the releaser released first is no longer armed and stays (one winner: both
-- hold the schedule's row lock).
DELETE FROM schedule_runs
WHERE schedule_id = @schedule_id AND armed AND workflow_id = '' AND (NOT @keep_due::boolean OR visible_at > now())
RETURNING scheduled_at;

-- name: RetractArmedWorkflowRuns :many
-- Retraction, part 3: an armed workflow fire, whose delayed start the workflow terminated
-- before this, stays as the record of its retraction: SKIPPED with the reason, hidden, its
-- key moved aside so that the tick can be decided again.
UPDATE schedule_runs
SET armed = false, status = 'SKIPPED', reason = @reason, fired_at = NULL, finished_at = now(), retracted_at = now(),
    idempotency_key = idempotency_key || '/retracted/' || id
WHERE schedule_id = @schedule_id AND armed AND workflow_id <> '' AND (NOT @keep_due::boolean OR visible_at > now())
RETURNING scheduled_at, workflow_id;

-- name: ListArmedWorkflowRuns :many
-- The delayed starts of a schedule's armed workflow fires (to terminate when it is deleted).
SELECT workflow_id FROM schedule_runs WHERE schedule_id = @schedule_id AND armed AND workflow_id <> '';

-- name: ArmWindow :many
-- Arms a window of ticks of one event schedule in one statement (the caller holds the
-- schedule's row lock): per tick an armed run, its event and its outbox message without a
-- feed position, as RecordFire arms one. Each run's release moves next_run_at to the tick
-- after it (the next in the window; after_last for the last). A tick recorded before (a
-- retried arming) inserts nothing (S1); the statement answers the runs it created.
WITH given AS (
    -- set-returning functions in one select list advance together: row i of each array
    -- (trace_contexts is NULL while tracing is off: its column is then NULL on every row)
    SELECT unnest(@scheduled_at::timestamptz[]) AS scheduled_at, unnest(@visible_at::timestamptz[]) AS visible_at,
           unnest(@idempotency_keys::text[]) AS idempotency_key, unnest(sqlc.narg(trace_contexts)::text[]) AS trace_context
), ticks AS (
    SELECT g.scheduled_at, g.visible_at, g.idempotency_key, g.trace_context,
           COALESCE(lead(g.scheduled_at) OVER (ORDER BY g.scheduled_at), sqlc.narg(after_last)::timestamptz) AS release_next_run_at
    FROM given g
), runs AS (
    INSERT INTO schedule_runs (schedule_id, scheduled_at, fired_at, trigger, status, reason, idempotency_key, workflow_id, finished_at,
                               armed, visible_at, release_next_run_at, trace_context)
    SELECT @schedule_id, scheduled_at, visible_at, 'scheduled', 'SUCCEEDED', '', idempotency_key, '', visible_at,
           true, visible_at, release_next_run_at, NULLIF(trace_context, '')
    FROM ticks
    ON CONFLICT (idempotency_key) DO NOTHING
    RETURNING id, scheduled_at, visible_at
), events AS (
    INSERT INTO event_store (topic, type, aggregate_id, data, schedule_run_id, created_at)
    SELECT @topic, @type, @aggregate_id, @data, id, visible_at FROM runs
    RETURNING id, topic, created_at
), messages AS (
    INSERT INTO outbox_messages (event_id, topic, tx_id, visible_at)
    SELECT id, topic, NULL, created_at FROM events
)
SELECT id, scheduled_at FROM runs;

-- name: SetNextRunAtToFirstArmed :exec
-- After arming a window: the schedule's next fire is its earliest armed run not yet
-- released (a run of the window before may still be pending).
UPDATE schedules
SET next_run_at = COALESCE((SELECT min(r.scheduled_at) FROM schedule_runs r WHERE r.schedule_id = @id AND r.armed), next_run_at),
    updated_at  = now()
WHERE id = @id;

-- name: LockSchedulesWithDueFires :many
-- The release, step 1: lock the schedules that have armed runs due, skipping any a fire,
-- command or other releaser holds (they are released on the next round). as_of is the
-- release's time (NULL: now(); tests pass their workflow clock). Every writer of
-- an armed run holds its schedule's row lock, so holding it decides release vs retraction.
SELECT s.id FROM schedules s
WHERE s.id IN (SELECT r.schedule_id FROM schedule_runs r WHERE r.armed AND r.visible_at <= COALESCE(sqlc.narg(as_of)::timestamptz, now()))
ORDER BY s.id
LIMIT @max_rows
FOR NO KEY UPDATE OF s SKIP LOCKED;

-- name: ReleaseDueFires :many
-- The release, step 2, one statement for every due run of the locked schedules, each
-- judged by armed_fire_fate: a fire released on time, or late while workers were alive
-- (busy, not down), becomes true now (fired_at); one released late after an outage obeys
-- the catch-up window as any tick does: inside it, it becomes true as a catch-up fire;
-- beyond it, it is MISSED with the outage as its reason, and its event and outbox message
-- go (the fire never happened). An event fire is final at once; a workflow fire stays
-- RUNNING (its target started at visible_at, by Temporal's start delay) until its watcher
-- records the outcome. A workflow fire released late is not taken here: whether its target
-- started needs Temporal (ReleaseLateWorkflowFire). A fire's outbox message takes this
-- transaction's id as its feed position. Its schedule counts it (fired or missed,
-- last_run_at) and moves next_run_at past it unless something moved it already.
WITH due AS (
    SELECT r.id, r.visible_at, COALESCE(sqlc.narg(as_of)::timestamptz, now()) AS released_at, r.workflow_id <> '' AS starts_workflow,
           s.catchup_window_ms
    FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id
    WHERE r.armed AND r.visible_at <= COALESCE(sqlc.narg(as_of)::timestamptz, now()) AND r.schedule_id = ANY(@schedule_ids::bigint[])
), judged AS (
    SELECT due.id, due.released_at, f.fate, f.reason,
           CASE WHEN due.starts_workflow THEN due.visible_at ELSE due.released_at END AS fired_at
    FROM due, armed_fire_fate(due.visible_at, due.released_at, due.catchup_window_ms,
                              make_interval(secs => sqlc.arg(on_time_ms)::float8 / 1000), make_interval(secs => @grace_seconds::float8)) AS f (fate, reason)
    WHERE NOT (due.starts_workflow AND due.released_at - due.visible_at > make_interval(secs => sqlc.arg(on_time_ms)::float8 / 1000))
    UNION ALL
    -- the late workflow fires, as decided from what their targets did (LateWorkflowFires)
    SELECT due.id, due.released_at, d.fate, d.reason, d.fired_at
    FROM (SELECT unnest(@decided_ids::bigint[]) AS id, unnest(@decided_fates::text[]) AS fate,
                 unnest(@decided_reasons::text[]) AS reason, unnest(@decided_fired_at::timestamptz[]) AS fired_at) d
    JOIN due ON due.id = d.id
), released AS (
    UPDATE schedule_runs r
    SET armed       = false,
        status      = CASE WHEN j.fate = 'missed' THEN 'MISSED' ELSE r.status END,
        trigger     = CASE WHEN j.fate = 'catchup' THEN 'catchup' ELSE r.trigger END,
        reason      = CASE WHEN j.reason <> '' THEN j.reason ELSE r.reason END,
        fired_at    = CASE WHEN j.fate = 'missed' THEN NULL ELSE j.fired_at END,
        finished_at = CASE WHEN j.fate = 'missed' THEN j.released_at WHEN r.workflow_id <> '' THEN r.finished_at ELSE j.released_at END
    FROM judged j
    WHERE r.id = j.id
    RETURNING r.id, r.schedule_id, r.scheduled_at, r.visible_at, r.trigger, r.status, r.reason, r.release_next_run_at, j.released_at,
              r.workflow_id, r.trace_context
), positioned AS (
    UPDATE outbox_messages o
    SET tx_id = pg_current_xact_id()
    FROM event_store e, released
    WHERE e.schedule_run_id = released.id AND o.event_id = e.id AND o.tx_id IS NULL AND released.status <> 'MISSED'
    RETURNING o.id
), unfired AS (
    -- a MISSED fire's event and (by cascade) its outbox message, which never had a position
    DELETE FROM event_store e USING released
    WHERE e.schedule_run_id = released.id AND released.status = 'MISSED'
    RETURNING e.id
), per_schedule AS (
    SELECT schedule_id, count(*) FILTER (WHERE status <> 'MISSED') AS fired, count(*) FILTER (WHERE status = 'MISSED') AS missed,
           max(scheduled_at) AS last_tick, max(released_at) FILTER (WHERE status <> 'MISSED') AS last_fired_at,
           (array_agg(release_next_run_at ORDER BY scheduled_at DESC))[1] AS next_run_at
    FROM released GROUP BY schedule_id
), counted AS (
    UPDATE schedules s
    SET fired_count  = s.fired_count + p.fired,
        missed_count = s.missed_count + p.missed,
        last_run_at  = COALESCE(GREATEST(s.last_run_at, p.last_fired_at), s.last_run_at, p.last_fired_at),
        next_run_at  = CASE WHEN s.next_run_at IS NOT NULL AND s.next_run_at <= p.last_tick THEN p.next_run_at ELSE s.next_run_at END,
        updated_at   = now()
    FROM per_schedule p
    WHERE s.id = p.schedule_id
    RETURNING s.id
)
SELECT released.id, released.schedule_id, released.scheduled_at, released.visible_at::timestamptz AS visible_at, released.trigger,
       released.status, released.released_at::timestamptz AS released_at, released.workflow_id, released.trace_context
FROM released;

-- name: LateWorkflowFires :many
-- The armed workflow fires of the locked schedules released late (ReleaseDueFires leaves
-- them), each with its fate by armed_fire_fate: whether its target already started, and so
-- what is true of it, the releaser asks Temporal before it records them.
SELECT r.id, r.workflow_id, r.visible_at::timestamptz AS visible_at, f.fate::text AS fate, f.reason::text AS reason
FROM schedule_runs r
JOIN schedules s ON s.id = r.schedule_id,
     armed_fire_fate(r.visible_at, COALESCE(sqlc.narg(as_of)::timestamptz, now()), s.catchup_window_ms,
                     make_interval(secs => sqlc.arg(on_time_ms)::float8 / 1000), make_interval(secs => @grace_seconds::float8)) AS f (fate, reason)
WHERE r.armed AND r.workflow_id <> '' AND r.schedule_id = ANY(@schedule_ids::bigint[])
  AND COALESCE(sqlc.narg(as_of)::timestamptz, now()) - r.visible_at > make_interval(secs => sqlc.arg(on_time_ms)::float8 / 1000)
ORDER BY r.id;

-- name: NextArmedFireIn :one
-- How long until the next armed run is due, by the database's clock (+Inf: none armed).
SELECT COALESCE(EXTRACT(EPOCH FROM min(visible_at) - clock_timestamp())::float8, 'Infinity'::float8)::float8 AS seconds
FROM schedule_runs WHERE armed;

-- name: LockScheduleByName :one
SELECT id FROM schedules WHERE name = @name FOR NO KEY UPDATE;

-- name: ListBufferedRuns :many
-- What is waiting under the overlap policy, oldest tick first.
SELECT * FROM schedule_runs WHERE schedule_id = @schedule_id AND status = 'BUFFERED' ORDER BY scheduled_at, id;

-- name: SetScheduleBackfills :exec
UPDATE schedules SET backfills = @backfills WHERE id = @id;

-- name: CountBufferedRuns :many
-- How many ticks wait under each schedule's overlap policy (schedules with none are absent).
SELECT schedule_id, count(*)::bigint AS buffered FROM schedule_runs
WHERE status = 'BUFFERED' AND schedule_id = ANY(@schedule_ids::bigint[])
GROUP BY schedule_id;

-- name: StartWorkerLiveness :exec
-- A worker process begins: alive from now on (its id is new per process).
INSERT INTO worker_liveness (worker_id, started_at, beat_at) VALUES (@worker_id, now(), now())
ON CONFLICT (worker_id) DO UPDATE SET beat_at = now();

-- name: BeatWorkerLiveness :execrows
UPDATE worker_liveness SET beat_at = now() WHERE worker_id = @worker_id;

-- name: ForgetOldLiveness :exec
-- Liveness older than any catch-up window needs (a year): its outages decide nothing now.
DELETE FROM worker_liveness WHERE beat_at < now() - interval '400 days';

-- name: ScheduleOutages :many
-- The outages since a tick, each with the reason a tick it makes MISSED is recorded with.
SELECT o.down_from::timestamptz AS down_from, o.down_until::timestamptz AS down_until,
       schedule_missed_reason(o.down_from, o.down_until, @catchup_window_ms::bigint)::text AS missed_reason
FROM schedule_outages(@since::timestamptz, @until::timestamptz, make_interval(secs => @grace_seconds::float8)) o;

-- name: CountSchedulesDueIn :one
-- How many schedules fire in [second_start, second_start + 1 s): those whose next fire it is,
-- and those that armed a fire for it already (whose next_run_at is an earlier armed fire).
SELECT count(*)::bigint FROM (
    SELECT id FROM schedules
    WHERE next_run_at >= sqlc.arg(second_start)::timestamptz AND next_run_at < sqlc.arg(second_start)::timestamptz + interval '1 second'
    UNION
    SELECT schedule_id FROM schedule_runs
    WHERE armed AND scheduled_at >= sqlc.arg(second_start)::timestamptz AND scheduled_at < sqlc.arg(second_start)::timestamptz + interval '1 second'
) due;

-- name: RunTraceContext :one
-- The span context a run's fire recorded (NULL: recorded while tracing was off), for the
-- calls that continue its trace later (starting a workflow action's target).
SELECT trace_context FROM schedule_runs WHERE id = @id;
