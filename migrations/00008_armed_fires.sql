-- +goose Up
-- Armed fires (issue 13): an event schedule's workflow commits a fire ahead of its tick, and
-- the fire becomes true at its tick when a releaser (store.Releaser) releases it.
--
-- schedule_runs.armed: the run was committed ahead and is not yet released. Nothing reads it
-- as a run until then (lists, counters, last_run_at, metrics, the feed); a pause, update,
-- reschedule or delete deletes it instead, under the schedule's row lock, as does nothing
-- once released. visible_at is when it becomes visible (the tick with its jitter); NULL for
-- a fire recorded at its time. release_next_run_at is the schedule's next_run_at once the
-- release makes the run true (the arming transaction keeps next_run_at on the armed tick).
ALTER TABLE schedule_runs
    ADD COLUMN armed               boolean NOT NULL DEFAULT false,
    ADD COLUMN visible_at          timestamptz,
    ADD COLUMN release_next_run_at timestamptz,
    ADD CONSTRAINT schedule_runs_armed CHECK (NOT armed OR visible_at IS NOT NULL);
CREATE INDEX schedule_runs_armed_due ON schedule_runs (visible_at) WHERE armed;

-- An armed fire's outbox row has no feed position (tx_id NULL) until the release gives it the
-- releasing transaction's id: the feed's (tx_id, id) order under the pg_snapshot_xmin horizon
-- then hands it out after every row an earlier cursor could have seen, never before its
-- time, and never behind a cursor taken before the release.
ALTER TABLE outbox_messages
    ALTER COLUMN tx_id DROP NOT NULL,
    ADD COLUMN visible_at timestamptz,
    ADD CONSTRAINT outbox_messages_position CHECK (tx_id IS NOT NULL OR visible_at IS NOT NULL);

-- +goose Down
DELETE FROM event_store e USING outbox_messages o WHERE o.event_id = e.id AND o.tx_id IS NULL;
DELETE FROM schedule_runs WHERE armed;
ALTER TABLE outbox_messages
    DROP CONSTRAINT outbox_messages_position,
    DROP COLUMN visible_at,
    ALTER COLUMN tx_id SET NOT NULL;
DROP INDEX schedule_runs_armed_due;
ALTER TABLE schedule_runs
    DROP CONSTRAINT schedule_runs_armed,
    DROP COLUMN release_next_run_at,
    DROP COLUMN visible_at,
    DROP COLUMN armed;
