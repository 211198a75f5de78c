package chaos

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tickgate/tickgate/internal/dev/chaos/invariants"
	"github.com/tickgate/tickgate/store"
)

// check is one invariant: count returns the rows (or facts) breaking it, read on the
// sample's REPEATABLE READ snapshot tx, or through the store where the project already
// checks that invariant (a single statement: a snapshot of its own).
type check struct {
	name string // e.g. "D2 running ≤ min(capacity, eligible) per PC"
	// heavy checks scan whole tables; they are sampled less often.
	heavy bool
	count func(ctx context.Context, tx pgx.Tx) (int64, error)
}

// sqlCount is a check whose query returns the number of breaking rows.
func sqlCount(query string, args ...any) func(context.Context, pgx.Tx) (int64, error) {
	return func(ctx context.Context, tx pgx.Tx) (int64, error) {
		var n int64
		err := tx.QueryRow(ctx, query, args...).Scan(&n)
		return n, err
	}
}

// overdueGrace is how far past its timeout_at an execution may still be SENT/ACKED before
// the checker calls it a D3 breach: the timeout's durable timer fires late while Temporal
// or PostgreSQL is down, and the run restarts them.
const overdueGrace = 2 * time.Minute

// sampledChecks hold at every instant, so the checker evaluates them throughout the run.
func sampledChecks(st *store.Store) []check {
	return []check{
		{name: "S1 no tick fired twice", heavy: true, count: func(ctx context.Context, _ pgx.Tx) (int64, error) {
			return st.CountDuplicateTicks(ctx)
		}},
		{name: "S1 one event + outbox row per fire", heavy: true, count: sqlCount(`
		SELECT (SELECT count(*) FROM (
		          SELECT schedule_run_id FROM event_store WHERE schedule_run_id IS NOT NULL
		          GROUP BY 1 HAVING count(*) > 1) twice)
		     + (SELECT count(*) FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id
		        WHERE r.fired_at IS NOT NULL AND s.action->>'kind' = 'event'
		          AND NOT EXISTS (SELECT 1 FROM event_store e WHERE e.schedule_run_id = r.id))
		     + (SELECT count(*) FROM event_store e
		        WHERE NOT EXISTS (SELECT 1 FROM outbox_messages o WHERE o.event_id = e.id))`)},
		cappedCheck,
		{name: "R1–R3 one DDL/SDL alone per database, version order, parallel limit", count: func(ctx context.Context, tx pgx.Tx) (int64, error) {
			breaches, err := invariants.RolloutBreaches(ctx, tx)
			return int64(len(breaches)), err
		}},
		// No task is retried by an operator during the run, so a second claim of a task
		// (attempt > 1) can only be a double claim; and nothing runs before its run_at.
		{name: "R4 each task claimed once", count: sqlCount(`
		SELECT count(*) FROM task_runs
		WHERE attempt > 1 OR (started_at IS NOT NULL AND run_at IS NOT NULL AND started_at < run_at)`)},
		{name: "D1 one active device task, the oldest", count: sqlCount(`
		SELECT (SELECT greatest(count(*) - 1, 0) FROM tasks WHERE status = 'running')
		     + (SELECT count(*) FROM tasks r JOIN tasks p ON p.status = 'pending' AND p.id < r.id
		        WHERE r.status = 'running')`)},
		{name: "D2 running ≤ min(capacity, eligible) per PC", count: sqlCount(`
		SELECT count(*) FROM pc_device_summary WHERE running > target`)},
		{name: "D3 timeout, attempts, final failure → error", count: sqlCount(`
		SELECT (SELECT count(*) FROM task_devices td JOIN tasks t ON t.id = td.task_id
		        WHERE td.sent_at IS NOT NULL AND td.timeout_at IS NOT NULL
		          AND td.timeout_at <> td.sent_at + t.device_timeout_ms * interval '1 millisecond')
		     + (SELECT count(*) FROM task_devices td
		        WHERE td.status IN ('SENT', 'ACKED') AND td.timeout_at < now() - $1 * interval '1 millisecond')
		     + (SELECT count(*) FROM task_devices td JOIN devices d ON d.id = td.device_id
		        WHERE td.status = 'FAILED_FINAL' AND d.status <> 'error')`, overdueGrace.Milliseconds())},
		{name: "D3 one result per attempt, ≤ max_attempts sends", heavy: true, count: sqlCount(`
		SELECT (SELECT count(*) FROM (
		          SELECT task_device_id, attempt FROM task_device_events
		          WHERE type IN ('SUCCEEDED', 'FAILED', 'TIMEOUT')
		          GROUP BY 1, 2 HAVING count(*) > 1) twice)
		     + (SELECT count(*) FROM (
		          SELECT e.task_device_id FROM task_device_events e JOIN task_devices td ON td.id = e.task_device_id
		          WHERE e.type = 'SENT' GROUP BY e.task_device_id, td.max_attempts
		          HAVING count(*) > td.max_attempts) sends)`)},
	}
}

