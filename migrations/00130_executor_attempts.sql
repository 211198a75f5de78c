-- +goose Up
-- Executor attempts (docs/rollouts.md, "Attempts"; issue 36): each time an executor starts
-- on a task run's target, a row; when it ends, its outcome. A task run's executor is tried
-- up to three times per claim, and what counts is what PostgreSQL recorded, not what the
-- process running it remembers: a runner retried after its worker was lost (killed, its
-- heartbeat timed out) goes on from the attempts recorded, and an attempt it finds started
-- and never ended is 'lost' — it spends nothing.
--
--   claim    the task run's claim (task_runs.attempt) the attempt belongs to: a retried task
--            run is claimed again and has its three attempts again;
--   attempt  1, 2, … within the claim, lost ones included;
--   outcome  NULL while it runs (or until someone notices it was lost), then
--              succeeded  the executor succeeded (written with the task's DONE);
--              failed     the executor failed (written as soon as it did); retryable false:
--                         the error says trying again cannot help, the task is FAILED at once;
--              canceled   the task was canceled while it ran;
--              lost       the process running it went away before it ended (or the task was
--                         ended FAILED by the workflow without its executor's word).
-- Only failed attempts count towards the three.
CREATE TABLE executor_attempts (
    task_run_id bigint      NOT NULL REFERENCES task_runs (id) ON DELETE CASCADE,
    claim       integer     NOT NULL CHECK (claim >= 1),
    attempt     integer     NOT NULL CHECK (attempt >= 1),
    started_at  timestamptz NOT NULL DEFAULT now(),
    ended_at    timestamptz,
    outcome     text        CHECK (outcome IN ('succeeded', 'failed', 'canceled', 'lost')),
    retryable   boolean     NOT NULL DEFAULT true,
    error       text        NOT NULL DEFAULT '',
    PRIMARY KEY (task_run_id, claim, attempt),
    CONSTRAINT executor_attempts_ended CHECK ((ended_at IS NULL) = (outcome IS NULL))
)
-- Each row is updated once, when its attempt ends, soon after it was inserted: room on its
-- page keeps that update off the primary key (a heap-only update).
WITH (fillfactor = 50);
COMMENT ON TABLE executor_attempts IS 'One row per start of an executor on a task run''s target, and how it ended (docs/rollouts.md, "Attempts"). A task run is FAILED after three failed attempts of a claim, or one failed that cannot be retried; a lost attempt (its runner went away) counts nothing.';
COMMENT ON COLUMN executor_attempts.claim IS 'The task run''s claim (task_runs.attempt) the attempt belongs to: a retried task run has its three attempts again.';
COMMENT ON COLUMN executor_attempts.outcome IS 'NULL while it runs; succeeded (written with the task''s DONE), failed (written as soon as it failed), canceled (the task was canceled meanwhile) or lost (whoever ran it went away before it ended, or the task was ended FAILED without its executor''s word).';

-- +goose Down
DROP TABLE executor_attempts;
