-- +goose Up
-- Calendars (issue 28, docs/schedules.md "Calendars"): named days and time ranges, in a
-- time zone, that schedules exclude by naming them in spec.exclude_calendars. An excluded
-- tick is recorded SKIPPED naming the calendar. dates are whole days ('2026-12-25') in the
-- calendar's zone; ranges a JSON array of {start, end}, each an RFC 3339 time or a date,
-- as given (internal/schedulespec reads them). Editing a calendar takes effect for every
-- schedule naming it: the edit judges their armed fires not yet released anew, in its
-- transaction (store/calendars.go).
CREATE TABLE calendars (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text        NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$'),
    timezone    text        NOT NULL DEFAULT 'UTC',
    dates       text[]      NOT NULL DEFAULT '{}',
    ranges      jsonb       NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(ranges) = 'array'),
    version     bigint      NOT NULL DEFAULT 1 CHECK (version > 0),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- The schedules naming a calendar (its edit, its delete): only schedules that exclude
-- calendars have an entry, so a schedule without costs nothing more to create.
CREATE INDEX schedules_by_calendar ON schedules USING gin ((spec -> 'exclude_calendars')) WHERE spec ? 'exclude_calendars';

-- How released fires count on their schedules (first written in 00062), now with the ticks a
-- calendar excludes: armed SKIPPED, released and settled like any armed fire, they count as
-- skipped, not fired, and are not the schedule's last run.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION count_released_fires(schedule_ids bigint[], ticks timestamptz[], released timestamptz[],
                                                statuses text[], next_run_ats timestamptz[]) RETURNS bigint
LANGUAGE sql VOLATILE AS $$
    WITH runs AS (
        SELECT * FROM unnest(schedule_ids, ticks, released, statuses, next_run_ats)
            AS r (schedule_id, scheduled_at, released_at, status, release_next_run_at)
    ), per_schedule AS (
        SELECT schedule_id, count(*) FILTER (WHERE status NOT IN ('MISSED', 'SKIPPED')) AS fired,
               count(*) FILTER (WHERE status = 'MISSED') AS missed, count(*) FILTER (WHERE status = 'SKIPPED') AS skipped,
               max(scheduled_at) AS last_tick, max(released_at) FILTER (WHERE status NOT IN ('MISSED', 'SKIPPED')) AS last_fired_at,
               (array_agg(release_next_run_at ORDER BY scheduled_at DESC))[1] AS next_run_at
        FROM runs GROUP BY schedule_id
    ), counted AS (
        UPDATE schedules s
        SET fired_count   = s.fired_count + p.fired,
            missed_count  = s.missed_count + p.missed,
            skipped_count = s.skipped_count + p.skipped,
            last_run_at   = COALESCE(GREATEST(s.last_run_at, p.last_fired_at), s.last_run_at, p.last_fired_at),
            next_run_at   = CASE WHEN s.next_run_at IS NOT NULL AND s.next_run_at <= p.last_tick THEN p.next_run_at ELSE s.next_run_at END,
            updated_at    = now()
        FROM per_schedule p
        WHERE s.id = p.schedule_id
        RETURNING s.id
    )
    SELECT count(*) FROM counted
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION count_released_fires(schedule_ids bigint[], ticks timestamptz[], released timestamptz[],
                                     statuses text[], next_run_ats timestamptz[]) RETURNS bigint
LANGUAGE sql VOLATILE AS $$
    WITH runs AS (
        SELECT * FROM unnest(schedule_ids, ticks, released, statuses, next_run_ats)
            AS r (schedule_id, scheduled_at, released_at, status, release_next_run_at)
    ), per_schedule AS (
        SELECT schedule_id, count(*) FILTER (WHERE status <> 'MISSED') AS fired, count(*) FILTER (WHERE status = 'MISSED') AS missed,
               max(scheduled_at) AS last_tick, max(released_at) FILTER (WHERE status <> 'MISSED') AS last_fired_at,
               (array_agg(release_next_run_at ORDER BY scheduled_at DESC))[1] AS next_run_at
        FROM runs GROUP BY schedule_id
    ), counted AS (
        UPDATE schedules s
        SET fired_count  = s.fired_count + p.fired,
            missed_count = s.missed_count + p.missed,
            last_run_at  = COALESCE(GREATEST(s.last_run_at, p.last_fired_at), s.last_run_at, p.last_fired_at),
            next_run_at  = CASE WHEN s.next_run_at IS NOT NULL AND s.next_run_at <= p.last_tick THEN p.next_run_at ELSE s.next_run_at END,
            updated_at   = now()
        FROM per_schedule p
        WHERE s.id = p.schedule_id
        RETURNING s.id
    )
    SELECT count(*) FROM counted
$$;
-- +goose StatementEnd
DROP INDEX schedules_by_calendar;
DROP TABLE calendars;
