-- +goose Up
-- A tick that waits under an overlap policy (buffer_one, buffer_all, cancel_other) is a row
-- from the moment it is buffered, status BUFFERED with the reason it waits: the schedule's
-- view reads what is waiting from SQL, and a buffered tick is accounted for (S2) even while
-- a pause holds it. When it starts, the same row (same idempotency key) becomes RUNNING; a
-- newer cancel_other tick turns it SKIPPED. It has not fired (no fired_at) and is not final
-- (no finished_at).
ALTER TABLE schedule_runs
    DROP CONSTRAINT schedule_runs_status_check,
    DROP CONSTRAINT schedule_runs_fired_at,
    DROP CONSTRAINT schedule_runs_finished_at,
    DROP CONSTRAINT schedule_runs_reason;
ALTER TABLE schedule_runs
    ADD CONSTRAINT schedule_runs_status_check
        CHECK (status IN ('BUFFERED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELED', 'TERMINATED', 'SKIPPED', 'MISSED')),
    ADD CONSTRAINT schedule_runs_fired_at CHECK ((fired_at IS NULL) = (status IN ('BUFFERED', 'SKIPPED', 'MISSED'))),
    ADD CONSTRAINT schedule_runs_finished_at CHECK ((finished_at IS NULL) = (status IN ('BUFFERED', 'RUNNING'))),
    ADD CONSTRAINT schedule_runs_reason CHECK (status NOT IN ('BUFFERED', 'SKIPPED', 'MISSED') OR reason <> '');
CREATE INDEX schedule_runs_buffered ON schedule_runs (schedule_id, scheduled_at) WHERE status = 'BUFFERED';

-- +goose Down
DROP INDEX schedule_runs_buffered;
DELETE FROM schedule_runs WHERE status = 'BUFFERED';
ALTER TABLE schedule_runs
    DROP CONSTRAINT schedule_runs_status_check,
    DROP CONSTRAINT schedule_runs_fired_at,
    DROP CONSTRAINT schedule_runs_finished_at,
    DROP CONSTRAINT schedule_runs_reason;
ALTER TABLE schedule_runs
    ADD CONSTRAINT schedule_runs_status_check
        CHECK (status IN ('RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELED', 'TERMINATED', 'SKIPPED', 'MISSED')),
    ADD CONSTRAINT schedule_runs_fired_at CHECK ((fired_at IS NULL) = (status IN ('SKIPPED', 'MISSED'))),
    ADD CONSTRAINT schedule_runs_finished_at CHECK ((finished_at IS NULL) = (status = 'RUNNING')),
    ADD CONSTRAINT schedule_runs_reason CHECK (status NOT IN ('SKIPPED', 'MISSED') OR reason <> '');
