-- +goose Up
-- First attempts at the event floor (docs/schedules.md "How an http fire is sent"): a fire of
-- an http action armed by the planner is released like an event fire, and its first attempt
-- is sent at once by the worker that released it, recorded before and after it is sent. Only
-- a fire whose first attempt fails (retryably), or whose sender died mid-send, goes on to its
-- delivery workflow.

-- An attempt is recorded when it is sent ('sending', finished_at NULL) and again with its
-- answer; one whose sender died before its answer was recorded is 'lost' (the request may
-- have reached the receiver, which dedupes on webhook-id). direct: the attempt was sent by
-- the worker that released the fire, not by a delivery workflow.
ALTER TABLE schedule_run_attempts ADD COLUMN finished_at timestamptz;
ALTER TABLE schedule_run_attempts ADD COLUMN direct boolean NOT NULL DEFAULT false;
UPDATE schedule_run_attempts SET finished_at = started_at + make_interval(secs => latency_ms / 1000.0);
ALTER TABLE schedule_run_attempts DROP CONSTRAINT schedule_run_attempts_outcome_check;
ALTER TABLE schedule_run_attempts ADD CONSTRAINT schedule_run_attempts_outcome_check
    CHECK (outcome IN ('sending', 'succeeded', 'retryable', 'final', 'lost'));
ALTER TABLE schedule_run_attempts ADD CONSTRAINT schedule_run_attempts_finished
    CHECK ((outcome = 'sending') = (finished_at IS NULL));

-- The first attempts to send: one row per armed http fire, from its arming until its first
-- attempt's outcome is recorded (the run then SUCCEEDED or FAILED) or its delivery workflow
-- was started to retry it. sender and lease_until: the worker process that holds it, until
-- when (it renews the lease while it holds the row; a lease run out is a sender that died).
-- While a row exists no delivery workflow of the run is started, and no run watcher waits
-- for one.
CREATE TABLE http_first_attempts (
    run_id      bigint      PRIMARY KEY REFERENCES schedule_runs (id) ON DELETE CASCADE,
    visible_at  timestamptz NOT NULL,
    sender      text,
    lease_until timestamptz,
    CONSTRAINT http_first_attempts_lease CHECK ((sender IS NULL) = (lease_until IS NULL))
);
-- The rows no sender holds, in the order their fires come due.
CREATE INDEX http_first_attempts_pending ON http_first_attempts (visible_at, run_id) WHERE sender IS NULL;
-- The rows held, by when their lease runs out (the sweep).
CREATE INDEX http_first_attempts_leased ON http_first_attempts (lease_until) WHERE sender IS NOT NULL;

-- A run by its workflow id: a schedule's workflow that took over a run whose first attempt is
-- the sender's waits for its outcome in PostgreSQL, knowing the run by its workflow id.
CREATE INDEX schedule_runs_by_workflow_id ON schedule_runs (workflow_id) WHERE workflow_id <> '';

-- +goose Down
DROP INDEX schedule_runs_by_workflow_id;
DROP TABLE http_first_attempts;
DELETE FROM schedule_run_attempts WHERE outcome IN ('sending', 'lost');
ALTER TABLE schedule_run_attempts DROP CONSTRAINT schedule_run_attempts_finished;
ALTER TABLE schedule_run_attempts DROP CONSTRAINT schedule_run_attempts_outcome_check;
ALTER TABLE schedule_run_attempts ADD CONSTRAINT schedule_run_attempts_outcome_check CHECK (outcome IN ('succeeded', 'retryable', 'final'));
ALTER TABLE schedule_run_attempts DROP COLUMN direct;
ALTER TABLE schedule_run_attempts DROP COLUMN finished_at;
