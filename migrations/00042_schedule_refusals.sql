-- +goose Up
-- Commands a schedule refused where nobody could be answered: a signal whose payload broke
-- the command's rules (HTTP and update callers get the refusal as their answer). The
-- schedule's view lists the newest ones, so an operator can find what another service sent
-- and why it did nothing. Only the newest 100 per schedule are kept.
CREATE TABLE schedule_refusals (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    schedule_id bigint      NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    command     text        NOT NULL,
    door        text        NOT NULL CHECK (door IN ('signal')),
    field       text        NOT NULL,
    reason      text        NOT NULL,
    payload     text        NOT NULL DEFAULT '',
    refused_at  timestamptz NOT NULL
);
CREATE INDEX schedule_refusals_by_schedule ON schedule_refusals (schedule_id, id DESC);

-- +goose Down
DROP TABLE schedule_refusals;