// CheckResult is what the checker saw of one invariant.
type CheckResult struct {
	Name     string
	Samples  int
	Breaches int64 // rows breaking it, summed over samples
	First    string
}

// checker samples the invariants while the run goes on. A sample that cannot reach the
// database (PostgreSQL is being restarted) is counted as unreachable, not as a pass.
type checker struct {
	pool   *pgxpool.Pool
	checks []check

	mu          sync.Mutex
	results     []CheckResult // in the order of checks
	unreachable int
}

func newChecker(st *store.Store, more ...check) *checker {
	c := &checker{pool: st.Pool, checks: append(sampledChecks(st), more...)}
	for _, ch := range c.checks {
		c.results = append(c.results, CheckResult{Name: ch.name})
	}
	return c
}

// run samples every interval until ctx ends; heavy checks every tenth sample.
func (c *checker) run(ctx context.Context, interval time.Duration) {
	for n := 0; ctx.Err() == nil; n++ {
		_ = c.sample(ctx, n%10 == 0)
		sleepCtx(ctx, interval)
	}
}

// sample evaluates the checks on one REPEATABLE READ snapshot.
func (c *checker) sample(ctx context.Context, heavy bool) error {
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	counts := make([]int64, len(c.checks))
	err := func() error {
		tx, err := c.pool.BeginTx(qctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		if err != nil {
			return fmt.Errorf("checker: begin: %w", err)
		}
		defer func() { _ = tx.Rollback(context.Background()) }()
		for i, ch := range c.checks {
			if ch.heavy && !heavy {
				counts[i] = -1
				continue
			}
			if counts[i], err = ch.count(qctx, tx); err != nil {
				return fmt.Errorf("checker: %s: %w", ch.name, err)
			}
		}
		return nil
	}()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.unreachable++
		return err
	}
	for i, n := range counts {
		if n < 0 {
			continue // not sampled this time
		}
		r := &c.results[i]
		r.Samples++
		r.Breaches += n
		if n > 0 && r.First == "" {
			r.First = time.Now().UTC().Format(time.RFC3339)
		}
	}
	return nil
}

// snapshot returns the results so far, in the checks' order.
func (c *checker) snapshot() ([]CheckResult, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.results), c.unreachable
}

// FinalCounts are the end-of-run checks and totals.
type FinalCounts struct {
	Fires, Skipped, Missed, CatchupFires, ManualFires int64
	RunsSucceeded, RunsFailed, RunsCanceled           int64
	Duplicates                                        int64
	LostTicks                                         int64 // ticks inside the window with no row
	ExpectedTicks                                     int64
	UnfinishedScheduleRuns                            int64
	TasksDone, TasksOther, UnfinishedTasks            int64
	// ExternalDone counts the external rollout's tasks DONE (apart from TasksDone).
	ExternalDone int64
	// FalseOutcomes counts workflow-action runs ended otherwise than their target (truth.go).
	FalseOutcomes int64
	// Waves is how the progressive scenario's rollout ended (its tasks are not counted above).
	Waves                                             WavesOutcome
	DeviceExecutions, DeviceSucceeded, DeviceFailed   int64
	DeviceTimeouts, DeviceRetries, DevicesInError     int64
	UnfinishedDeviceExecutions, UnfinishedDeviceTasks int64
	LateResults                                       int64
	// The http actions, from the receiver's side (internal/dev/chaos/http.go).
	HTTPKeys, HTTPRequests, HTTPExecuted, HTTPRedeliveries int64
	HTTPBreaches                                           int64
}

