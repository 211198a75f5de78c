-- +goose Up
-- How released fires count on their schedules, once (issue 25: each rule once): the release
-- of fires judged late (ReleaseDueFires) and the settling of every other released fire
-- (SettleReleasedFires) both call it. A schedule counts its fires and MISSED ticks, its
-- last_run_at becomes its newest fire's release, and its next_run_at moves to the tick after
-- its newest released tick unless something (a command, its workflow) moved it already.
-- +goose StatementBegin
CREATE FUNCTION count_released_fires(schedule_ids bigint[], ticks timestamptz[], released timestamptz[],
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

-- +goose Down
DROP FUNCTION count_released_fires(bigint[], timestamptz[], timestamptz[], text[], timestamptz[]);
