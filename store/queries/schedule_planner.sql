-- The planner and the handover of a schedule between it and its workflow (docs/schedules.md
-- "How it runs"; migrations/00043_schedule_planner.sql).

-- name: TakeScheduleOwnership :one
-- A workflow run takes its schedule, waiting for the row lock of a planner round that holds
-- it: from its commit on, that run is the single writer of the schedule's runtime state and
-- the planner leaves the row alone. By id, or by name for a run another service started
-- (signal-with-start knows only the name).
UPDATE schedules
SET owner = @owner, rest_requested_at = NULL, owner_checked_at = NULL, plan_at = NULL, plan_action = NULL
WHERE CASE WHEN @id::bigint <> 0 THEN id = @id::bigint ELSE name = @name::text END
RETURNING *;

-- name: ListArmedRunsOfSchedule :many
-- The schedule's armed fires not yet released, earliest first: what a workflow taking the
-- schedule over may have to retract.
SELECT * FROM schedule_runs WHERE schedule_id = @schedule_id AND armed AND visible_at > release_frontier() ORDER BY scheduled_at, id;

-- name: RequestScheduleRest :execrows
-- The owning run asks to rest, leaving the state the planner goes on from. The handover
-- completes once Temporal says the run has ended (CompleteScheduleRest).
UPDATE schedules
SET rest_requested_at = now(), owner_checked_at = NULL, watermark = @watermark,
    last_success_at = GREATEST(last_success_at, @last_success_at),
    rescheduled_to = @rescheduled_to, plan_at = @plan_at, plan_action = @plan_action,
    next_run_at = @next_run_at, updated_at = now()
WHERE id = @id AND owner = @owner;

-- name: RestScheduleInPlace :execrows
-- A resident run (TICKGATE_SCHEDULES_RESIDENT) rests and stays open: the handover completes
-- in this transaction, with the same state and plan a rest request leaves, because the run
-- decides nothing more until it takes the schedule over again (TakeScheduleOwnership),
-- whatever reaches it meanwhile.
UPDATE schedules
SET owner = NULL, rest_requested_at = NULL, owner_checked_at = NULL, watermark = @watermark,
    last_success_at = GREATEST(last_success_at, @last_success_at),
    rescheduled_to = @rescheduled_to, plan_at = @plan_at, plan_action = @plan_action,
    next_run_at = @next_run_at, updated_at = now()
WHERE id = @id AND owner = @owner;

-- name: ListRestRequests :many
-- Rests to complete: asked for at least half a second ago (the run ends in the same
-- workflow task that asked), each looked at again after a quarter of its age, so a run that
-- took a command after asking is not asked about at every round.
SELECT id, name, owner::text AS owner, rest_requested_at::timestamptz AS rest_requested_at FROM schedules
WHERE rest_requested_at <= now() - interval '500 milliseconds'
  AND (owner_checked_at IS NULL OR owner_checked_at <= now() - greatest(interval '1 second', (now() - rest_requested_at) / 4))
ORDER BY rest_requested_at
LIMIT @max_rows;

-- name: CompleteScheduleRest :execrows
-- The run that asked has ended: the schedule is at rest, the planner's.
UPDATE schedules SET owner = NULL, rest_requested_at = NULL, owner_checked_at = NULL
WHERE id = @id AND owner = @owner AND rest_requested_at IS NOT NULL;

-- name: MarkOwnerChecked :exec
UPDATE schedules SET owner_checked_at = now() WHERE id = @id AND owner = @owner;

-- name: ListOverdueOwners :many
-- Schedules held by a run whose next fire is a minute overdue: a run that ended without
-- resting (terminated by hand, failed) leaves its schedule behind; the planner asks
-- Temporal about each at most once a minute.
SELECT id, name, owner::text AS owner FROM schedules
WHERE owner IS NOT NULL AND owner <> 'legacy' AND rest_requested_at IS NULL AND next_run_at < now() - interval '1 minute'
  AND (owner_checked_at IS NULL OR owner_checked_at <= now() - interval '1 minute')
ORDER BY next_run_at
LIMIT @max_rows;

-- name: TakeBackAbandonedSchedule :execrows
-- The owner ended without resting: the schedule is at rest again, and its workflow is woken
-- at once to take it up from its row (due ticks, runs in flight, what waits).
UPDATE schedules SET owner = NULL, owner_checked_at = NULL, plan_at = now(), plan_action = 'wake'
WHERE id = @id AND owner = @owner AND rest_requested_at IS NULL;

-- name: ListLegacySchedules :many
SELECT id, name FROM schedules WHERE owner = 'legacy' ORDER BY id LIMIT @max_rows;