// finalCheck counts the totals and checks S2 for the ticks from startAt to cutoff; the
// waves rollout's tasks are counted apart (Waves).
func finalCheck(ctx context.Context, st *store.Store, startAt, cutoff time.Time, wavesRolloutID, externalRolloutID int64) (FinalCounts, error) {
	var f FinalCounts
	pool := st.Pool
	err := pool.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE fired_at IS NOT NULL),
		       count(*) FILTER (WHERE status = 'SKIPPED'),
		       count(*) FILTER (WHERE status = 'MISSED'),
		       count(*) FILTER (WHERE trigger = 'catchup' AND fired_at IS NOT NULL),
		       count(*) FILTER (WHERE trigger IN ('manual', 'backfill')),
		       count(*) FILTER (WHERE status = 'SUCCEEDED'),
		       count(*) FILTER (WHERE status = 'FAILED'),
		       count(*) FILTER (WHERE status IN ('CANCELED', 'TERMINATED')),
		       count(*) FILTER (WHERE status = 'RUNNING')
		FROM schedule_runs WHERE retracted_at IS NULL`).Scan(&f.Fires, &f.Skipped, &f.Missed, &f.CatchupFires, &f.ManualFires,
		&f.RunsSucceeded, &f.RunsFailed, &f.RunsCanceled, &f.UnfinishedScheduleRuns)
	if err != nil {
		return f, fmt.Errorf("final: schedule runs: %w", err)
	}
	if f.Duplicates, err = st.CountDuplicateTicks(ctx); err != nil {
		return f, fmt.Errorf("final: %w", err)
	}
	// S2: every tick start_at + n·interval ≤ cutoff of every schedule has its row (fired,
	// skipped or missed, each with its reason), counted against the ticks the spec implies.
	// The command schedules are paused and resumed all along (a paused schedule records no
	// tick): their history is checked instead (histories.ScheduleModel).
	err = pool.QueryRow(ctx, `
		WITH per AS (
			SELECT s.id,
			       floor(extract(epoch FROM ($2::timestamptz - $1::timestamptz)) /
			             (s.spec->'interval'->>'every')::bigint)::bigint + 1 AS expected,
			       (SELECT count(DISTINCT r.scheduled_at) FROM schedule_runs r
			        WHERE r.schedule_id = s.id AND r.trigger IN ('scheduled', 'catchup') AND r.retracted_at IS NULL
			          AND r.scheduled_at BETWEEN $1 AND $2) AS got
			FROM schedules s WHERE s.name NOT LIKE '`+commandPrefix+`%')
		SELECT coalesce(sum(expected), 0)::bigint, coalesce(sum(greatest(expected - got, 0)), 0)::bigint FROM per`,
		startAt, cutoff).Scan(&f.ExpectedTicks, &f.LostTicks)
	if err != nil {
		return f, fmt.Errorf("final: S2: %w", err)
	}
	err = pool.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE status = 'DONE' AND rollout_id <> $2),
		       count(*) FILTER (WHERE status IN ('FAILED', 'CANCELED', 'SKIPPED')),
		       count(*) FILTER (WHERE status = 'DONE' AND rollout_id = $2)
		FROM task_runs WHERE rollout_id <> $1`, wavesRolloutID, externalRolloutID).Scan(&f.TasksDone, &f.TasksOther, &f.ExternalDone)
	if err != nil {
		return f, fmt.Errorf("final: task runs: %w", err)
	}
	err = pool.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM task_devices),
		       (SELECT count(*) FROM task_devices WHERE status = 'SUCCEEDED'),
		       (SELECT count(*) FROM task_devices WHERE status = 'FAILED_FINAL'),
		       (SELECT count(*) FROM task_device_events WHERE type = 'TIMEOUT'),
		       (SELECT count(*) FROM task_device_events WHERE type = 'RETRY_SCHEDULED'),
		       (SELECT count(*) FROM devices WHERE status = 'error'),
		       (SELECT count(*) FROM task_device_events WHERE type = 'LATE_RESULT')`).Scan(
		&f.DeviceExecutions, &f.DeviceSucceeded, &f.DeviceFailed, &f.DeviceTimeouts, &f.DeviceRetries,
		&f.DevicesInError, &f.LateResults)
	if err != nil {
		return f, fmt.Errorf("final: devices: %w", err)
	}
	u, err := countUnfinished(ctx, pool, cutoff, wavesRolloutID)
	if err != nil {
		return f, fmt.Errorf("final: %w", err)
	}
	f.UnfinishedTasks, f.UnfinishedDeviceExecutions, f.UnfinishedDeviceTasks = u.taskRuns, u.executions, u.deviceTasks
	if f.Waves, err = wavesOutcome(ctx, pool, wavesRolloutID); err != nil {
		return f, fmt.Errorf("final: %w", err)
	}
	return f, nil
}

// unfinished is the work not yet final: schedules without a recorded tick at or after the
// cutoff, task runs (the waves rollout's apart), device executions and device tasks, and
// the waves rollout until its wave 2 has failed its checks (waves 0 or 1).
type unfinished struct{ behind, taskRuns, executions, deviceTasks, waves int64 }

func countUnfinished(ctx context.Context, pool *pgxpool.Pool, cutoff time.Time, wavesRolloutID int64) (unfinished, error) {
	var u unfinished
	err := pool.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM schedules s
		        WHERE NOT EXISTS (SELECT 1 FROM schedule_runs r WHERE r.schedule_id = s.id
		                            AND r.trigger IN ('scheduled', 'catchup') AND r.scheduled_at >= $1)),
		       (SELECT count(*) FROM task_runs WHERE status IN ('NOT_STARTED', 'PENDING', 'AVAILABLE', 'RUNNING') AND rollout_id <> $2),
		       (SELECT count(*) FROM task_devices WHERE status NOT IN ('SUCCEEDED', 'FAILED_FINAL', 'CANCELED')),
		       (SELECT count(*) FROM tasks WHERE status IN ('pending', 'running', 'retrying')),
		       (SELECT count(*) FROM rollouts r WHERE r.id = $2 AND NOT EXISTS (
		          SELECT 1 FROM rollout_waves w WHERE w.rollout_id = r.id AND w.wave = 2 AND w.status = 'FAILED'))`,
		cutoff, wavesRolloutID).Scan(&u.behind, &u.taskRuns, &u.executions, &u.deviceTasks, &u.waves)
	if err != nil {
		return u, fmt.Errorf("count unfinished work: %w", err)
	}
	return u, nil
}

// settled reports whether the run's work is done up to cutoff: every schedule has
// recorded a tick at or after cutoff (its ticks are recorded in order, so all before it are
// decided: a tick still missing then is lost, and the final check counts it), and every task
// run, device execution and device task is final. It is polled, so it reads only that.
func settled(ctx context.Context, pool *pgxpool.Pool, cutoff time.Time, wavesRolloutID int64) (bool, string, error) {
	u, err := countUnfinished(ctx, pool, cutoff, wavesRolloutID)
	if err != nil {
		return false, "", fmt.Errorf("settled: %w", err)
	}
	why := fmt.Sprintf("schedules not past the cutoff %d, unfinished task runs %d, device executions %d, device tasks %d, waves rollout not yet stopped at wave 2 %d",
		u.behind, u.taskRuns, u.executions, u.deviceTasks, u.waves)
	return u.behind+u.taskRuns+u.executions+u.deviceTasks+u.waves == 0, why, nil
}
