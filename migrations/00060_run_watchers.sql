-- +goose Up
-- Run watchers (docs/schedules.md "How it runs"): a workflow action's run started by the
-- planner, of a schedule at rest, is watched by whichever worker leases it — its outcome
-- recorded when its target closes — rather than by the schedule's workflow, which a
-- schedule at rest does not have. watched_until is the lease: a worker that dies lets it
-- run out, and another takes the watch over.
ALTER TABLE schedule_runs ADD COLUMN watched_until timestamptz;
CREATE INDEX schedule_runs_to_watch ON schedule_runs (watched_until NULLS FIRST) WHERE status = 'RUNNING' AND NOT armed;
-- What the planner asks of each schedule it looks at: whether a run is in flight or waits.
CREATE INDEX schedule_runs_in_flight ON schedule_runs (schedule_id) WHERE status IN ('RUNNING', 'BUFFERED');

-- +goose Down
DROP INDEX schedule_runs_in_flight;
DROP INDEX schedule_runs_to_watch;
ALTER TABLE schedule_runs DROP COLUMN watched_until;