-- name: AdoptLegacySchedule :execrows
-- A schedule of the version before the planner, whose old workflow the planner terminated:
-- its watermark is the tick before its next fire (or the newest tick it recorded), and its
-- workflow is woken to take it up (runs in flight, buffered ticks, backfills).
UPDATE schedules s
SET owner = NULL, plan_at = now(), plan_action = 'wake',
    watermark = CASE WHEN s.paused THEN now()
                     ELSE GREATEST(s.next_run_at - interval '1 microsecond',
                                   (SELECT max(r.scheduled_at) FROM schedule_runs r
                                    WHERE r.schedule_id = s.id AND r.retracted_at IS NULL AND (r.armed OR r.trigger IN ('scheduled', 'catchup'))),
                                   s.created_at) END
WHERE s.id = @id AND s.owner = 'legacy';

-- name: LockSchedulesToPlan :many
-- A planner round: the schedules at rest due for a look, earliest first, skipping any that
-- another planner, a releaser or a command holds.
-- (A completion due is the completion step's: LockSchedulesToComplete.)
SELECT * FROM schedules
WHERE owner IS NULL AND plan_at <= @now::timestamptz AND plan_action <> 'complete'
ORDER BY plan_at
LIMIT @max_rows
FOR NO KEY UPDATE SKIP LOCKED;

-- name: NextPlanAt :one
-- When the next schedule at rest is due for a look (the zero time, 0001-01-01: none).
SELECT COALESCE(min(plan_at), '0001-01-01 00:00:00+00'::timestamptz)::timestamptz AS plan_at
FROM schedules WHERE owner IS NULL AND plan_at IS NOT NULL;

-- name: ArmPlannedFires :many
-- Arms the fires a planner round decided, for many schedules in one statement (the round
-- holds their row locks): per fire a run (an event fire SUCCEEDED, a workflow fire RUNNING,
-- both hidden until their release), its event and its outbox message without a feed
-- position, and (with tracing on) the span context of its fire's trace. A tick recorded
-- before inserts nothing (S1). A workflow fire of a tick whose
-- earlier armed fire was retracted gets a workflow id of its own (~2, ~3, …). A tick a
-- calendar excludes (a skip reason given) is armed as the SKIPPED row it is, with no event:
-- it shows among the runs at its release like any fire, holding its tick key. An http fire
-- (direct) is queued for its first attempt (http_first_attempts): the worker that releases it
-- sends it, and no delivery workflow is started ahead.
WITH given AS (
    -- set-returning functions in one select list advance together: row i of each array (a
    -- zero time, 0001-01-01, stands for NULL: no tick after)
    SELECT unnest(@schedule_ids::bigint[]) AS schedule_id, unnest(@scheduled_at::timestamptz[]) AS scheduled_at,
           unnest(@visible_at::timestamptz[]) AS visible_at, unnest(@idempotency_keys::text[]) AS idempotency_key,
           unnest(@workflow_ids::text[]) AS workflow_id,
           NULLIF(unnest(@release_next_run_at::timestamptz[]), '0001-01-01 00:00:00+00'::timestamptz) AS release_next_run_at,
           unnest(@topics::text[]) AS topic, unnest(@types::text[]) AS type, unnest(@aggregate_ids::text[]) AS aggregate_id,
           unnest(@data::text[]) AS data, unnest(@trace_contexts::text[]) AS trace_context,
           unnest(@skip_reasons::text[]) AS skip_reason, unnest(@direct::boolean[]) AS direct
), runs AS (
    INSERT INTO schedule_runs (schedule_id, scheduled_at, fired_at, trigger, status, reason, idempotency_key, workflow_id, finished_at,
                               armed, visible_at, release_next_run_at, trace_context)
    SELECT g.schedule_id, g.scheduled_at, CASE WHEN g.skip_reason = '' THEN g.visible_at END, 'scheduled',
           CASE WHEN g.skip_reason <> '' THEN 'SKIPPED' WHEN g.workflow_id = '' THEN 'SUCCEEDED' ELSE 'RUNNING' END, g.skip_reason, g.idempotency_key,
           g.workflow_id || CASE WHEN g.workflow_id = '' THEN '' ELSE COALESCE(
               (SELECT '~' || (count(*) + 1) FROM schedule_runs p
                WHERE p.schedule_id = g.schedule_id AND p.scheduled_at = g.scheduled_at AND p.retracted_at IS NOT NULL
                HAVING count(*) > 0), '') END,
           CASE WHEN g.workflow_id = '' OR g.skip_reason <> '' THEN g.visible_at END,
           true, g.visible_at, g.release_next_run_at, NULLIF(g.trace_context, '')
    FROM given g
    ON CONFLICT (idempotency_key) DO NOTHING
    RETURNING id, schedule_id, scheduled_at, visible_at, idempotency_key, workflow_id, trace_context, status
), events AS (
    INSERT INTO event_store (topic, type, aggregate_id, data, schedule_run_id, created_at)
    SELECT g.topic, g.type, g.aggregate_id, g.data::jsonb, r.id, r.visible_at
    FROM runs r JOIN given g ON g.idempotency_key = r.idempotency_key
    WHERE r.status <> 'SKIPPED'
    RETURNING id, topic, created_at
), messages AS (
    INSERT INTO outbox_messages (event_id, topic, tx_id, visible_at)
    SELECT id, topic, NULL, created_at FROM events
), first_attempts AS (
    -- an http fire's first attempt, sent by the worker that releases it
    INSERT INTO http_first_attempts (run_id, visible_at)
    SELECT r.id, r.visible_at FROM runs r JOIN given g ON g.idempotency_key = r.idempotency_key
    WHERE g.direct AND r.status = 'RUNNING'
)
SELECT id, schedule_id, scheduled_at, visible_at::timestamptz AS visible_at, workflow_id,
       COALESCE(trace_context, '')::text AS trace_context, status FROM runs;

-- name: SetSchedulePlans :exec
-- A planner round's new plan of each schedule it looked at: how far it is armed, and when
-- the planner looks again and what it does then. next_run_at, the first fire not yet
-- released, is set only where none was (the release moves it on).
UPDATE schedules s
SET watermark   = COALESCE(v.watermark, s.watermark),
    plan_at     = v.plan_at,
    plan_action = v.plan_action,
    next_run_at = COALESCE(s.next_run_at, v.first_fire),
    updated_at  = now()
-- (A zero time, 0001-01-01, and an empty action stand for NULL in the arrays.)
FROM (SELECT unnest(@ids::bigint[]) AS id, NULLIF(unnest(@watermarks::timestamptz[]), '0001-01-01 00:00:00+00'::timestamptz) AS watermark,
             NULLIF(unnest(@plan_ats::timestamptz[]), '0001-01-01 00:00:00+00'::timestamptz) AS plan_at, NULLIF(unnest(@plan_actions::text[]), '') AS plan_action,
             NULLIF(unnest(@first_fires::timestamptz[]), '0001-01-01 00:00:00+00'::timestamptz) AS first_fire) v
WHERE s.id = v.id;

-- name: SchedulesInFlight :many
-- Which of the schedules given have runs in flight (RUNNING, armed ones among them) or ticks
-- waiting (BUFFERED), and how many: the planner arms a workflow action's fire (but under
-- allow_all) only when nothing of the schedule runs, and a capped one's only while fewer than
-- max_concurrent do. A redrive (a failed run delivered again) is outside the overlap policy
-- and the cap: it does not count.
SELECT schedule_id, count(*) FILTER (WHERE status = 'RUNNING')::bigint AS running,
       count(*) FILTER (WHERE status = 'BUFFERED')::bigint AS buffered
