package workflows_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/internal/version"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// Progressive rollouts (docs/progressive.md) in the time-skipping environment, with
// nothing mocked but the promoter's nudge: the real activities on a real PostgreSQL, the
// health checks' SQL probes run on real target databases through the sql executor's DSN
// configuration, and every durable timer — a bake, a window's opening, a rate's minute —
// skipped through, not slept.

// nopNudger takes the nudges the activities send; the workflows under test claim by
// themselves.
type nopNudger struct{}

func (nopNudger) NudgeRollouts(context.Context, []int64) error { return nil }
func (nopNudger) NudgePromoter(context.Context) error          { return nil }

func progressiveTask(db, typ, v string, runAt *time.Time) store.NewTaskRun {
	return store.NewTaskRun{Database: db, Type: domain.TaskType(typ), Version: v, VersionKey: version.MustKey(v), Executor: "noop", RunAt: runAt}
}

func createProgressive(t *testing.T, st *store.Store, limit int32, s *domain.Strategy, tasks ...store.NewTaskRun) (store.Rollout, map[string][]store.TaskRun) {
	t.Helper()
	ctx := context.Background()
	var dbs []string
	for _, tk := range tasks {
		dbs = append(dbs, tk.Database)
	}
	require.NoError(t, s.Validate(dbs))
	r, err := st.CreateRolloutWith(ctx, store.NewRollout{Name: t.Name(), ParallelLimit: limit, Strategy: s, Tasks: tasks})
	require.NoError(t, err)
	runs, err := st.ListTaskRuns(ctx, r.ID, 0, nil, 500)
	require.NoError(t, err)
	byDB := map[string][]store.TaskRun{}
	for _, tr := range runs {
		byDB[tr.Database] = append(byDB[tr.Database], tr)
	}
	return r, byDB
}

// rolloutEnv runs RolloutWorkflow on the real rollout activities, the promoter's nudge
// accepted (and counted).
func rolloutEnv(t *testing.T, acts *activities.RolloutActivities) (*testsuite.TestWorkflowEnvironment, *timeWatch) {
	var ts testsuite.WorkflowTestSuite
	ts.SetLogger(testLogger())
	env := ts.NewTestWorkflowEnvironment()
	env.SetTestTimeout(2 * time.Minute)
	env.RegisterWorkflowWithOptions(workflows.RolloutWorkflow, workflow.RegisterOptions{Name: workflows.RolloutWorkflowType})
	env.RegisterActivity(acts)
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", workflows.SignalNudgePromoter, mock.Anything).Return(nil).Maybe()
	return env, watchActivities(env)
}

func waitingMessage(t *testing.T, st *store.Store, id int64) string {
	t.Helper()
	tr, err := st.GetTaskRun(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, domain.TaskRunPending, tr.Status, "task %d", id)
	var c struct {
		Message string `json:"message"`
	}
	require.NoError(t, json.Unmarshal(tr.WaitingCause, &c), "%s", tr.WaitingCause)
	return c.Message
}

// healthyProbe passes on a database without a table named broken.
const healthyProbe = `SELECT NOT EXISTS (SELECT 1 FROM pg_tables WHERE tablename = 'broken')`

