-- +goose Up
-- The backfill ranges a schedule's workflow has still to fire, as the workflow last wrote
-- them: [{"start", "end", "overlap", "remaining"}], oldest request first, "remaining" the
-- ticks of the range not yet fired. With the BUFFERED runs it is what the schedule's view
-- shows as waiting; the workflow keeps the ranges themselves in its state.
ALTER TABLE schedules
    ADD COLUMN backfills jsonb NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(backfills) = 'array');

-- +goose Down
ALTER TABLE schedules DROP COLUMN backfills;
