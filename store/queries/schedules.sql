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
-- The one exception: a backfill may run a tick that was only recorded MISSED (it never
-- ran), turning that row into the run.
INSERT INTO schedule_runs (schedule_id, scheduled_at, fired_at, trigger, status, reason, idempotency_key, workflow_id, finished_at)
VALUES (@schedule_id, @scheduled_at, @fired_at, @trigger, @status, @reason, @idempotency_key, @workflow_id, @finished_at)
ON CONFLICT (idempotency_key) DO UPDATE
SET fired_at = EXCLUDED.fired_at, trigger = EXCLUDED.trigger, status = EXCLUDED.status, reason = EXCLUDED.reason,
    workflow_id = EXCLUDED.workflow_id, finished_at = EXCLUDED.finished_at
WHERE schedule_runs.status = 'MISSED' AND EXCLUDED.trigger = 'backfill' AND EXCLUDED.fired_at IS NOT NULL
RETURNING *;

-- name: GetScheduleRunByKey :one
SELECT * FROM schedule_runs WHERE idempotency_key = @idempotency_key;

-- name: FinishScheduleRun :one
UPDATE schedule_runs
SET status = @status, error = @error, finished_at = now()
WHERE id = @id AND status = 'RUNNING'
RETURNING *;

-- name: ListScheduleRuns :many
SELECT * FROM schedule_runs
WHERE schedule_id = @schedule_id AND (@before_id::bigint = 0 OR id < @before_id::bigint)
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
SELECT * FROM schedule_runs WHERE id = @id AND schedule_id = @schedule_id;
