-- Progressive rollouts (docs/progressive.md): waves, the abort threshold, windows and
-- freezes. The gates themselves are rollout_gates and its gate functions (store/schema.sql); these
-- statements move a rollout's waves along, trip its abort threshold, keep its window span
-- current and record freezes.

-- name: InsertRolloutWaves :exec
-- waves is a JSON array of arrays of database names, wave 1 first; wave 1 opens at once.
INSERT INTO rollout_waves (rollout_id, wave, databases, status, started_at)
SELECT @rollout_id::bigint, w.ord::integer,
       ARRAY(SELECT jsonb_array_elements_text(w.dbs)),
       CASE WHEN w.ord = 1 THEN 'RUNNING' ELSE 'WAITING' END,
       CASE WHEN w.ord = 1 THEN now() END
FROM jsonb_array_elements(@waves::jsonb) WITH ORDINALITY AS w(dbs, ord);

-- name: ListRolloutWaves :many
SELECT * FROM rollout_waves WHERE rollout_id = @rollout_id ORDER BY wave;

-- name: LockRollout :one
SELECT * FROM rollouts WHERE id = @id FOR UPDATE;

-- name: GetRolloutWave :one
SELECT * FROM rollout_waves WHERE rollout_id = @rollout_id AND wave = @wave;

-- name: WaveTaskCounts :one
-- The tasks of a rollout's waves up to wave: how many are not final, and how many of those
-- in wave itself ended FAILED or CANCELED.
SELECT count(*) FILTER (WHERE t.status IN ('PENDING', 'AVAILABLE', 'RUNNING'))::bigint AS unfinished,
       count(*) FILTER (WHERE t.wave = @wave AND t.status = 'FAILED')::bigint AS failed,
       count(*) FILTER (WHERE t.wave = @wave AND t.status = 'CANCELED')::bigint AS canceled
FROM task_runs t
WHERE t.rollout_id = @rollout_id AND t.wave <= @wave;

-- name: SetWaveStatus :one
-- Moves a wave from one of from_statuses; the timestamps given are set, the others kept.
UPDATE rollout_waves
SET status = @status, failure = @failure, reason = @reason,
    started_at = coalesce(started_at, sqlc.narg(started_at)),
    finished_at = coalesce(sqlc.narg(finished_at), finished_at),
    bake_until = coalesce(sqlc.narg(bake_until), bake_until),
    checked_at = coalesce(sqlc.narg(checked_at), checked_at),
    passed_at = coalesce(sqlc.narg(passed_at), passed_at),
    health = coalesce(sqlc.narg(health), health)
WHERE rollout_id = @rollout_id AND wave = @wave AND status = ANY(@from_statuses::text[])
RETURNING *;

-- name: OpenNextWave :one
-- The wave gate opens one wave further: the tasks of the wave after wave may be promoted.
-- (wave is the one that passed.)
UPDATE rollouts SET open_wave = open_wave + 1, updated_at = now()
WHERE id = @id AND open_wave = @wave::integer AND wave_count > @wave::integer
RETURNING *;

-- name: PauseRolloutFor :one
-- The engine pauses (or cancels) a running rollout, saying why.
UPDATE rollouts SET status = @status, status_reason = @reason, updated_at = now()
WHERE id = @id AND status = 'RUNNING'
RETURNING *;

-- name: RolloutsOverAbortThreshold :many
-- The running rollouts among ids whose abort threshold is crossed: at least min_finished
-- of their tasks finished (DONE or FAILED) since the rollout was created or last resumed,
-- and more than failed_percent of those FAILED.
SELECT r.id, coalesce(r.strategy->'abort'->>'action', 'pause')::text AS action, c.finished, c.failed,
       (r.strategy->'abort'->>'min_finished')::bigint AS min_finished,
       (r.strategy->'abort'->>'failed_percent')::float8 AS failed_percent
FROM rollouts r
CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE t.status IN ('DONE', 'FAILED'))::bigint AS finished,
           count(*) FILTER (WHERE t.status = 'FAILED')::bigint AS failed
    FROM task_runs t
    WHERE t.rollout_id = r.id AND t.status IN ('DONE', 'FAILED')
      AND t.finished_at >= coalesce(r.resumed_at, r.created_at)
) c
WHERE r.id = ANY(@ids::bigint[]) AND r.status = 'RUNNING' AND r.strategy->'abort' IS NOT NULL
  AND c.finished >= (r.strategy->'abort'->>'min_finished')::bigint
  AND c.failed * 100 > (r.strategy->'abort'->>'failed_percent')::float8 * c.finished
ORDER BY r.id
FOR UPDATE OF r;

-- name: RunningRolloutsWithAbort :many
-- Every running rollout with an abort threshold and unfinished tasks (the promotion round's
-- safety net: a threshold crossed by a write whose check was lost).
SELECT r.id FROM rollouts r
WHERE r.strategy IS NOT NULL AND r.strategy->'abort' IS NOT NULL AND r.status = 'RUNNING'
  AND EXISTS (SELECT 1 FROM task_runs t WHERE t.rollout_id = r.id AND t.status IN ('PENDING', 'AVAILABLE', 'RUNNING'));

-- name: StaleRolloutWindows :many
-- The rollouts whose window span has ended by the promotion clock while they still have
-- PENDING tasks: the round computes their next span (domain.WindowAt) before it promotes.
SELECT r.id, (r.strategy->'windows')::jsonb AS windows, c.now::timestamptz AS clock
FROM rollouts r, (SELECT rollout_clock(sqlc.narg(as_of)::timestamptz) AS now) c
WHERE r.strategy IS NOT NULL AND r.window_end <= c.now AND r.status <> 'CANCELED'
  AND EXISTS (SELECT 1 FROM task_runs t WHERE t.rollout_id = r.id AND t.status = 'PENDING');

-- name: SetRolloutWindow :exec
UPDATE rollouts SET window_start = @window_start, window_end = @window_end WHERE id = @id;

-- name: DatabaseNow :one
SELECT now()::timestamptz;

-- name: InsertFreeze :one
INSERT INTO freezes (rollout_id, reason, frozen_by, frozen_by_token)
VALUES (sqlc.narg(rollout_id), @reason, @frozen_by, sqlc.narg(frozen_by_token))
RETURNING *;

-- name: LiftFreeze :one
-- Lifts the freeze in force: the global one (rollout_id NULL) or a rollout's.
UPDATE freezes SET lifted_by = @lifted_by, lifted_by_token = sqlc.narg(lifted_by_token), lifted_at = now()
WHERE lifted_at IS NULL AND rollout_id IS NOT DISTINCT FROM sqlc.narg(rollout_id)::bigint
RETURNING *;

-- name: ActiveFreeze :many
SELECT * FROM freezes WHERE lifted_at IS NULL AND rollout_id IS NOT DISTINCT FROM sqlc.narg(rollout_id)::bigint;

-- name: ActiveFreezes :many
-- Every freeze in force, the global one first.
SELECT * FROM freezes WHERE lifted_at IS NULL ORDER BY rollout_id NULLS FIRST, id;

-- name: FreezeHistory :many
-- Freezes newest first: the global ones (rollout_id NULL) or one rollout's.
SELECT * FROM freezes
WHERE rollout_id IS NOT DISTINCT FROM sqlc.narg(rollout_id)::bigint AND id < @before_id
ORDER BY id DESC LIMIT @max_rows;

-- name: RolloutsWithAvailableTasks :many
-- The rollouts holding AVAILABLE tasks (left unclaimed while frozen, say), by id.
SELECT DISTINCT rollout_id FROM task_runs WHERE status = 'AVAILABLE' ORDER BY rollout_id;
