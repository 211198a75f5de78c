-- +goose Up
-- The operator's console (docs/console.md): the indexes its lists and statistics read, and
-- the per-schedule Prometheus opt-in.

-- GET /schedules?state=active|paused pages in name order within one state: an index range
-- scan that stops when the page is full, however many schedules there are.
CREATE INDEX schedules_by_state ON schedules (paused, name);

-- Statistics over a time window (GET /stats/overview, GET /schedules/{name}/stats, the
-- runs list's ?since=) read the runs whose tick lies in the window. Runs are inserted close
-- to their tick, so the table's physical order follows scheduled_at: a BRIN index finds the
-- window's pages for a few kilobytes of index and almost no cost per insert (a B-tree on
-- the busiest table would add a write to every fire).
CREATE INDEX schedule_runs_by_tick ON schedule_runs USING brin (scheduled_at) WITH (pages_per_range = 16, autosummarize = on);

-- The runs that went wrong, per schedule: the runs list filtered by status and the
-- per-schedule "failed" series count them without reading the schedule's every run.
CREATE INDEX schedule_runs_problems ON schedule_runs (schedule_id, status, id)
    WHERE status IN ('FAILED', 'MISSED', 'SKIPPED');

-- A schedule whose figures Prometheus gets as series of their own (metrics/schedules.go).
-- The API caps how many schedules may ask (docs/console.md#prometheus).
ALTER TABLE schedules ADD COLUMN metrics boolean NOT NULL DEFAULT false;
CREATE INDEX schedules_with_metrics ON schedules (name) WHERE metrics;

-- +goose Down
DROP INDEX schedules_with_metrics;
ALTER TABLE schedules DROP COLUMN metrics;
DROP INDEX schedule_runs_problems;
DROP INDEX schedule_runs_by_tick;
DROP INDEX schedules_by_state;
