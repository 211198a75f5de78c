package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The progressive scenario (docs/progressive.md, issue 27): besides the plain rollout, the
// run migrates WaveDatabases tenant databases in three waves, with a bake and an SQL health
// probe between them, while the faults go on. The migration "broke" the first database of
// wave 2 (it holds a table named broken, which the probe looks for), so wave 1 passes, wave
// 2's health check fails and the rollout must pause there: R1–R3 and W1 hold throughout, no
// task of wave 3 ever starts, and the rollout ends PAUSED with the reason naming the
// database.

// waveProbe is the health check's SQL: a tenant is healthy while it has no broken table.
const waveProbe = `SELECT NOT EXISTS (SELECT 1 FROM pg_tables WHERE tablename = 'broken')`

// waveDatabases are the tenant databases of the scenario, in wave order: the first third
// in wave 1, the second in wave 2, the rest in wave 3.
func waveDatabases(p Profile) [3][]string {
	var out [3][]string
	for i := 0; i < p.WaveDatabases; i++ {
		w := min(i*3/max(p.WaveDatabases, 1), 2)
		out[w] = append(out[w], fmt.Sprintf("chaos_wave_%02d", i))
	}
	return out
}

// brokenWaveDatabase is the tenant whose health check fails: wave 2's first.
func brokenWaveDatabase(p Profile) string { return waveDatabases(p)[1][0] }

