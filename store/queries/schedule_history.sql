-- A schedule's history (migrations/00099_schedule_history.sql): who paused, resumed or
-- edited it, when and why, each written in the transaction of the change it tells of.

-- name: InsertScheduleHistory :exec
INSERT INTO schedule_history (schedule_id, kind, actor, door, note, changes)
VALUES (@schedule_id, @kind, @actor, @door, @note, @changes);

-- name: ListScheduleHistory :many
-- Newest first, paged by id (before_id 0: from the newest).
SELECT * FROM schedule_history
WHERE schedule_id = @schedule_id AND (@before_id::bigint = 0 OR id < @before_id::bigint)
ORDER BY id DESC
LIMIT @max_rows;
