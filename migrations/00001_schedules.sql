-- +goose Up
-- Schedules: the definition users edit (spec, action, policies) plus the runtime mirror that
-- the schedule's workflow, its single writer, keeps current (next_run_at, last_run_at, counters).
CREATE TABLE schedules (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name            text        NOT NULL UNIQUE
                    CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$'),
    spec            jsonb       NOT NULL CHECK (jsonb_typeof(spec) = 'object'),
    action          jsonb       NOT NULL CHECK (action->>'kind' IN ('event', 'workflow')),
    overlap         text        NOT NULL DEFAULT 'skip'
                    CHECK (overlap IN ('skip', 'buffer_one', 'buffer_all', 'cancel_other', 'terminate_other', 'allow_all')),
    catchup_window_ms bigint    NOT NULL DEFAULT 0 CHECK (catchup_window_ms >= 0),
    skip_if_successful boolean  NOT NULL DEFAULT false,
    paused          boolean     NOT NULL DEFAULT false,
    pause_note      text        NOT NULL DEFAULT '',
    version         bigint      NOT NULL DEFAULT 1 CHECK (version > 0),
    next_run_at     timestamptz,
    last_run_at     timestamptz,
    fired_count     bigint      NOT NULL DEFAULT 0 CHECK (fired_count >= 0),
    skipped_count   bigint      NOT NULL DEFAULT 0 CHECK (skipped_count >= 0),
    missed_count    bigint      NOT NULL DEFAULT 0 CHECK (missed_count >= 0),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);

-- One row per fire attempt of a tick. S1: the idempotency key is unique, and for scheduled,
-- catch-up and backfill fires it is derived from (schedule id, nominal tick), so no retry,
-- duplicate signal or second worker can record a tick twice.
CREATE TABLE schedule_runs (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    schedule_id     bigint      NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    scheduled_at    timestamptz NOT NULL,
    fired_at        timestamptz,
    trigger         text        NOT NULL CHECK (trigger IN ('scheduled', 'catchup', 'manual', 'backfill')),
    status          text        NOT NULL
                    CHECK (status IN ('RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELED', 'TERMINATED', 'SKIPPED', 'MISSED')),
    reason          text        NOT NULL DEFAULT '',
    idempotency_key text        NOT NULL,
    workflow_id     text        NOT NULL DEFAULT '',
    error           text        NOT NULL DEFAULT '',
    finished_at     timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT schedule_runs_idempotency_key UNIQUE (idempotency_key),
    -- Only a run that actually fired has a fired_at; SKIPPED and MISSED ticks never fired.
    CONSTRAINT schedule_runs_fired_at CHECK ((fired_at IS NULL) = (status IN ('SKIPPED', 'MISSED'))),
    -- finished_at is set exactly when the run is in a terminal state.
    CONSTRAINT schedule_runs_finished_at CHECK ((finished_at IS NULL) = (status = 'RUNNING')),
    CONSTRAINT schedule_runs_reason CHECK (status NOT IN ('SKIPPED', 'MISSED') OR reason <> '')
);
CREATE INDEX schedule_runs_by_schedule ON schedule_runs (schedule_id, id DESC);
CREATE INDEX schedule_runs_running ON schedule_runs (schedule_id) WHERE status = 'RUNNING';

-- The event store: one domain event per fire (and other facts later), append-only.
CREATE TABLE event_store (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    topic           text        NOT NULL CHECK (topic <> ''),
    type            text        NOT NULL CHECK (type <> ''),
    aggregate_id    text        NOT NULL,
    data            jsonb       NOT NULL DEFAULT '{}'::jsonb,
    schedule_run_id bigint      REFERENCES schedule_runs (id) ON DELETE SET NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX event_store_aggregate ON event_store (aggregate_id, id);

-- The transactional outbox, written in the same transaction as the event. tx_id lets the
-- consumer feed hand out rows in commit-safe order: a row is only visible to the feed once
-- every transaction older than it has finished, so a cursor never skips a late commit.
CREATE TABLE outbox_messages (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id        bigint      NOT NULL UNIQUE REFERENCES event_store (id) ON DELETE CASCADE,
    topic           text        NOT NULL,
    tx_id           xid8        NOT NULL DEFAULT pg_current_xact_id(),
    published_at    timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX outbox_messages_feed ON outbox_messages (tx_id, id);
CREATE INDEX outbox_messages_topic_feed ON outbox_messages (topic, tx_id, id);

-- +goose Down
DROP TABLE outbox_messages;
DROP TABLE event_store;
DROP TABLE schedule_runs;
DROP TABLE schedules;