// createWaveTargets creates the tenant databases in the run's PostgreSQL cluster, breaks
// wave 2's first, and returns the sql executor's DSN configuration for them
// (TICKGATE_SQL_TARGETS of the workers).
func (s *stack) createWaveTargets(ctx context.Context, p Profile) (map[string]string, error) {
	targets := map[string]string{}
	for _, wave := range waveDatabases(p) {
		for _, db := range wave {
			if err := s.pg.EnsureDatabase(ctx, db); err != nil {
				return nil, fmt.Errorf("chaos: tenant database %s: %w", db, err)
			}
			targets[db] = s.pg.URL(db)
		}
	}
	if p.WaveDatabases == 0 {
		return targets, nil
	}
	broken := brokenWaveDatabase(p)
	conn, err := pgx.Connect(ctx, targets[broken])
	if err != nil {
		return nil, fmt.Errorf("chaos: break %s: %w", broken, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS broken (id int)`); err != nil {
		return nil, fmt.Errorf("chaos: break %s: %w", broken, err)
	}
	return targets, nil
}

func sqlTargetsEnv(targets map[string]string) string {
	b, _ := json.Marshal(targets)
	return "TICKGATE_SQL_TARGETS=" + string(b)
}

// wavesRolloutRequest is the tenant migration: per database WaveTasks DDL tasks in version
// order, each a noop of WaveTaskSleep; three waves of explicit databases, WaveBake between
// them, the SQL probe with a timeout long enough to wait out the PostgreSQL restart.
func wavesRolloutRequest(p Profile) map[string]any {
	waves := waveDatabases(p)
	var tasks []map[string]any
	for _, wave := range waves {
		for _, db := range wave {
			for v := 1; v <= p.WaveTasks; v++ {
				tasks = append(tasks, map[string]any{
					"database": db, "type": "DDL", "version": fmt.Sprintf("2026.%d", v), "executor": "noop",
					"payload": map[string]any{"sleep": p.WaveTaskSleep.String()},
				})
			}
		}
	}
	return map[string]any{
		"name": "chaos-waves", "parallel_limit": p.WaveDatabases, "tasks": tasks,
		"strategy": map[string]any{
			"waves":  []any{map[string]any{"databases": waves[0]}, map[string]any{"databases": waves[1]}, map[string]any{"percent": 100}},
			"bake":   p.WaveBake.String(),
			"health": map[string]any{"sql": waveProbe, "timeout": "90s"},
		},
	}
}

// wavesCheck is the scenario's sampled invariant: no task of wave 3 of the waves rollout
// has been promoted or started (wave 2 fails, so wave 3 must never open).
func wavesCheck(rolloutID *int64) check {
	return check{name: "waves: no task of wave 3 starts (wave 2 fails its health check)", count: func(ctx context.Context, tx pgx.Tx) (int64, error) {
		if *rolloutID == 0 {
			return 0, nil
		}
		var n int64
		err := tx.QueryRow(ctx, `SELECT count(*) FROM task_runs WHERE rollout_id = $1 AND wave >= 3
			AND (promoted_at IS NOT NULL OR started_at IS NOT NULL)`, *rolloutID).Scan(&n)
		return n, err
	}}
}

// WavesOutcome is how the waves rollout ended.
type WavesOutcome struct {
	RolloutID int64
	// Status is the rollout's status; Reason why it paused.
	Status, Reason string
	// WaveStatuses are its waves' statuses, wave 1 first; Checked when each one's health
	// checks last ran (zero: never).
	WaveStatuses []string
	Checked      []time.Time
	// DoneBeforeFailure counts the DONE tasks of waves 1 and 2, of TasksBeforeFailure.
	DoneBeforeFailure, TasksBeforeFailure int64
	// LaterWaveStarted counts wave 3's tasks promoted or started (must be 0); LaterWaveWaiting
	// those PENDING with the wave's cause.
	LaterWaveStarted, LaterWaveWaiting, LaterWaveTasks int64
}

// Held reports whether the rollout paused at wave 2 as it must: wave 1 PASSED, wave 2
// FAILED, the rollout PAUSED naming the broken database, every task of waves 1 and 2 DONE
// and none of wave 3 started.
func (w WavesOutcome) Held(p Profile) bool {
	return w.Status == "PAUSED" && len(w.WaveStatuses) == 3 && w.WaveStatuses[0] == "PASSED" && w.WaveStatuses[1] == "FAILED" &&
		w.WaveStatuses[2] == "WAITING" && w.DoneBeforeFailure == w.TasksBeforeFailure && w.LaterWaveStarted == 0 &&
		w.LaterWaveWaiting == w.LaterWaveTasks && w.LaterWaveTasks > 0 &&
		w.Reason == fmt.Sprintf("wave 2: health check failed on %s: the probe answered false", brokenWaveDatabase(p))
}

// wavesOutcome reads the waves rollout's end state.
func wavesOutcome(ctx context.Context, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}, rolloutID int64) (WavesOutcome, error) {
	w := WavesOutcome{RolloutID: rolloutID}
	if rolloutID == 0 {
		return w, nil
	}
	err := q.QueryRow(ctx, `SELECT s.status, s.status_reason,
		       (SELECT count(*) FROM task_runs t WHERE t.rollout_id = s.id AND t.wave <= 2 AND t.status = 'DONE'),
		       (SELECT count(*) FROM task_runs t WHERE t.rollout_id = s.id AND t.wave <= 2),
		       (SELECT count(*) FROM task_runs t WHERE t.rollout_id = s.id AND t.wave >= 3 AND (t.promoted_at IS NOT NULL OR t.started_at IS NOT NULL)),
		       (SELECT count(*) FROM task_runs t WHERE t.rollout_id = s.id AND t.wave >= 3 AND t.status = 'PENDING'
		          AND t.waiting_cause->>'reason' = 'wave'),
		       (SELECT count(*) FROM task_runs t WHERE t.rollout_id = s.id AND t.wave >= 3)
		FROM rollout_summaries s WHERE s.id = $1`, rolloutID).Scan(&w.Status, &w.Reason, &w.DoneBeforeFailure, &w.TasksBeforeFailure,
		&w.LaterWaveStarted, &w.LaterWaveWaiting, &w.LaterWaveTasks)
	if err != nil {
		return w, fmt.Errorf("waves rollout %d: %w", rolloutID, err)
	}
	rows, err := q.Query(ctx, `SELECT status, coalesce(checked_at, 'epoch') FROM rollout_waves WHERE rollout_id = $1 ORDER BY wave`, rolloutID)
	if err != nil {
		return w, fmt.Errorf("waves of rollout %d: %w", rolloutID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var status string
		var at time.Time
		if err := rows.Scan(&status, &at); err != nil {
			return w, err
		}
		if at.Unix() == 0 {
			at = time.Time{}
		}
		w.WaveStatuses, w.Checked = append(w.WaveStatuses, status), append(w.Checked, at)
	}
	return w, rows.Err()
}

func brokenOrNone(p Profile) string {
	if p.WaveDatabases == 0 {
		return "none"
	}
	return brokenWaveDatabase(p)
}
