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

-- +goose Down
DROP INDEX schedules_by_calendar;
DROP TABLE calendars;
