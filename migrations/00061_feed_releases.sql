-- +goose Up
-- Releases in one row (issue 26): an armed fire — committed ahead of its tick, hidden — was
-- made true at its tick by updating its run, its outbox message (its feed position) and its
-- schedule's counters, row by row; a hundred thousand fires sharing a tick took seconds to
-- show. Now a release is one row: "every armed fire due up to released_until is out", in a
-- transaction of its own. An armed fire's feed position is that release's transaction and
-- its own (visible_at, event id); it shows in the feed and among the runs from the
-- release's commit on, and its run and schedule are settled (armed cleared, fired_at,
-- counters, next_run_at) just after, in batches, by store.SettleReleased.
--
-- Releases are serialized (a transaction-level advisory lock: store.releaseLock), so their
-- transaction ids and their ranges grow together, and a command retracting armed fires
-- takes the same lock shared: it never takes back a fire a release made true.
CREATE TABLE feed_releases (
    tx_id          xid8        PRIMARY KEY DEFAULT pg_current_xact_id(),
    released_after timestamptz NOT NULL,
    released_until timestamptz NOT NULL,
    released_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT feed_releases_range CHECK (released_until > released_after)
);

-- +goose StatementBegin
-- How far armed fires are out: the newest release's released_until (none yet: the year 1,
-- before any fire, as Go's zero time reads it).
CREATE FUNCTION release_frontier() RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT COALESCE((SELECT released_until FROM feed_releases ORDER BY tx_id DESC LIMIT 1), '0001-01-01 00:00:00+00'::timestamptz)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- Whether a run is true yet: not armed, or armed and released (not yet settled).
CREATE FUNCTION run_shown(armed boolean, visible_at timestamptz) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT NOT armed OR visible_at <= release_frontier()
$$;
-- +goose StatementEnd

-- The feed's released armed messages, per release range, in position order.
CREATE INDEX outbox_messages_released_feed ON outbox_messages (visible_at, event_id) WHERE tx_id IS NULL;
-- The runs released and not yet settled, oldest first.
CREATE INDEX schedule_runs_armed_by_visible ON schedule_runs (visible_at, id) WHERE armed;

-- +goose Down
DROP INDEX schedule_runs_armed_by_visible;
DROP INDEX outbox_messages_released_feed;
DROP FUNCTION run_shown(boolean, timestamptz);
DROP FUNCTION release_frontier();
DROP TABLE feed_releases;
