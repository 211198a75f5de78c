-- The console's filtered lists (docs/console.md): each pages with a cursor in the order of
-- an index, so a page costs the same with ten schedules or ten thousand.

-- name: ListSchedulesMatching :many
-- Every schedule whose name holds name_part (case-insensitive; '' matches all) and whose
-- labels match the selector (labels_match: the equalities as one object, '{}' for none;
-- labels_exclude: one object per inequality), in name order.
SELECT * FROM schedules
WHERE name > @after_name AND (@name_part::text = '' OR strpos(lower(name), lower(@name_part::text)) > 0)
  AND labels @> @labels_match::jsonb AND NOT (labels @> ANY(@labels_exclude::jsonb[]))
ORDER BY name
LIMIT @max_rows;

-- name: ListSchedulesInState :many
-- The same within one state of the schedules not completed (paused or active), along
-- schedules_by_state.
SELECT * FROM schedules
WHERE completed_at IS NULL AND paused = @paused AND name > @after_name AND (@name_part::text = '' OR strpos(lower(name), lower(@name_part::text)) > 0)
  AND labels @> @labels_match::jsonb AND NOT (labels @> ANY(@labels_exclude::jsonb[]))
ORDER BY paused, name
LIMIT @max_rows;

-- name: ListCompletedSchedules :many
-- The completed schedules (one-time schedules whose run ended), along schedules_completed.
SELECT * FROM schedules
WHERE completed_at IS NOT NULL AND name > @after_name AND (@name_part::text = '' OR strpos(lower(name), lower(@name_part::text)) > 0)
  AND labels @> @labels_match::jsonb AND NOT (labels @> ANY(@labels_exclude::jsonb[]))
ORDER BY name
LIMIT @max_rows;

-- name: ListScheduleRunsFiltered :many
-- One schedule's runs, newest first, of the given statuses and triggers (empty: any).
-- Armed runs are not runs yet.
SELECT * FROM schedule_runs
WHERE schedule_id = @schedule_id AND run_shown(armed, visible_at) AND retracted_at IS NULL AND (@before_id::bigint = 0 OR id < @before_id::bigint)
  AND (cardinality(@statuses::text[]) = 0 OR status = ANY(@statuses::text[]))
  AND (cardinality(@triggers::text[]) = 0 OR trigger = ANY(@triggers::text[]))
ORDER BY id DESC
LIMIT @max_rows;

-- name: ListRunsInWindow :many
-- Every schedule's runs whose tick lies in [since, until), newest first, filtered like
-- ListScheduleRunsFiltered; late_over_s >= 0 keeps only scheduled and catch-up fires that
-- fired more than that many seconds after their tick.
SELECT sqlc.embed(r), s.name AS schedule_name
FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id
WHERE run_shown(r.armed, r.visible_at) AND r.retracted_at IS NULL AND r.scheduled_at >= @since AND r.scheduled_at < @until
  AND (@before_id::bigint = 0 OR r.id < @before_id::bigint)
  AND (cardinality(@statuses::text[]) = 0 OR r.status = ANY(@statuses::text[]))
  AND (cardinality(@triggers::text[]) = 0 OR r.trigger = ANY(@triggers::text[]))
  AND (@late_over_s::float8 < 0 OR (r.fired_at IS NOT NULL AND r.trigger IN ('scheduled', 'catchup')
                                    AND r.fired_at - r.scheduled_at > make_interval(secs => @late_over_s::float8)))
ORDER BY r.id DESC
LIMIT @max_rows;

-- name: ListRolloutSummariesInStatus :many
-- Rollouts whose derived status (rollout_summaries) is one of statuses, by id.
SELECT * FROM rollout_summaries
WHERE id > @after_id AND status = ANY(@statuses::text[])
ORDER BY id
LIMIT @max_rows;
