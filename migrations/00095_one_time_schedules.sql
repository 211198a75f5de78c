-- +goose Up
-- One-time schedules (issue 28, docs/schedules.md "One-time schedules"): a schedule whose
-- spec gives one tick (spec.at). It is created, armed and fired as any schedule is; once
-- its tick's run has ended the planner marks it completed (completed_at) — or, with
-- after_completion 'delete', deletes it (its runs go with it; the events it appended stay in
-- the feed). The planner is told to look by the plan 'complete', set when the schedule has
-- no tick left; the statement that records a run's outcome brings that look forward.
ALTER TABLE schedules
    ADD COLUMN after_completion text NOT NULL DEFAULT 'keep' CHECK (after_completion IN ('keep', 'delete')),
    ADD COLUMN completed_at timestamptz,
    DROP CONSTRAINT schedules_plan_action_check,
    ADD CONSTRAINT schedules_plan_action_check CHECK (plan_action IN ('arm', 'wake', 'complete'));

-- GET /schedules?state=… pages in name order within one state: active and paused among the
-- schedules not completed, and the completed ones apart. Each new schedule still costs one
-- entry in one of them.
DROP INDEX schedules_by_state;
CREATE INDEX schedules_by_state ON schedules (paused, name) WHERE completed_at IS NULL;
CREATE INDEX schedules_completed ON schedules (name) WHERE completed_at IS NOT NULL;
-- The planner's completion step: schedules at rest whose completion is due for a look.
CREATE INDEX schedules_to_complete ON schedules (plan_at) WHERE owner IS NULL AND plan_action = 'complete';

-- +goose Down
DROP INDEX schedules_to_complete;
DROP INDEX schedules_completed;
DROP INDEX schedules_by_state;
CREATE INDEX schedules_by_state ON schedules (paused, name);
UPDATE schedules SET plan_at = NULL, plan_action = NULL WHERE plan_action = 'complete';
ALTER TABLE schedules
    DROP CONSTRAINT schedules_plan_action_check,
    ADD CONSTRAINT schedules_plan_action_check CHECK (plan_action IN ('arm', 'wake')),
    DROP COLUMN completed_at,
    DROP COLUMN after_completion;
