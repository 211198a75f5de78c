-- +goose Up
-- The schedules due at an instant: an armed fire's window is spread over a span that grows
-- with how many schedules share its tick's second (CountSchedulesDueIn counts them: those
-- whose next fire it is, and those that armed a fire for it already).
CREATE INDEX schedules_by_next_run ON schedules (next_run_at) WHERE next_run_at IS NOT NULL;
CREATE INDEX schedule_runs_armed_by_tick ON schedule_runs (scheduled_at) WHERE armed;
-- A run's event, found by the release (the outbox position), the retraction and a MISSED
-- release's delete: without it each of them read the whole event store, which only grows.
CREATE INDEX event_store_by_run ON event_store (schedule_run_id) WHERE schedule_run_id IS NOT NULL;

-- +goose Down
DROP INDEX event_store_by_run;
DROP INDEX schedule_runs_armed_by_tick;
DROP INDEX schedules_by_next_run;
