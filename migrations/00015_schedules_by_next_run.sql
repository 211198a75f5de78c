-- +goose Up
-- The schedules due at an instant: an armed fire's window is spread over a span that grows
-- with how many schedules share its tick's second (CountSchedulesDueIn counts them: those
-- whose next fire it is, and those that armed a fire for it already).
CREATE INDEX schedules_by_next_run ON schedules (next_run_at) WHERE next_run_at IS NOT NULL;
CREATE INDEX schedule_runs_armed_by_tick ON schedule_runs (scheduled_at) WHERE armed;

-- +goose Down
DROP INDEX schedule_runs_armed_by_tick;
DROP INDEX schedules_by_next_run;
