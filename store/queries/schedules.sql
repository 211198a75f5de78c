-- name: InsertSchedule :one
-- A new schedule is at rest: the planner arms its first fires, or wakes its workflow, at
-- plan_at. Its ticks count from watermark (its creation). An http action's signing secret
-- and its header values are inserted by the same statement (an empty secret, for other
-- actions, is none; so are NULL values).
WITH secret AS (
    INSERT INTO schedule_secrets (schedule_name, secret)
    SELECT @name, @signing_secret::text WHERE @signing_secret::text <> ''
), header_values AS (
    INSERT INTO schedule_header_values (schedule_name, header_values)
    SELECT @name, sqlc.narg(header_values)::jsonb WHERE sqlc.narg(header_values)::jsonb IS NOT NULL
)
INSERT INTO schedules (name, spec, action, overlap, catchup_window_ms, skip_if_successful, paused, pause_note, next_run_at,
                       watermark, plan_at, plan_action, retry, after_completion, max_concurrent, overlap_when_full, labels)
VALUES (@name, @spec, @action, @overlap, @catchup_window_ms, @skip_if_successful, @paused, @pause_note, @next_run_at,
        @watermark, @plan_at, @plan_action, @retry, @after_completion, sqlc.narg(max_concurrent), sqlc.narg(overlap_when_full),
        COALESCE(sqlc.narg(labels)::jsonb, '{}'::jsonb))
RETURNING *;

-- name: GetScheduleByName :one
SELECT * FROM schedules WHERE name = @name;

-- name: GetScheduleByID :one
SELECT * FROM schedules WHERE id = @id;

-- name: LockScheduleByID :one
SELECT * FROM schedules WHERE id = @id FOR NO KEY UPDATE;

-- name: ListSchedules :many
SELECT * FROM schedules WHERE name > @after_name ORDER BY name LIMIT @max_rows;

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
-- A run's outcome, once: a run already final stays as it is. A success is the schedule's
-- newest one (last_success_at, which skip_if_successful reads) when the schedule is at rest;
-- a schedule's workflow keeps its own while it holds the schedule, and leaves it at its rest.
-- A schedule at rest waiting for its runs to end to complete (plan 'complete', a one-time
-- schedule) is looked at now.
WITH done AS (
    UPDATE schedule_runs r
    SET status = @status, error = @error, finished_at = now()
    WHERE r.id = @id AND r.status = 'RUNNING'
    RETURNING r.*
), success AS (
    UPDATE schedules s
    SET last_success_at = CASE WHEN d.status = 'SUCCEEDED' THEN GREATEST(s.last_success_at, d.scheduled_at) ELSE s.last_success_at END,
        plan_at = CASE WHEN s.plan_action = 'complete' THEN now() ELSE s.plan_at END
    FROM done d
    WHERE s.id = d.schedule_id AND s.owner IS NULL AND (d.status = 'SUCCEEDED' OR s.plan_action = 'complete')
)
SELECT * FROM done;

-- name: ListScheduleRuns :many
-- Armed runs are not runs yet: they show once released (run_shown); retracted ones never ran.
SELECT * FROM schedule_runs
WHERE schedule_id = @schedule_id AND run_shown(armed, visible_at) AND retracted_at IS NULL AND (@before_id::bigint = 0 OR id < @before_id::bigint)
ORDER BY id DESC
LIMIT @max_rows;

-- name: ListRunningScheduleRuns :many
SELECT * FROM schedule_runs WHERE schedule_id = @schedule_id AND status = 'RUNNING' ORDER BY id;

-- name: RunsInFlightBeyond :many
-- The schedule's runs in flight (RUNNING, armed ones among them) that a fire's decider did
-- not count (@known), the fire's own tick aside (recorded before: that run is the fire's
-- answer). A redrive is outside the overlap policy and the cap: it does not count.
SELECT * FROM schedule_runs
WHERE schedule_id = @schedule_id AND status = 'RUNNING' AND redrives = 0
  AND idempotency_key <> @idempotency_key AND NOT (id = ANY(@known::bigint[]))
