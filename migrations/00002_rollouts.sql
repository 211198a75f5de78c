-- +goose Up
-- Rollouts (docs/rollouts.md): a named batch of task runs with a parallel limit. status is what
-- an operator set (RUNNING, PAUSED, CANCELED); the API derives DONE/FAILED from the counts.
CREATE TABLE rollouts (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name            text        NOT NULL CHECK (name <> '' AND length(name) <= 200),
    parallel_limit  integer     NOT NULL CHECK (parallel_limit > 0),
    status          text        NOT NULL DEFAULT 'RUNNING'
                    CHECK (status IN ('RUNNING', 'PAUSED', 'CANCELED')),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);

-- One row per task run. version_key is the version's natural-order key (internal/version),
-- compared byte-wise (COLLATE "C") so the version gate is plain SQL.
CREATE TABLE task_runs (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    rollout_id      bigint      NOT NULL REFERENCES rollouts (id) ON DELETE CASCADE,
    database        text        NOT NULL CHECK (database <> ''),
    type            text        NOT NULL CHECK (type IN ('DDL', 'SDL', 'DML', 'OTHER')),
    version         text        NOT NULL CHECK (version <> ''),
    version_key     text        COLLATE "C" NOT NULL,
    run_at          timestamptz,
    executor        text        NOT NULL CHECK (executor IN ('noop', 'http', 'sql', 'external')),
    payload         jsonb       NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(payload) = 'object'),
    status          text        NOT NULL DEFAULT 'PENDING'
                    CHECK (status IN ('NOT_STARTED', 'PENDING', 'AVAILABLE', 'RUNNING', 'DONE', 'FAILED', 'CANCELED', 'SKIPPED')),
    -- Why a PENDING task is not promoted yet (written by every promotion round), and a
    -- compact key of it ("version:42") the round compares to write only changed causes.
    waiting_cause   jsonb,
    waiting_key     text,
    attempt         integer     NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    error           text        NOT NULL DEFAULT '',
    output          jsonb,
    promoted_at     timestamptz,
    started_at      timestamptz,
    finished_at     timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    -- finished_at is set exactly when the task is in a terminal state (River style).
    CONSTRAINT task_runs_finished_at CHECK ((finished_at IS NULL) = (status IN ('NOT_STARTED', 'PENDING', 'AVAILABLE', 'RUNNING'))),
    -- a RUNNING task has been started.
    CONSTRAINT task_runs_started_at CHECK (status <> 'RUNNING' OR started_at IS NOT NULL),
    -- only a PENDING task has a waiting cause.
    CONSTRAINT task_runs_waiting_cause CHECK ((waiting_cause IS NULL AND waiting_key IS NULL) OR status = 'PENDING')
);
CREATE INDEX task_runs_by_rollout ON task_runs (rollout_id, status, id);
-- The live set every promotion round reads: per database in version order.
CREATE INDEX task_runs_active ON task_runs (database, version_key, id)
    WHERE status IN ('PENDING', 'AVAILABLE', 'RUNNING');
CREATE INDEX task_runs_available ON task_runs (rollout_id, version_key, id) WHERE status = 'AVAILABLE';
CREATE INDEX task_runs_future ON task_runs (run_at) WHERE status = 'PENDING' AND run_at IS NOT NULL;

-- +goose Down
DROP TABLE task_runs;
DROP TABLE rollouts;
