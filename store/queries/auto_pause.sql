-- Schedules that pause themselves after sustained failure (docs/schedules.md "Endpoints that
-- fail"; migrations/00171_auto_pause.sql).

-- name: NoteRunStreaks :many
-- The failure streaks of the schedules whose runs just ended (rows locked by the caller, in
-- id order): per schedule, whether a success came among them (the streak starts again after
-- it), how many failures came after the last success, when the first of those ended and the
-- last one's error. Counted only for schedules whose action has auto_pause, and only where
-- something changes. Answers the schedules whose streak grew, with their rule.
UPDATE schedules s
SET failure_streak = CASE WHEN v.reset THEN 0 ELSE s.failure_streak END + v.failures,
    failing_since  = CASE WHEN v.failures = 0 THEN NULL
                          WHEN v.reset OR s.failure_streak = 0 OR s.failing_since IS NULL THEN v.first_failure
                          ELSE s.failing_since END
FROM (SELECT unnest(@schedule_ids::bigint[]) AS id, unnest(@reset::boolean[]) AS reset, unnest(@failures::int[]) AS failures,
             unnest(@first_failure::timestamptz[]) AS first_failure) v
WHERE s.id = v.id AND s.action ? 'auto_pause' AND (v.failures > 0 OR s.failure_streak > 0)
RETURNING s.id, s.name, s.action, s.paused, s.failure_streak, COALESCE(s.failing_since, now())::timestamptz AS failing_since,
          (s.auto_pause_due IS NOT NULL)::boolean AS due, v.failures::int AS new_failures;

-- name: StreaksSince :many
-- Of the schedules given whose action has auto_pause, since when their streak counts runs
-- (the zero time, 0001-01-01: since ever).
SELECT id, COALESCE(streak_since, '0001-01-01 00:00:00+00'::timestamptz)::timestamptz AS since FROM schedules
WHERE id = ANY(@ids::bigint[]) AND action ? 'auto_pause';

-- name: SetAutoPauseDue :exec
-- The rule was met: the schedule is to pause itself, for this reason (a worker sends its
-- workflow the pause command).
UPDATE schedules SET auto_pause_due = @reason WHERE id = @id AND auto_pause_due IS NULL AND NOT paused;

-- name: ListAutoPausesDue :many
-- Schedules whose rule was met and whose pause was not yet applied.
SELECT id, name, auto_pause_due::text AS reason FROM schedules WHERE auto_pause_due IS NOT NULL ORDER BY id LIMIT @max_rows;

-- name: ApplyAutoPause :exec
-- The schedule's workflow applied the pause the rule asked for: recorded as such, until a
-- resume.
UPDATE schedules SET auto_paused_at = now(), auto_pause_reason = auto_pause_due, auto_pause_due = NULL WHERE id = @id;

-- name: ClearAutoPauseDue :exec
-- Paused already (by someone else): the rule's pause has nothing to do.
UPDATE schedules SET auto_pause_due = NULL WHERE id = @id;

-- name: ClearAutoPause :exec
-- A resume: the pause the schedule made itself is over, and its failures count again from
-- now.
UPDATE schedules SET auto_paused_at = NULL, auto_pause_reason = NULL, auto_pause_due = NULL, failure_streak = 0, failing_since = NULL,
    streak_since = now()
WHERE id = @id;
