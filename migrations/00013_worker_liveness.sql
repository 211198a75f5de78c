-- +goose Up
-- Liveness of the processes that fire schedules: the evidence that tells a tick that was
-- late because tickgate was down from one that was late because it was busy (S2). Each
-- worker process inserts its row when it starts, before it polls any task, and beats it
-- while it can reach PostgreSQL and Temporal (store.Liveness). A worker counts as alive
-- from started_at to beat_at plus a grace of a few beats (schedule_outages).
CREATE TABLE worker_liveness (
    worker_id  text        PRIMARY KEY CHECK (worker_id <> ''),
    started_at timestamptz NOT NULL,
    beat_at    timestamptz NOT NULL,
    CONSTRAINT worker_liveness_beat CHECK (beat_at >= started_at)
);
CREATE INDEX worker_liveness_by_beat ON worker_liveness (beat_at);

-- +goose StatementBegin
-- The spans of [since, until] in which no worker was alive, oldest first: the outages that
-- may make a tick MISSED. A worker is alive from its start to its last beat plus grace.
CREATE FUNCTION schedule_outages(since timestamptz, until timestamptz, grace interval)
RETURNS TABLE (down_from timestamptz, down_until timestamptz)
LANGUAGE sql STABLE AS $$
    WITH alive AS (
        SELECT started_at AS s, beat_at + grace AS e FROM worker_liveness
        WHERE beat_at + grace >= since AND started_at <= until
    ), ordered AS (
        -- covered: the latest any earlier span reached (NULL for the first span)
        SELECT s, max(e) OVER (ORDER BY s, e ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS covered
        FROM alive
    ), gaps AS (
        SELECT COALESCE(covered, since) AS f, s AS u FROM ordered
        UNION ALL
        SELECT COALESCE((SELECT max(e) FROM alive), since), until
    )
    SELECT greatest(f, since), least(u, until) FROM gaps
    WHERE least(u, until) > greatest(f, since)
    ORDER BY 1
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- A catch-up window as Go writes a duration ("30s", "1h30m", "0s"), for reasons.
CREATE FUNCTION duration_text(ms bigint) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN ms = 0 THEN '0s' ELSE concat(
        NULLIF((ms / 3600000)::text || 'h', '0h'),
        NULLIF(((ms / 60000) % 60)::text || 'm', '0m'),
        NULLIF(trim_scale((ms % 60000) / 1000.0)::text || 's', '0s')) END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- The one reason a tick is recorded MISSED with: the outage that made it late, and the
-- catch-up window it is older than. The schedule workflow and the release of armed fires
-- both take it from here.
CREATE FUNCTION schedule_missed_reason(down_from timestamptz, down_until timestamptz, catchup_window_ms bigint) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT format('missed: no tickgate worker was running from %s to %s, and the tick is older than the catch-up window (%s)',
                  to_char(down_from AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                  to_char(down_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                  duration_text(catchup_window_ms))
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION schedule_missed_reason(timestamptz, timestamptz, bigint);
DROP FUNCTION duration_text(bigint);
DROP FUNCTION schedule_outages(timestamptz, timestamptz, interval);
DROP TABLE worker_liveness;
