-- +goose Up
-- A concurrency cap (docs/schedules.md "Policies"): under overlap allow_all, at most
-- max_concurrent runs of a schedule are in flight at once; a tick beyond waits BUFFERED with
-- its reason, or is recorded SKIPPED when overlap_when_full is 'skip'. NULL: no cap (the
-- behaviour before). Both are set together, and only with allow_all (the other policies run
-- one at a time already): the API refuses anything else, and so does the row.
ALTER TABLE schedules
    ADD COLUMN max_concurrent integer CHECK (max_concurrent >= 1),
    ADD COLUMN overlap_when_full text CHECK (overlap_when_full IN ('buffer', 'skip')),
    ADD CONSTRAINT schedules_max_concurrent CHECK (
        (max_concurrent IS NULL) = (overlap_when_full IS NULL) AND (max_concurrent IS NULL OR overlap = 'allow_all'));

-- +goose Down
ALTER TABLE schedules DROP CONSTRAINT schedules_max_concurrent, DROP COLUMN overlap_when_full, DROP COLUMN max_concurrent;