FROM schedule_runs
WHERE schedule_id = ANY(@schedule_ids::bigint[]) AND status IN ('RUNNING', 'BUFFERED') AND redrives = 0
GROUP BY schedule_id;

-- name: ClaimRunsToWatch :many
-- Leases, until @until, the runs of schedules at rest that are in flight and watched by no
-- one (never, or a lease run out): their targets started, their outcome not yet recorded.
-- A run is leased only @settle after its fire time: a burst's thousand watches (each a
-- long poll on Temporal) then do not compete with the thousand targets Temporal begins at
-- the tick; a run's outcome is recorded that much later at most. A redriven run is the
-- watchers' whoever holds its schedule (its workflow does not watch it). An http fire whose
-- first attempt is the sender's (http_first_attempts) has no workflow to wait for yet: it is
-- watched once its delivery workflow was started to retry it.
UPDATE schedule_runs r SET watched_until = @until::timestamptz
WHERE r.id IN (
    SELECT x.id FROM schedule_runs x JOIN schedules s ON s.id = x.schedule_id
    WHERE x.status = 'RUNNING' AND run_shown(x.armed, x.visible_at) AND x.workflow_id <> '' AND (s.owner IS NULL OR x.redrives > 0)
      AND COALESCE(x.visible_at, x.fired_at, x.scheduled_at) <= now() - make_interval(secs => @settle_seconds::float8)
      AND (x.watched_until IS NULL OR x.watched_until < now())
      AND NOT EXISTS (SELECT 1 FROM http_first_attempts q WHERE q.run_id = x.id)
    ORDER BY x.watched_until NULLS FIRST
    LIMIT @max_rows
    FOR UPDATE OF x SKIP LOCKED)
RETURNING r.id, r.workflow_id, r.schedule_id;

-- name: WakeSchedulesWithoutWorkflow :execrows
-- Resident schedules (TICKGATE_SCHEDULES_RESIDENT): the schedules at rest that are not
-- completed, created before @created_before (a newer one is woken by its creation), whose
-- workflow is not among those open (@open, the names), are woken by the planner's next round:
-- their workflow opens, takes the schedule and rests it in place.
UPDATE schedules SET plan_at = now(), plan_action = 'wake'
WHERE owner IS NULL AND completed_at IS NULL AND created_at < @created_before::timestamptz
  AND plan_action IS DISTINCT FROM 'wake' AND NOT (name = ANY(@open::text[]));
