-- +goose Up
-- A schedule's history (GET /schedules/{name}/history): who paused, resumed or edited it,
-- when and why. A pause or resume is written in the transaction that changes the schedule's
-- paused state (the schedule workflow's mirror write), an edit in the transaction of the
-- update: the history never tells of a change that did not happen, nor misses one.
--   kind     pause, resume (the paused state changed) or update (the definition, labels or
--            series changed; changes lists each field with its value before and after)
--   actor    who: the API token's name, or the identity a Temporal signal or update gave
--            (the door's name when it gave none)
--   door     how the command came: api (an edit), update or signal (a command to the
--            schedule's workflow; the API sends updates)
CREATE TABLE schedule_history (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    schedule_id bigint      NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    at          timestamptz NOT NULL DEFAULT now(),
    kind        text        NOT NULL CHECK (kind IN ('pause', 'resume', 'update')),
    actor       text        NOT NULL CHECK (actor <> ''),
    door        text        NOT NULL CHECK (door IN ('api', 'update', 'signal')),
    note        text        NOT NULL DEFAULT '',
    changes     jsonb       NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(changes) = 'array')
);
CREATE INDEX schedule_history_by_schedule ON schedule_history (schedule_id, id DESC);

-- +goose Down
DROP TABLE schedule_history;
