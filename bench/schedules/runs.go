package main

import (
	"context"
	"fmt"
	"time"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store"
)

// runsTable counts schedule_runs rows that are a tick's fate: a retracted armed fire
// (retracted_at, migration 00014) leaves its record beside the run the tick gets in the
// end, and that record is neither a run of the tick nor a duplicate of it.
type runsTable struct {
	st *store.Store
}

// live is the condition on the rows that are a tick's fate.
const live = "retracted_at IS NULL"

// recorded counts the runs of tick recorded for the schedules ids, whatever their status
// (armed fires not yet released are not recorded yet: run_shown).
func (r runsTable) recorded(ctx context.Context, ids []int64, tick time.Time) (int, error) {
	return r.count(ctx, "run_shown(armed, visible_at)", ids, tick)
}

// final counts the runs of tick recorded for the schedules ids with a final status.
func (r runsTable) final(ctx context.Context, ids []int64, tick time.Time) (int, error) {
	return r.count(ctx, "status <> 'RUNNING'", ids, tick)
}

func (r runsTable) count(ctx context.Context, cond string, ids []int64, tick time.Time) (int, error) {
	var n int
	err := r.st.Pool.QueryRow(ctx, `SELECT count(*) FROM schedule_runs WHERE schedule_id = ANY($1) AND scheduled_at = $2 AND `+
		cond+` AND `+live, ids, tick).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count runs of %s: %w", tick, err)
	}
	return n, nil
}

// statuses counts the runs of ticks recorded for the schedules ids by status.
func (r runsTable) statuses(ctx context.Context, ids []int64, ticks []time.Time) (map[domain.RunStatus]int, error) {
	rows, err := r.st.Pool.Query(ctx, `SELECT status, count(*) FROM schedule_runs
		WHERE schedule_id = ANY($1) AND scheduled_at = ANY($2) AND `+live+` GROUP BY status`, ids, ticks)
	if err != nil {
		return nil, fmt.Errorf("count runs by status: %w", err)
	}
	defer rows.Close()
	out := map[domain.RunStatus]int{}
	for rows.Next() {
		var s domain.RunStatus
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			return nil, err
		}
		out[s] = n
	}
	return out, rows.Err()
}

// retried counts the runs of ticks recorded for the schedules ids whose first attempt (sent
// by the worker that released the fire) did not succeed: retried by their delivery workflow.
func (r runsTable) retried(ctx context.Context, ids []int64, ticks []time.Time) (int, error) {
	var n int
	err := r.st.Pool.QueryRow(ctx, `SELECT count(*) FROM schedule_runs x
		WHERE x.schedule_id = ANY($1) AND x.scheduled_at = ANY($2) AND x.`+live+`
		  AND EXISTS (SELECT 1 FROM schedule_run_attempts a WHERE a.run_id = x.id AND (a.attempt > 1 OR a.outcome <> 'succeeded'))`,
		ids, ticks).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count runs retried: %w", err)
	}
	return n, nil
}

// duplicates counts runs beyond the first of one (schedule, tick) (S1), and events beyond
// the first of one run.
func (r runsTable) duplicates(ctx context.Context) (runs, events int64, err error) {
	err = r.st.Pool.QueryRow(ctx, `SELECT
		(SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM schedule_runs
			WHERE trigger IN ('scheduled', 'catchup') AND `+live+` GROUP BY schedule_id, scheduled_at HAVING count(*) > 1) d),
		(SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM event_store
			WHERE schedule_run_id IS NOT NULL GROUP BY schedule_run_id HAVING count(*) > 1) d)`).Scan(&runs, &events)
	if err != nil {
		return 0, 0, fmt.Errorf("count duplicates: %w", err)
	}
	return runs, events, nil
}
