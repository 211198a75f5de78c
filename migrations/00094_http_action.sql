-- +goose Up
-- The HTTP action (docs/schedules.md "HTTP action"): a schedule's retry policy, its signing
-- secret, each delivery attempt of a run, and the redrives of failed runs.

-- A schedule's action may be an http one.
ALTER TABLE schedules DROP CONSTRAINT schedules_action_check;
ALTER TABLE schedules ADD CONSTRAINT schedules_action_check CHECK (action->>'kind' IN ('event', 'workflow', 'http'));

-- The retry policy of an http or workflow action (NULL: none; an http action always has one,
-- with its defaults filled in).
ALTER TABLE schedules ADD COLUMN retry jsonb;

-- The secret an http action's requests are signed with. It sits in a table of its own that
-- no list or describe reads: shown once when it is made (create, rotation), never again. It
-- is keyed by the schedule's name (a name never changes) so that the statement inserting a
-- schedule inserts its secret too.
CREATE TABLE schedule_secrets (
    schedule_name text        PRIMARY KEY REFERENCES schedules (name) ON DELETE CASCADE,
    secret        text        NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    rotated_at    timestamptz
);

-- How many times a run was redriven: a FAILED run of an http or workflow action delivered
-- again, with the same tick key, under a new workflow id (<id>~redrive-<n>). While the
-- redrive runs the run is RUNNING again; its outcome is the run's.
ALTER TABLE schedule_runs ADD COLUMN redrives integer NOT NULL DEFAULT 0;

-- Each redrive, with the failure it answered.
CREATE TABLE schedule_run_redrives (
    run_id               bigint      NOT NULL REFERENCES schedule_runs (id) ON DELETE CASCADE,
    n                    integer     NOT NULL CHECK (n > 0),
    workflow_id          text        NOT NULL,
    previous_workflow_id text        NOT NULL,
    previous_error       text        NOT NULL,
    failed_at            timestamptz NOT NULL,
    requested_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, n)
);

-- Each attempt of an http action's delivery, recorded once per (run, series, attempt) by the
-- activity that made it: the status code (NULL when no answer came), how long the answer
-- took, the start of its body, the error, and whether the retry policy tries again.
CREATE TABLE schedule_run_attempts (
    run_id         bigint      NOT NULL REFERENCES schedule_runs (id) ON DELETE CASCADE,
    workflow_id    text        NOT NULL,
    attempt        integer     NOT NULL CHECK (attempt > 0),
    redrive        integer     NOT NULL DEFAULT 0,
    started_at     timestamptz NOT NULL,
    latency_ms     bigint      NOT NULL,
    status_code    integer,
    outcome        text        NOT NULL CHECK (outcome IN ('succeeded', 'retryable', 'final')),
    error          text        NOT NULL DEFAULT '',
    response_start text        NOT NULL DEFAULT '',
    retry_after_ms bigint,
    PRIMARY KEY (run_id, workflow_id, attempt)
);

-- The dead letter: FAILED runs of http and workflow actions, newest first.
CREATE INDEX schedule_runs_dead_letter ON schedule_runs (id DESC) WHERE status = 'FAILED' AND workflow_id <> '';

-- +goose Down
DROP INDEX schedule_runs_dead_letter;
DROP TABLE schedule_run_attempts;
DROP TABLE schedule_run_redrives;
ALTER TABLE schedule_runs DROP COLUMN redrives;
DROP TABLE schedule_secrets;
ALTER TABLE schedules DROP COLUMN retry;
ALTER TABLE schedules DROP CONSTRAINT schedules_action_check;
ALTER TABLE schedules ADD CONSTRAINT schedules_action_check CHECK (action->>'kind' IN ('event', 'workflow'));
