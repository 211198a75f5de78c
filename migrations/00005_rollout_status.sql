-- +goose Up
-- Every rollout and task-run status is one the engine sets (docs/rollouts.md, issue 12).

-- NOT_STARTED leaves task_runs: no route or engine ever wrote it (a new rollout's tasks start
-- PENDING). A row still holding it would be one written by hand; the constraint then refuses
-- the upgrade rather than guess what such a row meant.
ALTER TABLE task_runs DROP CONSTRAINT task_runs_status_check;
ALTER TABLE task_runs ADD CONSTRAINT task_runs_status_check
    CHECK (status IN ('PENDING', 'AVAILABLE', 'RUNNING', 'DONE', 'FAILED', 'CANCELED', 'SKIPPED'));
ALTER TABLE task_runs DROP CONSTRAINT task_runs_finished_at;
ALTER TABLE task_runs ADD CONSTRAINT task_runs_finished_at
    CHECK ((finished_at IS NULL) = (status IN ('PENDING', 'AVAILABLE', 'RUNNING')));

-- rollout_summaries is the one definition of a rollout's status; the store, the API, the CLI
-- and the dashboard all read it from here. rollouts.status is what an operator set
-- (operator_status: RUNNING, PAUSED, CANCELED); status is what happened:
--   CANCELED  the rollout was cancelled (final: its RUNNING tasks are being stopped);
--   RUNNING / PAUSED  a task is still active (PENDING, AVAILABLE or RUNNING) — PAUSED when an
--             operator paused it: RUNNING tasks finish, nothing new is promoted or claimed;
--   FAILED    every task ended and one FAILED;
--   DONE      every task ended DONE or SKIPPED and at least one is DONE (it ran);
--   CANCELED  every task ended, none FAILED, and a task was cancelled or none ran (all SKIPPED).
-- A paused rollout whose tasks have all ended has nothing left to hold back, so it reports
-- how it ended like a running one.
CREATE VIEW rollout_summaries AS
SELECT r.id, r.name, r.parallel_limit, r.status AS operator_status,
       CASE
           WHEN r.status = 'CANCELED' THEN 'CANCELED'
           WHEN c.pending + c.available + c.running > 0 THEN r.status
           WHEN c.failed > 0 THEN 'FAILED'
           WHEN c.done > 0 AND c.canceled = 0 THEN 'DONE'
           ELSE 'CANCELED'
       END::text AS status,
       c.pending, c.available, c.running, c.done, c.failed, c.canceled, c.skipped,
       r.created_at, r.updated_at
FROM rollouts r
CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE t.status = 'PENDING')   AS pending,
           count(*) FILTER (WHERE t.status = 'AVAILABLE') AS available,
           count(*) FILTER (WHERE t.status = 'RUNNING')   AS running,
           count(*) FILTER (WHERE t.status = 'DONE')      AS done,
           count(*) FILTER (WHERE t.status = 'FAILED')    AS failed,
           count(*) FILTER (WHERE t.status = 'CANCELED')  AS canceled,
           count(*) FILTER (WHERE t.status = 'SKIPPED')   AS skipped
    FROM task_runs t
    WHERE t.rollout_id = r.id
) c;

-- +goose Down
DROP VIEW rollout_summaries;
ALTER TABLE task_runs DROP CONSTRAINT task_runs_finished_at;
ALTER TABLE task_runs ADD CONSTRAINT task_runs_finished_at
    CHECK ((finished_at IS NULL) = (status IN ('NOT_STARTED', 'PENDING', 'AVAILABLE', 'RUNNING')));
ALTER TABLE task_runs DROP CONSTRAINT task_runs_status_check;
ALTER TABLE task_runs ADD CONSTRAINT task_runs_status_check
    CHECK (status IN ('NOT_STARTED', 'PENDING', 'AVAILABLE', 'RUNNING', 'DONE', 'FAILED', 'CANCELED', 'SKIPPED'));
