-- +goose Up
-- Endpoints that fail, handled (docs/schedules.md "Endpoints that fail"): an http action's
-- schedule with auto_pause pauses itself after sustained failure.
--
-- failure_streak and failing_since: how many runs in a row ended FAILED (counted for
-- schedules whose action has auto_pause), and when the first of them ended; a success, or a
-- resume, starts the count again. auto_pause_due: the reason, once the rule was met and until
-- the schedule's workflow applied the pause (a worker sends it the pause command). The pause
-- it applied: auto_paused_at and auto_pause_reason, until a resume.
ALTER TABLE schedules ADD COLUMN failure_streak integer NOT NULL DEFAULT 0;
ALTER TABLE schedules ADD COLUMN failing_since timestamptz;
ALTER TABLE schedules ADD COLUMN auto_pause_due text;
ALTER TABLE schedules ADD COLUMN auto_paused_at timestamptz;
ALTER TABLE schedules ADD COLUMN auto_pause_reason text;
-- The streak counts the runs whose tick is at or after this (a resume's time): a run fired
-- before the resume and ending after it does not count.
ALTER TABLE schedules ADD COLUMN streak_since timestamptz;
CREATE INDEX schedules_auto_pause_due ON schedules (id) WHERE auto_pause_due IS NOT NULL;

-- A schedule's history tells of a pause it made itself.
ALTER TABLE schedule_history DROP CONSTRAINT schedule_history_kind_check;
ALTER TABLE schedule_history ADD CONSTRAINT schedule_history_kind_check CHECK (kind IN ('pause', 'resume', 'update', 'rotate_secret', 'auto_pause'));

-- +goose Down
UPDATE schedule_history SET kind = 'pause' WHERE kind = 'auto_pause';
ALTER TABLE schedule_history DROP CONSTRAINT schedule_history_kind_check;
ALTER TABLE schedule_history ADD CONSTRAINT schedule_history_kind_check CHECK (kind IN ('pause', 'resume', 'update', 'rotate_secret'));
DROP INDEX schedules_auto_pause_due;
ALTER TABLE schedules DROP COLUMN streak_since, DROP COLUMN auto_pause_reason, DROP COLUMN auto_paused_at, DROP COLUMN auto_pause_due,
    DROP COLUMN failing_since, DROP COLUMN failure_streak;
