-- Calendars (docs/schedules.md "Calendars"; migrations/00096_calendars.sql).

-- name: InsertCalendar :one
INSERT INTO calendars (name, timezone, dates, ranges) VALUES (@name, @timezone, @dates, @ranges)
RETURNING *;

-- name: GetCalendar :one
SELECT * FROM calendars WHERE name = @name;

-- name: ListCalendars :many
SELECT * FROM calendars WHERE name > @after_name ORDER BY name LIMIT @max_rows;

-- name: UpdateCalendar :one
-- Optimistic: the row changes only when its version is the one the caller read
-- (expected_version 0 skips the check). The row lock it takes serializes the edit with
-- every transaction that judges ticks against the calendar (they read it FOR SHARE).
UPDATE calendars
SET timezone = @timezone, dates = @dates, ranges = @ranges, version = version + 1, updated_at = now()
WHERE name = @name AND (@expected_version::bigint = 0 OR version = @expected_version::bigint)
RETURNING *;

-- name: DeleteCalendar :one
DELETE FROM calendars WHERE name = @name RETURNING id;

-- name: LockCalendars :many
-- The calendars named, read FOR SHARE: a calendar edit waits for the transaction judging
-- ticks against them to commit, and a judge waits for an edit under way, then reads it.
SELECT * FROM calendars WHERE name = ANY(@names::text[]) ORDER BY name FOR SHARE;

-- name: LockCalendarsOfSchedules :many
-- The calendars the schedules given exclude, FOR SHARE (see LockCalendars).
SELECT c.* FROM calendars c
WHERE c.name IN (SELECT jsonb_array_elements_text(s.spec -> 'exclude_calendars') FROM schedules s
                 WHERE s.id = ANY(@schedule_ids::bigint[]) AND s.spec ? 'exclude_calendars')
ORDER BY c.name
FOR SHARE OF c;

-- name: SchedulesNamingCalendar :many
-- The schedules whose spec excludes the calendar, by name (schedules_by_calendar).
SELECT name FROM schedules
WHERE spec ? 'exclude_calendars' AND spec -> 'exclude_calendars' ? @calendar::text
ORDER BY name
LIMIT @max_rows;

-- name: CountSchedulesNamingCalendar :one
SELECT count(*)::bigint FROM schedules WHERE spec ? 'exclude_calendars' AND spec -> 'exclude_calendars' ? @calendar::text;

-- name: ArmedRunsNamingCalendar :many
-- A calendar edit's fires to judge anew: the armed fires not yet released — event fires and
-- the ticks armed SKIPPED by a calendar — of the schedules excluding the calendar, locked,
-- with what the judge reads of their schedule. (Workflow fires are never armed for a
-- schedule that excludes calendars: its workflow decides them at their tick.) The edit holds
-- the release lock shared, so none of them is released meanwhile.
SELECT r.id, r.schedule_id, r.scheduled_at, r.visible_at::timestamptz AS visible_at, r.status, r.reason,
       s.name AS schedule_name, s.spec, s.action
FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id
WHERE s.spec ? 'exclude_calendars' AND s.spec -> 'exclude_calendars' ? @calendar::text
  AND r.armed AND r.workflow_id = '' AND r.visible_at > release_frontier()
ORDER BY r.id
FOR UPDATE OF r;

-- name: SkipArmedRuns :exec
-- Armed, unreleased fires a calendar now excludes become the SKIPPED ticks they are, with
-- the reason naming it: their events (and by cascade their outbox messages, which never had
-- a feed position) go. A tick already SKIPPED takes the new reason.
WITH given AS (
    SELECT unnest(@ids::bigint[]) AS id, unnest(@reasons::text[]) AS reason
), dropped AS (
    DELETE FROM event_store e USING given g WHERE e.schedule_run_id = g.id
)
UPDATE schedule_runs r SET status = 'SKIPPED', reason = g.reason, fired_at = NULL
FROM given g
WHERE r.id = g.id AND r.armed;

-- name: UnskipArmedRuns :exec
-- Armed, unreleased ticks SKIPPED by a calendar that no longer excludes them become the
-- event fires they are: SUCCEEDED at their release, with their event and outbox message
-- (without a feed position until the release).
WITH given AS (
    SELECT unnest(@ids::bigint[]) AS id, unnest(@topics::text[]) AS topic, unnest(@types::text[]) AS type,
           unnest(@aggregate_ids::text[]) AS aggregate_id, unnest(@data::text[]) AS data
), runs AS (
    UPDATE schedule_runs r SET status = 'SUCCEEDED', reason = '', fired_at = r.visible_at
    FROM given g
    WHERE r.id = g.id AND r.armed AND r.status = 'SKIPPED'
    RETURNING r.id, r.visible_at
), events AS (
    INSERT INTO event_store (topic, type, aggregate_id, data, schedule_run_id, created_at)
    SELECT g.topic, g.type, g.aggregate_id, g.data::jsonb, r.id, r.visible_at
    FROM runs r JOIN given g ON g.id = r.id
    RETURNING id, topic, created_at
)
INSERT INTO outbox_messages (event_id, topic, tx_id, visible_at)
SELECT id, topic, NULL, created_at FROM events;

-- name: CalendarsNamedBeside :many
-- The other calendars named by the schedules that exclude this one: an edit locks them all,
-- in name order, to judge those schedules' armed fires.
SELECT DISTINCT n::text AS name
FROM schedules s, jsonb_array_elements_text(s.spec -> 'exclude_calendars') AS n
WHERE s.spec ? 'exclude_calendars' AND s.spec -> 'exclude_calendars' ? @calendar::text AND n <> @calendar::text
ORDER BY 1;