ORDER BY id;

-- name: UpdateScheduleDefinition :one
-- Optimistic: the row changes only when its version is the one the caller read
-- (expected_version 0 skips the check). A completed schedule given another spec (a new
-- one-time at) is not completed any more.
UPDATE schedules
SET spec = @spec, action = @action, overlap = @overlap, catchup_window_ms = @catchup_window_ms,
    skip_if_successful = @skip_if_successful, retry = @retry, after_completion = @after_completion,
    completed_at = CASE WHEN spec = @spec THEN completed_at END, max_concurrent = sqlc.narg(max_concurrent),
    overlap_when_full = sqlc.narg(overlap_when_full), labels = COALESCE(sqlc.narg(labels)::jsonb, labels), version = version + 1, updated_at = now()
WHERE name = @name AND (@expected_version::bigint = 0 OR version = @expected_version::bigint)
RETURNING *;

-- name: GetScheduleRun :one
SELECT * FROM schedule_runs WHERE id = @id AND schedule_id = @schedule_id AND run_shown(armed, visible_at) AND retracted_at IS NULL;

-- name: DeleteArmedEvents :exec
-- Retraction, part 1 (under the schedule's row lock, and the release lock shared): the events
-- of the schedule's armed runs not yet released, and by cascade their outbox messages, which
-- never had a feed position.
-- keep_due keeps those whose visible time has come (a late releaser still releases them:
-- their fire was due before the command); a deleted schedule takes them all.
DELETE FROM event_store e USING schedule_runs r
WHERE e.schedule_run_id = r.id AND r.schedule_id = @schedule_id AND r.armed AND r.visible_at > release_frontier()
  AND (NOT @keep_due::boolean OR r.visible_at > now());

-- name: DeleteArmedRuns :many
-- Retraction, part 2: the armed, unreleased runs of event fires themselves; it answers their
-- ticks. A run the releaser released first is no longer armed and stays (one winner: both
-- hold the schedule's row lock).
DELETE FROM schedule_runs
WHERE schedule_id = @schedule_id AND armed AND workflow_id = '' AND visible_at > release_frontier()
  AND (NOT @keep_due::boolean OR visible_at > now())
RETURNING scheduled_at;

-- name: RetractArmedWorkflowRuns :many
-- Retraction, part 3: an armed workflow fire, whose delayed start the workflow terminated
-- before this, stays as the record of its retraction: SKIPPED with the reason, hidden, its
-- key moved aside so that the tick can be decided again.
UPDATE schedule_runs
SET armed = false, status = 'SKIPPED', reason = @reason, fired_at = NULL, finished_at = now(), retracted_at = now(),
    idempotency_key = idempotency_key || '/retracted/' || id
WHERE schedule_id = @schedule_id AND armed AND workflow_id <> '' AND visible_at > release_frontier()
  AND (NOT @keep_due::boolean OR visible_at > now())
RETURNING scheduled_at, workflow_id;

-- name: ListRetractedUndecidedTicks :many
-- Retraction, part 4: the ticks of armed workflow fires an earlier retraction took back that
-- nothing has decided since (no live run of the tick) and that are not yet due. A retraction
-- returns them again, so that it is idempotent: a workflow task that retracted, then timed
-- out before its history was written, retracts again on its retry and must still learn that
-- those ticks are its own to decide (else it waits on the stopped delayed start, and the tick
-- is lost).
SELECT DISTINCT p.scheduled_at FROM schedule_runs p
WHERE p.schedule_id = @schedule_id AND p.retracted_at IS NOT NULL AND p.trigger IN ('scheduled', 'catchup')
  AND p.visible_at > release_frontier() AND (NOT @keep_due::boolean OR p.visible_at > now())
  AND NOT EXISTS (SELECT 1 FROM schedule_runs l
                  WHERE l.schedule_id = p.schedule_id AND l.scheduled_at = p.scheduled_at AND l.retracted_at IS NULL
                    AND l.trigger IN ('scheduled', 'catchup'))
ORDER BY p.scheduled_at;

-- name: ListArmedWorkflowRuns :many
-- The delayed starts of a schedule's armed workflow fires not yet released (to terminate
-- when it is deleted).
-- (An http fire queued for its first attempt has none.)
SELECT workflow_id FROM schedule_runs r WHERE schedule_id = @schedule_id AND armed AND workflow_id <> '' AND visible_at > release_frontier()
  AND NOT EXISTS (SELECT 1 FROM http_first_attempts q WHERE q.run_id = r.id);

-- name: LockReleases :exec
-- Releases are serialized: their transaction ids and ranges grow together.
SELECT pg_advisory_xact_lock(@lock_key::bigint);

-- name: ShareReleaseLock :exec
-- A retraction holds the release lock shared: it never takes back a fire a release made true.
SELECT pg_advisory_xact_lock_shared(@lock_key::bigint);

-- name: ReleaseFrontier :one
SELECT release_frontier()::timestamptz AS frontier, now()::timestamptz AS db_now;

-- name: LockSchedulesWithLateFires :many
-- A release's slow path: the schedules with armed fires it covers that it releases late
-- (tickgate was down or behind at their time), each judged by tick_fate in ReleaseDueFires.
SELECT s.id FROM schedules s
WHERE s.id IN (SELECT r.schedule_id FROM schedule_runs r
               WHERE r.armed AND r.status <> 'SKIPPED' AND r.visible_at > sqlc.arg(from_time)::timestamptz AND r.visible_at <= sqlc.arg(to_time)::timestamptz
                 AND r.visible_at < sqlc.arg(to_time)::timestamptz - make_interval(secs => sqlc.arg(on_time_ms)::float8 / 1000))
ORDER BY s.id
FOR NO KEY UPDATE OF s;

-- name: InsertFeedRelease :one
-- The release: every armed fire due in (after, until] is out, in this transaction, at until
-- (the release's now, or the time a test releases as of).
INSERT INTO feed_releases (released_after, released_until, released_at) VALUES (@after, @until, @until)
RETURNING tx_id::text::bigint AS tx, released_at;

-- name: SettleReleasedFires :many
-- After a release, in batches: its runs are settled — armed cleared, fired_at the release's
-- time for an event fire (its target's tick for a workflow fire, which Temporal started
-- then, as armed; an http fire's first attempt sets its own), an event fire finished — and their schedules count them (fired, last_run_at) and
-- move next_run_at past them unless something moved it already. A tick armed SKIPPED (a
-- calendar excludes it) never fired: it is counted skipped, finished at its release.
WITH due AS (
    SELECT r.id, rel.released_at FROM schedule_runs r,
        LATERAL (SELECT f.released_at FROM feed_releases f WHERE f.released_until >= r.visible_at
                 ORDER BY f.released_until LIMIT 1) rel
    WHERE r.armed AND r.visible_at <= release_frontier()
    ORDER BY r.visible_at, r.id
    LIMIT @max_rows
    -- (no key changes: a row an http fire's first attempt is recorded against — a foreign
    -- key's share lock — is not held up by a settling of thousands)
    FOR NO KEY UPDATE OF r SKIP LOCKED
), settled AS (
    UPDATE schedule_runs r
    SET armed       = false,
        fired_at    = CASE WHEN r.status = 'SKIPPED' THEN NULL WHEN r.workflow_id <> '' THEN r.fired_at ELSE due.released_at END,
        finished_at = CASE WHEN r.workflow_id <> '' THEN r.finished_at ELSE due.released_at END
    FROM due
    WHERE r.id = due.id
    RETURNING r.id, r.schedule_id, r.scheduled_at, r.visible_at, r.trigger, r.status, r.release_next_run_at, due.released_at,
              r.workflow_id, r.trace_context
), counted AS (
    SELECT count_released_fires(array_agg(schedule_id), array_agg(scheduled_at), array_agg(released_at),
                                array_agg(status::text), array_agg(release_next_run_at)) AS schedules
    FROM settled
)
SELECT settled.id, settled.schedule_id, settled.scheduled_at, settled.visible_at::timestamptz AS visible_at, settled.trigger,
       settled.status, settled.released_at::timestamptz AS released_at, settled.workflow_id, settled.trace_context
FROM settled, counted;

-- name: ReleaseDueFires :many
-- The release, step 2, one statement for every due run of the locked schedules, each
-- judged by tick_fate: a fire released on time, or late while workers were alive
-- (busy, not down), becomes true now (fired_at); one released late after an outage obeys
-- the catch-up window as any tick does: inside it, it becomes true as a catch-up fire;
-- beyond it, it is MISSED with the outage as its reason, and its event and outbox message
-- go (the fire never happened). An event fire is final at once; a workflow fire stays
-- RUNNING (its target started at visible_at, by Temporal's start delay) until its watcher
-- records the outcome. A workflow fire released late is not taken here: whether its target
-- started needs Temporal (ReleaseLateWorkflowFire). A fire's outbox message takes this
-- transaction's id as its feed position. Its schedule counts it (fired or missed,
-- last_run_at) and moves next_run_at past it unless something moved it already.
-- straggler_ids are fires armed behind the release frontier, by a transaction that arms
-- after a release already passed their time (releaseStragglers): released here, judged alike.
WITH due AS (
    SELECT r.id, r.visible_at, COALESCE(sqlc.narg(as_of)::timestamptz, now()) AS released_at, r.workflow_id <> '' AS starts_workflow,
           s.catchup_window_ms
    FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id
    WHERE r.armed AND r.status <> 'SKIPPED'
      AND ((r.visible_at > release_frontier() AND r.visible_at <= COALESCE(sqlc.narg(as_of)::timestamptz, now())
            AND r.schedule_id = ANY(@schedule_ids::bigint[]))
           OR r.id = ANY(@straggler_ids::bigint[]))
), judged AS (
    SELECT due.id, due.released_at, f.fate, f.reason, f.fired_at
    FROM due, tick_fate(due.visible_at, due.released_at, due.catchup_window_ms,
                        make_interval(secs => sqlc.arg(on_time_ms)::float8 / 1000), make_interval(secs => @grace_seconds::float8),
                        CASE WHEN due.starts_workflow THEN due.visible_at END) AS f (fate, reason, fired_at)
    WHERE NOT (due.starts_workflow AND due.released_at - due.visible_at > make_interval(secs => sqlc.arg(on_time_ms)::float8 / 1000))
    UNION ALL
    -- the late workflow fires, as judged from what their targets did (JudgeLateWorkflowFires)
    SELECT due.id, due.released_at, d.fate, d.reason, d.fired_at
    FROM (SELECT unnest(@decided_ids::bigint[]) AS id, unnest(@decided_fates::text[]) AS fate,
                 unnest(@decided_reasons::text[]) AS reason,
                 NULLIF(unnest(@decided_fired_at::timestamptz[]), '0001-01-01 00:00:00+00'::timestamptz) AS fired_at) d
    JOIN due ON due.id = d.id
), released AS (
    UPDATE schedule_runs r
    SET armed       = false,
        status      = CASE WHEN j.fate = 'missed' THEN 'MISSED' ELSE r.status END,
        trigger     = CASE WHEN j.fate = 'catchup' THEN 'catchup' ELSE r.trigger END,
        reason      = CASE WHEN j.reason <> '' THEN j.reason ELSE r.reason END,
        fired_at    = j.fired_at,
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
), counted AS (
    SELECT count_released_fires(array_agg(schedule_id), array_agg(scheduled_at), array_agg(released_at),
                                array_agg(status::text), array_agg(release_next_run_at)) AS schedules
    FROM released
)
SELECT released.id, released.schedule_id, released.scheduled_at, released.visible_at::timestamptz AS visible_at, released.trigger,
       released.status, released.released_at::timestamptz AS released_at, released.workflow_id, released.trace_context
FROM released, counted;

-- name: LateWorkflowFires :many
-- The armed workflow fires of the locked schedules released late (ReleaseDueFires leaves
-- them): whether their fate is on time, late, catch-up or missed depends on what their
-- targets did, which only Temporal knows (JudgeLateWorkflowFires takes that in).
-- direct: an http fire whose first attempt the releasing worker sends (http_first_attempts):
-- it has no target in Temporal, and has not started.
SELECT r.id, r.workflow_id, r.visible_at::timestamptz AS visible_at,
       EXISTS (SELECT 1 FROM http_first_attempts q WHERE q.run_id = r.id) AS direct
FROM schedule_runs r
WHERE r.armed AND r.workflow_id <> '' AND r.schedule_id = ANY(@schedule_ids::bigint[]) AND r.visible_at > release_frontier()
  AND r.visible_at <= COALESCE(sqlc.narg(as_of)::timestamptz, now())
  AND COALESCE(sqlc.narg(as_of)::timestamptz, now()) - r.visible_at > make_interval(secs => sqlc.arg(on_time_ms)::float8 / 1000)
ORDER BY r.id;

-- name: JudgeLateWorkflowFires :many
-- Each late workflow fire's fate by tick_fate, the one rule, from when its target started
-- (NULL: not yet) and whether its code began.
-- (A zero time, 0001-01-01, stands for NULL in the arrays: not started; missed, never fired.)
SELECT r.id, f.fate::text AS fate, f.reason::text AS reason,
       COALESCE(f.fired_at, '0001-01-01 00:00:00+00'::timestamptz)::timestamptz AS fired_at
FROM (SELECT unnest(@ids::bigint[]) AS id, NULLIF(unnest(@started_at::timestamptz[]), '0001-01-01 00:00:00+00'::timestamptz) AS started_at,
             unnest(@began::boolean[]) AS began) t
JOIN schedule_runs r ON r.id = t.id
JOIN schedules s ON s.id = r.schedule_id,
     tick_fate(r.visible_at, COALESCE(sqlc.narg(as_of)::timestamptz, now()), s.catchup_window_ms,
               make_interval(secs => sqlc.arg(on_time_ms)::float8 / 1000), make_interval(secs => @grace_seconds::float8),
               t.started_at, t.began) AS f (fate, reason, fired_at)
ORDER BY r.id;

-- name: JudgeLateTicks :many
-- The fate of ticks a schedule workflow handles late, by tick_fate (the one rule), at its
-- clock's judged_at: in the order given. since is the oldest of them, so that the ticks an
-- outage made late all name that outage, from its start.
SELECT t.fire_at::timestamptz AS fire_at, f.fate::text AS fate, f.reason::text AS reason
FROM unnest(@fire_at::timestamptz[]) WITH ORDINALITY AS t (fire_at, n),
     tick_fate(t.fire_at, @judged_at::timestamptz, @catchup_window_ms::bigint,
               make_interval(secs => sqlc.arg(on_time_ms)::float8 / 1000), make_interval(secs => @grace_seconds::float8),
               NULL, false, @since::timestamptz) AS f (fate, reason, fired_at)
ORDER BY t.n;

-- name: NextArmedFireIn :one
-- How long until the next armed run not yet released is due, by the database's clock
-- (+Inf: none armed).
SELECT COALESCE(EXTRACT(EPOCH FROM min(visible_at) - clock_timestamp())::float8, 'Infinity'::float8)::float8 AS seconds
FROM schedule_runs WHERE armed AND visible_at > release_frontier();

-- name: CountUnsettled :one
-- Released runs not yet settled.
SELECT count(*)::bigint FROM schedule_runs WHERE armed AND visible_at <= release_frontier();

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

-- name: InsertScheduleRefusal :exec
-- Records a refused command signal.
INSERT INTO schedule_refusals (schedule_id, command, door, field, reason, payload, refused_at)
VALUES (@schedule_id, @command, @door, @field, @reason, @payload, @refused_at);

-- name: TrimScheduleRefusals :exec
-- Keeps the newest 100 refusals of a schedule.
DELETE FROM schedule_refusals d
WHERE d.schedule_id = @schedule_id
  AND d.id NOT IN (SELECT r.id FROM schedule_refusals r WHERE r.schedule_id = @schedule_id ORDER BY r.id DESC LIMIT 100);

-- name: ListScheduleRefusals :many
SELECT * FROM schedule_refusals WHERE schedule_id = @schedule_id ORDER BY id DESC LIMIT @max_rows;

-- name: InsertSchedules :many
-- A bulk create: every row in one statement; a name taken already inserts nothing (the
-- caller compares the existing row with what was asked, ListSchedulesByName). The http
-- actions' signing secrets and header values ('' for none) go in with them (a name taken
-- keeps its own). (0 and '' stand
-- for NULL in max_concurrents and when_fulls: no cap.)
WITH secrets AS (
    INSERT INTO schedule_secrets (schedule_name, secret)
    SELECT k.name, k.secret FROM (SELECT unnest(@names::text[]) AS name, unnest(@signing_secrets::text[]) AS secret) k
    WHERE k.secret <> ''
    ON CONFLICT (schedule_name) DO NOTHING
), header_values AS (
    INSERT INTO schedule_header_values (schedule_name, header_values)
    SELECT v.name, v.header_values::jsonb FROM (SELECT unnest(@names::text[]) AS name, unnest(@header_values::text[]) AS header_values) v
    WHERE v.header_values <> ''
    ON CONFLICT (schedule_name) DO NOTHING
)
INSERT INTO schedules (name, spec, action, overlap, catchup_window_ms, skip_if_successful, paused, pause_note, next_run_at,
                       watermark, plan_at, plan_action, retry, after_completion, max_concurrent, overlap_when_full, labels)
SELECT g.name, g.spec::jsonb, g.action::jsonb, g.overlap, g.catchup_window_ms, g.skip_if_successful, g.paused, g.pause_note,
       NULLIF(g.next_run_at, '0001-01-01 00:00:00+00'::timestamptz), g.watermark,
       NULLIF(g.plan_at, '0001-01-01 00:00:00+00'::timestamptz), NULLIF(g.plan_action, ''), NULLIF(g.retry, '')::jsonb, g.after_completion,
       NULLIF(g.max_concurrent, 0), NULLIF(g.when_full, ''), g.labels::jsonb
FROM (SELECT unnest(@names::text[]) AS name, unnest(@specs::text[]) AS spec, unnest(@actions::text[]) AS action,
             unnest(@overlap_policies::text[]) AS overlap, unnest(@catchup_window_ms::bigint[]) AS catchup_window_ms,
             unnest(@skip_if_successful::boolean[]) AS skip_if_successful, unnest(@paused::boolean[]) AS paused,
             unnest(@pause_notes::text[]) AS pause_note, unnest(@next_run_at::timestamptz[]) AS next_run_at,
             unnest(@watermarks::timestamptz[]) AS watermark, unnest(@plan_ats::timestamptz[]) AS plan_at,
             unnest(@plan_actions::text[]) AS plan_action, unnest(@retries::text[]) AS retry,
             unnest(@after_completions::text[]) AS after_completion, unnest(@max_concurrents::integer[]) AS max_concurrent,
             unnest(@when_fulls::text[]) AS when_full, unnest(@labels::text[]) AS labels) g
ON CONFLICT (name) DO NOTHING
RETURNING *;

-- name: ListSchedulesByName :many
SELECT * FROM schedules WHERE name = ANY(@names::text[]);

-- name: RunTraceContext :one
-- The span context a run's fire recorded (NULL: recorded while tracing was off), for the
-- calls that continue its trace later (starting a workflow action's target).
SELECT trace_context FROM schedule_runs WHERE id = @id;