// A wave's bake is a durable timer of the workflow: the next wave's task waits through it
// (its cause naming the bake's end) and the health checks run when it ends — at the first
// wave's end + bake in workflow time, not before — on each database of the wave; they pass,
// the next wave opens and runs, and the rollout ends DONE.
func TestWaveBakeThenHealthChecksOpenTheNextWave(t *testing.T) {
	ctx := context.Background()
	st := testenv.Store(t)
	targets := map[string]string{"billing": testenv.DatabaseURL(t), "orders": testenv.DatabaseURL(t), "users": testenv.DatabaseURL(t)}
	s := &domain.Strategy{
		Waves:  []domain.Wave{{Databases: []string{"billing", "orders"}}, {Percent: intp(100)}},
		Bake:   "10m",
		Health: &domain.HealthCheck{SQL: healthyProbe, Timeout: "5s"},
	}
	r, tasks := createProgressive(t, st, 5, s,
		progressiveTask("billing", "DDL", "1", nil), progressiveTask("orders", "DDL", "1", nil), progressiveTask("users", "DDL", "1", nil))
	_, err := st.PromoteRound(ctx) // the promoter's first round: wave 1's tasks AVAILABLE
	require.NoError(t, err)

	acts := &activities.RolloutActivities{Store: st, Nudger: nopNudger{}, SQLTargets: targets}
	env, watch := rolloutEnv(t, acts)
	var (
		mu     sync.Mutex
		timers []time.Duration
	)
	env.SetOnTimerScheduledListener(func(_ string, d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		timers = append(timers, d)
	})
	start := time.Now().UTC().Truncate(time.Second)
	env.SetStartTime(start)
	bakeEnds := start.Add(10 * time.Minute)
	env.RegisterDelayedCallback(func() {
		// The bake is running: wave 1 is done, users waits on the bake.
		waves, err := st.ListRolloutWaves(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, domain.WaveBaking, waves[0].Status)
		require.Equal(t, bakeEnds, waves[0].BakeUntil.UTC(), "the bake ends 10m after the wave ended, by the workflow's clock")
		_, err = st.PromoteRound(ctx)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("wave 2 waits: bake ends %s UTC", bakeEnds.Format("15:04")), waitingMessage(t, st, tasks["users"][0].ID))
	}, 10*time.Minute-time.Second)
	env.ExecuteWorkflow(workflows.RolloutWorkflowType, workflows.RolloutInput{RolloutID: r.ID})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())

	checks := watch.startsOf("RunWaveChecks")
	require.Len(t, checks, 1)
	require.Equal(t, bakeEnds, checks[0], "the checks run when the bake's timer fires")
	mu.Lock()
	require.Contains(t, timers, 10*time.Minute, "the bake is one durable timer")
	mu.Unlock()
	waves, err := st.ListRolloutWaves(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, []string{domain.WavePassed, domain.WavePassed}, []string{waves[0].Status, waves[1].Status})
	var health []store.HealthResult
	require.NoError(t, json.Unmarshal(waves[0].Health, &health))
	require.Len(t, health, 2)
	require.Equal(t, []string{"billing", "orders"}, []string{health[0].Target, health[1].Target})
	require.True(t, health[0].OK && health[1].OK)
	require.False(t, health[0].At.IsZero(), "each result says when it was taken")
	users, err := st.GetTaskRun(ctx, tasks["users"][0].ID)
	require.NoError(t, err)
	require.Equal(t, domain.TaskRunDone, users.Status)
	sum, err := st.GetRolloutSummary(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, domain.RolloutDone, sum.Status)
}

