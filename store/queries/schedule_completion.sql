-- One-time schedules' completion (docs/schedules.md "One-time schedules";
-- migrations/00095_one_time_schedules.sql): the planner's step that marks a schedule with no
-- tick left completed once its tick's run has ended, or deletes it.

-- name: LockSchedulesToComplete :many
-- Schedules at rest whose completion is due for a look, earliest first, skipping any that
-- another planner, a settling release or a command holds; with what the decision reads:
-- the outcome of the one-time tick (its run, settled; NULL when never recorded) and whether
-- anything of the schedule is still in flight: a run running or waiting, or a fire armed
-- or released but not yet settled.
SELECT sqlc.embed(s),
       COALESCE((SELECT r.status FROM schedule_runs r
        WHERE r.schedule_id = s.id AND r.scheduled_at = (s.spec ->> 'at')::timestamptz AND r.trigger <> 'manual'
          AND r.retracted_at IS NULL AND NOT r.armed
        ORDER BY r.id LIMIT 1), '')::text AS tick_status,
       EXISTS (SELECT 1 FROM schedule_runs r WHERE r.schedule_id = s.id AND r.status IN ('RUNNING', 'BUFFERED')) AS in_flight,
       EXISTS (SELECT 1 FROM schedule_runs r WHERE r.schedule_id = s.id AND r.armed) AS armed
FROM schedules s
WHERE s.owner IS NULL AND s.plan_action = 'complete' AND s.plan_at <= @now::timestamptz
ORDER BY s.plan_at
LIMIT @max_rows
FOR NO KEY UPDATE OF s SKIP LOCKED;

-- name: MarkSchedulesCompleted :exec
-- The schedules given are completed: nothing left to fire or to wait for (one completed
-- before, woken by a command since, keeps when it was).
UPDATE schedules SET completed_at = COALESCE(completed_at, now()), plan_at = NULL, plan_action = NULL, next_run_at = NULL, updated_at = now()
WHERE id = ANY(@ids::bigint[]);

-- name: DeleteCompletedSchedules :many
-- The completed schedules that asked to go (after_completion 'delete'): their runs go with
-- them (cascade); the events they appended stay in the feed (event_store.schedule_run_id
-- is set NULL), and so does a workflow action's target in Temporal.
DELETE FROM schedules WHERE id = ANY(@ids::bigint[]) AND after_completion = 'delete'
RETURNING id, name;

-- name: ReplanSchedules :exec
-- The completion step's other answers: look again later (a run still in flight), or plan
-- anew (a zero time, 0001-01-01, and an empty action stand for NULL: nothing until a command).
UPDATE schedules s
SET plan_at = NULLIF(v.plan_at, '0001-01-01 00:00:00+00'::timestamptz), plan_action = NULLIF(v.plan_action, '')
FROM (SELECT unnest(@ids::bigint[]) AS id, unnest(@plan_ats::timestamptz[]) AS plan_at, unnest(@plan_actions::text[]) AS plan_action) v
WHERE s.id = v.id;
