-- +goose Up
-- Recovery of every dead-lettered run in a range (docs/schedules.md "Dead letter and
-- redrive", POST /runs/redrive): a bulk redrive is a job, worked through in pages of at most a
-- request's limit, in run id order, each page one transaction. It reaches the FAILED runs of
-- http and workflow actions whose tick lies in [since, until), of the schedules its selector
-- reaches, up to the newest run when it began (a run failing later is not its); cursor is the
-- last run a page looked at, so no run is looked at (and redriven) twice by it.
CREATE TABLE run_redrive_jobs (
    id           bigserial   PRIMARY KEY,
    selector     text        NOT NULL DEFAULT '',
    since        timestamptz NOT NULL,
    until        timestamptz NOT NULL,
    requested_by text        NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    up_to_run_id bigint      NOT NULL,
    cursor       bigint      NOT NULL DEFAULT 0,
    matched      integer     NOT NULL,
    redriven     integer     NOT NULL DEFAULT 0,
    skipped      integer     NOT NULL DEFAULT 0,
    finished_at  timestamptz,
    CONSTRAINT run_redrive_jobs_range CHECK (until > since)
);

-- The bulk redrive a run's redrive belongs to (none: a redrive of that run alone).
ALTER TABLE schedule_run_redrives ADD COLUMN job_id bigint REFERENCES run_redrive_jobs (id) ON DELETE SET NULL;

-- +goose Down
ALTER TABLE schedule_run_redrives DROP COLUMN job_id;
DROP TABLE run_redrive_jobs;
