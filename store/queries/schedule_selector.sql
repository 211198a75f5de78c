-- Schedules reached by a label selector (migrations/00098_schedule_labels.sql).

-- name: ListSchedulesBySelector :many
-- The schedules a bulk pause or resume reaches, in name order: their labels match the
-- selector (as ListSchedulesMatching reads it), at most max_rows of them.
SELECT id, name FROM schedules
WHERE labels @> @labels_match::jsonb AND NOT (labels @> ANY(@labels_exclude::jsonb[]))
ORDER BY name
LIMIT @max_rows;