// A health check that fails on one database of the wave pauses the rollout with the
// reason, emits it on the outbox and leaves the next wave's tasks PENDING, waiting with a
// cause that names the database; resuming after the fix runs the checks again, and the
// rollout goes on.
func TestWaveHealthCheckFailurePausesTheRollout(t *testing.T) {
	ctx := context.Background()
	st := testenv.Store(t)
	billing := testenv.DatabaseURL(t)
	targets := map[string]string{"billing": billing, "orders": testenv.DatabaseURL(t)}
	s := &domain.Strategy{
		Waves:  []domain.Wave{{Databases: []string{"billing"}}, {Databases: []string{"orders"}}},
		Bake:   "2m",
		Health: &domain.HealthCheck{SQL: healthyProbe, Timeout: "5s"},
	}
	r, tasks := createProgressive(t, st, 5, s, progressiveTask("billing", "DML", "1", nil), progressiveTask("orders", "DML", "1", nil))
	execOn(t, billing, `CREATE TABLE broken (id int)`) // what the migration broke
	_, err := st.PromoteRound(ctx)
	require.NoError(t, err)

	acts := &activities.RolloutActivities{Store: st, Nudger: nopNudger{}, SQLTargets: targets}
	env, watch := rolloutEnv(t, acts)
	start := time.Now().UTC().Truncate(time.Second)
	env.SetStartTime(start)
	env.RegisterDelayedCallback(func() {
		sum, err := st.GetRolloutSummary(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, domain.RolloutPaused, sum.Status)
		require.Equal(t, "wave 1: health check failed on billing: the probe answered false", sum.StatusReason)
		_, err = st.PromoteRound(ctx)
		require.NoError(t, err)
		require.Equal(t, "wave 2 waits: health check failed on billing: the probe answered false", waitingMessage(t, st, tasks["orders"][0].ID))
		// The fix, then the resume (as POST /rollouts/{id}/resume does it, with its nudge).
		execOn(t, billing, `DROP TABLE broken`)
		_, err = st.SetRolloutStatus(ctx, r.ID, domain.RolloutRunning, domain.RolloutPaused)
		require.NoError(t, err)
		env.SignalWorkflow(workflows.SignalPromoted, nil)
	}, time.Hour)
	env.ExecuteWorkflow(workflows.RolloutWorkflowType, workflows.RolloutInput{RolloutID: r.ID})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())

	checks := watch.startsOf("RunWaveChecks")
	require.Len(t, checks, 2)
	require.Equal(t, start.Add(2*time.Minute), checks[0], "after the bake")
	require.Equal(t, start.Add(time.Hour), checks[1], "again at the resume, without a second bake")
	orders, err := st.GetTaskRun(ctx, tasks["orders"][0].ID)
	require.NoError(t, err)
	require.Equal(t, domain.TaskRunDone, orders.Status)
	require.NotNil(t, orders.PromotedAt)
	var evType, evReason string
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT type, data->>'reason' FROM event_store WHERE aggregate_id = $1`,
		fmt.Sprintf("rollout/%d", r.ID)).Scan(&evType, &evReason))
	require.Equal(t, "rollout.paused", evType)
	require.Equal(t, "wave 1: health check failed on billing: the probe answered false", evReason)
}

func execOn(t *testing.T, dsn, sql string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(context.Background(), sql)
	require.NoError(t, err)
}

func intp(n int) *int { return &n }

// sqlTask is a task whose sql executor runs statement on db.
func sqlTask(db, v, statement string) store.NewTaskRun {
	return store.NewTaskRun{Database: db, Type: "DML", Version: v, VersionKey: version.MustKey(v), Executor: "sql",
		Payload: json.RawMessage(fmt.Sprintf(`{"statement": %q}`, statement))}
}

// The abort threshold, with real executors failing for real: once 2 tasks finished and more
// than half of them failed, the rollout pauses by itself — the runner that wrote the second
// failure promotes nothing more, the reason is recorded and emitted, the workflow stays,
// showing the reason in its current details (the Temporal UI), until the rollout is
// resumed or canceled. With action cancel the rollout ends CANCELED and its workflow ends.
func TestAbortThresholdStopsTheRolloutMidRun(t *testing.T) {
	for _, action := range []string{domain.AbortPause, domain.AbortCancel} {
		t.Run(action, func(t *testing.T) {
			ctx := context.Background()
			st := testenv.Store(t)
			target := testenv.DatabaseURL(t)
			targets := map[string]string{}
			var tasks []store.NewTaskRun
			for i, stmt := range []string{"SELECT 1/0", "SELECT 1/0", "SELECT 1", "SELECT 1", "SELECT 1"} {
				db := fmt.Sprintf("tenant%d", i)
				targets[db] = target
				tasks = append(tasks, sqlTask(db, fmt.Sprint(i+1), stmt))
			}
			s := &domain.Strategy{Abort: &domain.RolloutAbort{MinFinished: 2, FailedPercent: 50, Action: action}}
			r, byDB := createProgressive(t, st, 1, s, tasks...)
			_, err := st.PromoteRound(ctx)
			require.NoError(t, err)

			acts := &activities.RolloutActivities{Store: st, Nudger: nopNudger{}, SQLTargets: targets}
			env, _ := rolloutEnv(t, acts)
			var details string
			if action == domain.AbortPause {
				env.RegisterDelayedCallback(func() {
					v, err := env.QueryWorkflow("__temporal_workflow_metadata")
					require.NoError(t, err)
					var md sdkpb.WorkflowMetadata
					require.NoError(t, v.Get(&md))
					details = md.GetCurrentDetails()
					env.CancelWorkflow()
				}, 10*time.Minute)
			}
			env.ExecuteWorkflow(workflows.RolloutWorkflowType, workflows.RolloutInput{RolloutID: r.ID})
			require.True(t, env.IsWorkflowCompleted())

			want := "abort threshold: 2 of 2 finished tasks failed (100%, more than 50%, at least 2 finished)"
			sum, err := st.GetRolloutSummary(ctx, r.ID)
			require.NoError(t, err)
			require.Equal(t, want, sum.StatusReason)
			for i := 2; i < 5; i++ {
				tr, err := st.GetTaskRun(ctx, byDB[fmt.Sprintf("tenant%d", i)][0].ID)
				require.NoError(t, err)
				require.Nil(t, tr.StartedAt, "no task started after the threshold tripped")
				if action == domain.AbortPause {
					require.Equal(t, domain.TaskRunPending, tr.Status)
				} else {
					require.Equal(t, domain.TaskRunCanceled, tr.Status)
				}
			}
			var evType string
			require.NoError(t, st.Pool.QueryRow(ctx, `SELECT e.type FROM event_store e JOIN outbox_messages o ON o.event_id = e.id
				WHERE e.aggregate_id = $1 AND e.data->>'reason' = $2`, fmt.Sprintf("rollout/%d", r.ID), want).Scan(&evType))
			if action == domain.AbortPause {
				require.Equal(t, domain.RolloutPaused, sum.Status)
				require.Equal(t, "rollout.paused", evType)
				require.Contains(t, details, "PAUSED — "+want, "the Temporal UI's current details show the reason")
			} else {
				require.NoError(t, env.GetWorkflowError(), "a canceled rollout's workflow ends by itself")
				require.Equal(t, domain.RolloutCanceled, sum.Status)
				require.Equal(t, "rollout.canceled", evType)
			}
		})
	}
}

// promoterEnv runs the promoter on the real rollout activities; done finishes every task a
// round promoted at once (as executors that take no time would), so the exponential rate
// sees them succeed.
func promoterEnv(t *testing.T, st *store.Store) (*testsuite.TestWorkflowEnvironment, *timeWatch) {
	var ts testsuite.WorkflowTestSuite
	ts.SetLogger(testLogger())
	env := ts.NewTestWorkflowEnvironment()
	env.SetTestTimeout(2 * time.Minute)
	env.RegisterWorkflowWithOptions(workflows.PromoterWorkflow, workflow.RegisterOptions{Name: workflows.PromoterWorkflowType})
	env.RegisterActivity(&activities.RolloutActivities{Store: st, Nudger: &finisher{t: t, st: st}})
	return env, watchActivities(env)
}

// finisher is a nudger that claims and finishes DONE every task promoted into a rollout.
type finisher struct {
	t  *testing.T
	st *store.Store
}

func (f *finisher) NudgeRollouts(ctx context.Context, ids []int64) error {
	for _, id := range ids {
		claimed, err := f.st.ClaimTaskRuns(ctx, id, 1000)
		if err != nil {
			return err
		}
		for _, c := range claimed {
			if _, _, err := f.st.FinishTaskRun(ctx, c.ID, c.Attempt, domain.TaskRunDone, "", nil); err != nil {
				return err
			}
		}
	}
	return nil
}
func (f *finisher) NudgePromoter(context.Context) error { return nil }

// promotedAt groups a rollout's tasks by the promotion clock that promoted them.
func promotedAt(t *testing.T, st *store.Store, rolloutID int64) map[time.Time]int {
	t.Helper()
	runs, err := st.ListTaskRuns(context.Background(), rolloutID, 0, nil, 500)
	require.NoError(t, err)
	out := map[time.Time]int{}
	for _, tr := range runs {
		if tr.PromotedAt != nil {
			out[tr.PromotedAt.UTC()]++
		}
	}
	return out
}

// The exponential rate as AWS IoT Jobs defines it: 2 a minute to begin with, doubled each
// time 2 more tasks succeeded, capped at 8 a minute. The promoter's durable timer wakes it
// when the minute's oldest promotion leaves the minute; each round promotes what the rate
// allows by the promotion clock.
func TestExponentialRateRaisesTheRateAsTasksSucceed(t *testing.T) {
	saved := workflows.PromoterSafetyPoll
	workflows.PromoterSafetyPoll = 24 * time.Hour // only the rate's timer wakes the promoter
	t.Cleanup(func() { workflows.PromoterSafetyPoll = saved })
	st := testenv.Store(t)
	s := &domain.Strategy{Rate: &domain.Rate{PerMinute: intp(8), Exponential: &domain.ExponentialRate{BasePerMinute: 2, Factor: 2, AfterSucceeded: 2}}}
	var tasks []store.NewTaskRun
	for i := range 20 {
		tasks = append(tasks, progressiveTask(fmt.Sprintf("db%02d", i), "DML", "1", nil))
	}
	r, _ := createProgressive(t, st, 100, s, tasks...)
	env, watch := promoterEnv(t, st)
	t0 := time.Now().UTC().Add(time.Hour).Truncate(time.Second) // ahead of the database's clock
	env.SetStartTime(t0)
	env.RegisterDelayedCallback(env.CancelWorkflow, 10*time.Minute)
	env.ExecuteWorkflow(workflows.PromoterWorkflowType)
	require.True(t, env.IsWorkflowCompleted())

	require.Equal(t, map[time.Time]int{
		t0:                      2, // 0 succeeded: the base rate
		t0.Add(time.Minute):     4, // 2 succeeded: doubled
		t0.Add(2 * time.Minute): 8, // 6 succeeded: 16, capped at per_minute
		t0.Add(3 * time.Minute): 6, // the rest
	}, promotedAt(t, st, r.ID))
	rounds := watch.startsOf("PromoteRollouts")
	require.Equal(t, []time.Time{t0, t0.Add(time.Minute), t0.Add(2 * time.Minute), t0.Add(3 * time.Minute)}, rounds,
		"one round per minute, each woken by the rate's timer")
}

// Windows across a daylight saving change: a window every night at 02:30 Europe/Paris, for
// an hour. 2027-03-28 springs forward at 02:00 (to 03:00): that night 02:30 does not exist
// and the window opens at the transition, 01:00 UTC, as a schedule would fire; before it
// 02:30 is 01:30 UTC, after it 00:30 UTC. Three tasks on one database (one per night:
// the second and third carry a run_at) start exactly at their nights' openings, and wait
// outside, the cause naming the next opening.
func TestWindowsOpenAcrossADaylightSavingChange(t *testing.T) {
	saved := workflows.PromoterSafetyPoll
	workflows.PromoterSafetyPoll = 24 * time.Hour
	t.Cleanup(func() { workflows.PromoterSafetyPoll = saved })
	ctx := context.Background()
	st := testenv.Store(t)
	day := func(d, h, m int) time.Time { return time.Date(2027, 3, d, h, m, 0, 0, time.UTC) }
	sat, sun := day(27, 12, 0), day(28, 12, 0)
	s := &domain.Strategy{Windows: []domain.Window{{Cron: "30 2 * * *", Duration: "1h", Timezone: "Europe/Paris"}}}
	r, tasks := createProgressive(t, st, 5, s,
		progressiveTask("tenant", "DDL", "1", nil), progressiveTask("tenant", "DDL", "2", &sat), progressiveTask("tenant", "DDL", "3", &sun))
	env, _ := promoterEnv(t, st)
	start := day(26, 12, 0) // Friday noon
	env.SetStartTime(start)
	env.RegisterDelayedCallback(func() {
		require.Equal(t, "outside every window; the next opens 2027-03-27 01:30 UTC", waitingMessage(t, st, tasks["tenant"][0].ID))
	}, time.Hour)
	env.RegisterDelayedCallback(func() {
		// Saturday afternoon: the second task's run_at has passed, the night's window has not come.
		require.Equal(t, "outside every window; the next opens 2027-03-28 01:00 UTC", waitingMessage(t, st, tasks["tenant"][1].ID))
	}, day(27, 15, 0).Sub(start))
	env.RegisterDelayedCallback(env.CancelWorkflow, day(29, 12, 0).Sub(start))
	env.ExecuteWorkflow(workflows.PromoterWorkflowType)
	require.True(t, env.IsWorkflowCompleted())

	for i, want := range []time.Time{day(27, 1, 30), day(28, 1, 0), day(29, 0, 30)} {
		tr, err := st.GetTaskRun(ctx, tasks["tenant"][i].ID)
		require.NoError(t, err)
		require.Equal(t, domain.TaskRunDone, tr.Status)
		require.Equal(t, want, tr.PromotedAt.UTC(), "task %d started at its night's opening", i+1)
	}
	_ = r
}
