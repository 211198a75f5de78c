-- +goose Up
-- A schedule's armed runs, for the statements that look at one schedule's: the arming of a
-- window puts next_run_at on the earliest (SetNextRunAtToFirstArmed) and a retraction
-- deletes those not yet due (DeleteArmedRuns, DeleteArmedEvents). Without it they read every
-- run the schedule ever had (schedule_runs_by_schedule) or every armed run of every
-- schedule (schedule_runs_armed_due); an every-second schedule arms a window every ~15 s.
CREATE INDEX schedule_runs_armed_by_schedule ON schedule_runs (schedule_id, scheduled_at) WHERE armed;

-- +goose Down
DROP INDEX schedule_runs_armed_by_schedule;
