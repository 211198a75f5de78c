package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

// The progressive gates (docs/progressive.md) applied by the real promotion round: waves,
// freezes, windows and rate join run_at and R1–R3 in rollout_gates; each test checks R1–R3
// after every round (promote) as the other gate tests do.

func intp(n int) *int { return &n }

func newStrategyRollout(t *testing.T, st *store.Store, limit int32, s *domain.Strategy, tasks ...store.NewTaskRun) (store.Rollout, map[string]store.TaskRun) {
	t.Helper()
	ctx := context.Background()
	var dbs []string
	for _, tk := range tasks {
		dbs = append(dbs, tk.Database)
	}
	require.NoError(t, s.Validate(dbs))
	r, err := st.CreateRolloutWith(ctx, store.NewRollout{Name: "progressive", ParallelLimit: limit, Strategy: s, Tasks: tasks})
	require.NoError(t, err)
	runs, err := st.ListTaskRuns(ctx, r.ID, 0, nil, 500)
	require.NoError(t, err)
	byDB := map[string]store.TaskRun{}
	for _, tr := range runs {
		byDB[tr.Database] = tr
	}
	return r, byDB
}

// events lists the (topic, type, data) of the events about an aggregate, oldest first.
func events(t *testing.T, st *store.Store, aggregate string) []map[string]any {
	t.Helper()
	rows, err := st.Pool.Query(context.Background(), `SELECT e.topic, e.type, e.data FROM event_store e
		JOIN outbox_messages o ON o.event_id = e.id WHERE e.aggregate_id = $1 ORDER BY e.id`, aggregate)
	require.NoError(t, err)
	defer rows.Close()
	var out []map[string]any
	for rows.Next() {
		var topic, typ string
		var data map[string]any
		require.NoError(t, rows.Scan(&topic, &typ, &data))
		data["_topic"], data["_type"] = topic, typ
		out = append(out, data)
	}
	require.NoError(t, rows.Err())
	return out
}

// A rollout of three waves (a database; half of the rest; the rest): only wave 1 is
// promoted; the later waves wait with a cause naming what they wait for, which follows the
// wave before through its run, its bake, its health checks, their failure (the rollout
// pauses, saying why, with an event) and, after a resume, their pass — which opens wave 2.
func TestWaveGateHoldsEachWaveUntilTheOneBeforePassed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testenv.Store(t)
	s := &domain.Strategy{
		Waves:  []domain.Wave{{Databases: []string{"billing"}}, {Percent: intp(50)}, {Percent: intp(100)}},
		Bake:   "10m",
		Health: &domain.HealthCheck{SQL: "SELECT true"},
	}
	r, tasks := newStrategyRollout(t, st, 10, s,
		task("billing", "DDL", "1"), task("orders", "DDL", "1"), task("users", "DDL", "1"), task("search", "DDL", "1"))
	require.EqualValues(t, 3, r.WaveCount)
	require.EqualValues(t, 1, tasks["billing"].Wave)
	require.EqualValues(t, 2, tasks["orders"].Wave, "half of the three left, rounded up: orders and users")
	require.EqualValues(t, 2, tasks["users"].Wave)
	require.EqualValues(t, 3, tasks["search"].Wave)

	p := promote(t, st)
	require.Len(t, p.Promoted, 1)
	require.Equal(t, tasks["billing"].ID, p.Promoted[0].ID)
	c := cause(t, st, tasks["orders"].ID)
	require.Equal(t, "wave", c["reason"])
	require.Equal(t, "wave_running", c["waits"])
	require.Equal(t, "wave 2 waits: wave 1 is running", c["message"])
	require.Equal(t, "wave 3 waits: wave 2 has not started", cause(t, st, tasks["search"].ID)["message"])

	// Nothing moves while wave 1 still runs.
	now := time.Now().UTC().Truncate(time.Second)
	ws, err := st.AdvanceWave(ctx, r.ID, now)
	require.NoError(t, err)
	require.Equal(t, domain.WaveRunning, ws.Status)
	runToDone(t, st, r)

	ws, err = st.AdvanceWave(ctx, r.ID, now)
	require.NoError(t, err)
	require.Equal(t, domain.WaveBaking, ws.Status)
	require.Equal(t, now.Add(10*time.Minute), ws.BakeUntil.UTC())
	promote(t, st)
	c = cause(t, st, tasks["orders"].ID)
	require.Equal(t, "bake", c["waits"])
	require.Equal(t, fmt.Sprintf("wave 2 waits: bake ends %s UTC", now.Add(10*time.Minute).Format("15:04")), c["message"])
	require.Equal(t, now.Add(10*time.Minute).Format(time.RFC3339), c["bake_ends"])
	// A second step changes nothing.
	again, err := st.AdvanceWave(ctx, r.ID, now.Add(time.Minute))
	require.NoError(t, err)
	require.Equal(t, ws.BakeUntil.UTC(), again.BakeUntil.UTC())

	w, strat, run, err := st.BeginWaveChecks(ctx, r.ID, 1, now.Add(10*time.Minute))
	require.NoError(t, err)
	require.True(t, run)
	require.Equal(t, domain.WaveChecking, w.Status)
	require.Equal(t, []string{"billing"}, w.Databases)
	require.Equal(t, "SELECT true", strat.Health.SQL)
	promote(t, st)
	require.Equal(t, "wave 2 waits: health checks are running", cause(t, st, tasks["orders"].ID)["message"])

	failed, err := st.FailWave(ctx, r.ID, 1, "health check failed on billing: the probe answered false",
		[]store.HealthResult{{Check: "sql", Target: "billing", OK: false, Detail: "the probe answered false", At: now}}, now)
	require.NoError(t, err)
	require.True(t, failed)
	sum, err := st.GetRolloutSummary(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, domain.RolloutPaused, sum.Status)
	require.Equal(t, "wave 1: health check failed on billing: the probe answered false", sum.StatusReason)
	p = promote(t, st)
	require.Empty(t, p.Promoted)
	c = cause(t, st, tasks["orders"].ID)
	require.Equal(t, "health_failed", c["waits"])
	require.Equal(t, "wave 2 waits: health check failed on billing: the probe answered false", c["message"])
	evs := events(t, st, fmt.Sprintf("rollout/%d", r.ID))
	require.Len(t, evs, 1)
	require.Equal(t, "rollouts", evs[0]["_topic"])
	require.Equal(t, "rollout.paused", evs[0]["_type"])
	require.Equal(t, "health", evs[0]["cause"])
	require.Equal(t, sum.StatusReason, evs[0]["reason"])

	// Resuming runs the checks again: the wave is CHECKING, and passing opens wave 2.
	_, err = st.SetRolloutStatus(ctx, r.ID, domain.RolloutRunning, domain.RolloutPaused)
	require.NoError(t, err)
	ws, err = st.AdvanceWave(ctx, r.ID, now)
	require.NoError(t, err)
	require.Equal(t, domain.WaveChecking, ws.Status)
	passed, err := st.PassWave(ctx, r.ID, 1, []store.HealthResult{{Check: "sql", Target: "billing", OK: true, At: now}}, now)
	require.NoError(t, err)
	require.True(t, passed)
	passed, err = st.PassWave(ctx, r.ID, 1, nil, now)
	require.NoError(t, err)
	require.False(t, passed, "a retried step changes nothing")
	p = promote(t, st)
	var got []int64
	for _, pr := range p.Promoted {
		got = append(got, pr.ID)
	}
	require.ElementsMatch(t, []int64{tasks["orders"].ID, tasks["users"].ID}, got)
	require.Equal(t, "wave 3 waits: wave 2 is running", cause(t, st, tasks["search"].ID)["message"])
	waves, err := st.ListRolloutWaves(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, []string{domain.WavePassed, domain.WaveRunning, domain.WaveWaiting}, []string{waves[0].Status, waves[1].Status, waves[2].Status})
	var health []store.HealthResult
	require.NoError(t, json.Unmarshal(waves[0].Health, &health))
	require.Len(t, health, 1)
	require.True(t, health[0].OK)
}

// A wave whose task FAILED does not let the next one through: the wave is FAILED and the
// rollout paused, saying so; skipping the task and resuming lets the wave pass.
func TestWaveWithAFailedTaskPausesTheRollout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testenv.Store(t)
	s := &domain.Strategy{Waves: []domain.Wave{{Databases: []string{"a"}}, {Databases: []string{"b"}}}}
	r, tasks := newStrategyRollout(t, st, 10, s, task("a", "DML", "1"), task("b", "DML", "1"))
	promote(t, st)
	claimed, err := st.ClaimTaskRuns(ctx, r.ID, 10)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	_, ok, err := st.FinishTaskRun(ctx, claimed[0].ID, claimed[0].Attempt, domain.TaskRunFailed, "boom", nil)
	require.NoError(t, err)
	require.True(t, ok)
	ws, err := st.AdvanceWave(ctx, r.ID, time.Now())
	require.NoError(t, err)
	require.Equal(t, domain.WaveFailed, ws.Status)
	require.Equal(t, "wave 1 ended with 1 failed task", ws.Reason)
	sum, err := st.GetRolloutSummary(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, domain.RolloutPaused, sum.Status)
	require.Equal(t, "wave 1 ended with 1 failed task", sum.StatusReason)
	promote(t, st)
	require.Equal(t, "wave 2 waits: wave 1 ended with 1 failed task", cause(t, st, tasks["b"].ID)["message"])

	_, err = st.SkipTaskRun(ctx, tasks["a"].ID)
	require.NoError(t, err)
	_, err = st.SetRolloutStatus(ctx, r.ID, domain.RolloutRunning, domain.RolloutPaused)
	require.NoError(t, err)
	ws, err = st.AdvanceWave(ctx, r.ID, time.Now())
	require.NoError(t, err)
	require.Equal(t, domain.WaveRunning, ws.Status, "wave 2 is open: no bake, no checks")
	require.EqualValues(t, 2, ws.Wave)
	require.True(t, ws.Opened)
	p := promote(t, st)
	require.Len(t, p.Promoted, 1)
	require.Equal(t, tasks["b"].ID, p.Promoted[0].ID)
}

// A global freeze stops promotion and claims in every rollout, with a cause naming who froze
// it and why; a rollout's freeze stops only that rollout. Lifting lets the work through, and
// every freeze stays in the history with who lifted it.
func TestFreezesStopNewWorkAndAreKeptAsHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testenv.Store(t)
	r1, runs1 := newRollout(t, st, 10, task("a", "DML", "1"), task("a", "DML", "2"))
	r2, runs2 := newRollout(t, st, 10, task("b", "DML", "1"))
	alice := store.Actor{TokenID: ptr(int64(7)), Label: "token 7 (alice)"}

	promote(t, st) // r1's first and r2's task AVAILABLE
	f, err := st.SetFreeze(ctx, nil, "incident 42", alice)
	require.NoError(t, err)
	_, err = st.SetFreeze(ctx, nil, "again", alice)
	require.ErrorIs(t, err, store.ErrConflict)
	claimed, err := st.ClaimTaskRuns(ctx, r2.ID, 10)
	require.NoError(t, err)
	require.Empty(t, claimed, "nothing is claimed while frozen")

	// r1's second task waits on the version gate behind the first, which is AVAILABLE: the
	// freeze comes first among the causes.
	promote(t, st)
	c := cause(t, st, runs1[1].ID)
	require.Equal(t, "frozen", c["reason"])
	require.Equal(t, "global", c["scope"])
	require.Equal(t, "incident 42", c["why"])
	require.Equal(t, "token 7 (alice)", c["frozen_by"])
	require.Equal(t, "frozen (everything) by token 7 (alice): incident 42", c["message"])

	lifted, err := st.LiftFreeze(ctx, nil, store.Actor{Label: "token 8 (bob)"})
	require.NoError(t, err)
	require.Equal(t, f.ID, lifted.ID)
	require.Equal(t, "token 8 (bob)", *lifted.LiftedBy)
	_, err = st.LiftFreeze(ctx, nil, alice)
	require.ErrorIs(t, err, store.ErrNotFrozen)
	claimed, err = st.ClaimTaskRuns(ctx, r2.ID, 10)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.Equal(t, runs2[0].ID, claimed[0].ID)

	// A rollout's own freeze: r1 stops, r2 does not.
	_, err = st.SetFreeze(ctx, &r1.ID, "tenant billing on hold", alice)
	require.NoError(t, err)
	claimed, err = st.ClaimTaskRuns(ctx, r1.ID, 10)
	require.NoError(t, err)
	require.Empty(t, claimed)
	promote(t, st)
	c = cause(t, st, runs1[1].ID)
	require.Equal(t, "rollout", c["scope"])
	require.Equal(t, "rollout frozen by token 7 (alice): tenant billing on hold", c["message"])
	active, err := st.ActiveFreezes(ctx)
	require.NoError(t, err)
	require.Len(t, active, 1)
	require.Equal(t, r1.ID, *active[0].RolloutID)
	_, err = st.LiftFreeze(ctx, &r1.ID, alice)
	require.NoError(t, err)
	claimed, err = st.ClaimTaskRuns(ctx, r1.ID, 10)
	require.NoError(t, err)
	require.Len(t, claimed, 1)

	hist, err := st.FreezeHistory(ctx, nil, 0, 10)
	require.NoError(t, err)
	require.Len(t, hist, 1)
	require.Equal(t, "incident 42", hist[0].Reason)
	require.NotNil(t, hist[0].LiftedAt)
	hist, err = st.FreezeHistory(ctx, &r1.ID, 0, 10)
	require.NoError(t, err)
	require.Len(t, hist, 1)
	require.Equal(t, []string{"freeze.set", "freeze.lifted"}, typesOf(events(t, st, "freeze/global")))
	require.Equal(t, []string{"freeze.set", "freeze.lifted"}, typesOf(events(t, st, fmt.Sprintf("rollout/%d", r1.ID))))
	_, err = st.SetFreeze(ctx, ptr(int64(987654)), "no such rollout", alice)
	require.True(t, errors.Is(err, store.ErrNotFound), "%v", err)
}

func typesOf(evs []map[string]any) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e["_type"].(string))
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// Outside every window nothing is promoted and the cause names the next opening; the round
// whose clock reaches the opening promotes, and one past the window's end refreshes the
// span to the next window.
func TestWindowGateOpensAtTheWindowAndMovesToTheNext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testenv.Store(t)
	now := time.Now().UTC()
	// A window every day at an hour that is at least an hour ahead.
	opens := now.Truncate(time.Hour).Add(2 * time.Hour)
	s := &domain.Strategy{Windows: []domain.Window{{Cron: fmt.Sprintf("0 %d * * *", opens.Hour()), Duration: "30m"}}}
	r, tasks := newStrategyRollout(t, st, 10, s, task("a", "DML", "1"), task("b", "DML", "1"))
	got, err := st.GetRollout(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, opens, got.WindowStart.UTC())
	require.Equal(t, opens.Add(30*time.Minute), got.WindowEnd.UTC())

	p := promote(t, st)
	require.Empty(t, p.Promoted)
	require.NotNil(t, p.NextRunAt)
	require.Equal(t, opens, p.NextRunAt.UTC(), "the promoter's next round is at the opening")
	require.Equal(t, "window opens", p.NextWhy)
	c := cause(t, st, tasks["a"].ID)
	require.Equal(t, "window", c["reason"])
	require.Equal(t, opens.Format(time.RFC3339), c["opens_at"])
	require.Equal(t, "outside every window; the next opens "+opens.Format("2006-01-02 15:04")+" UTC", c["message"])

	p, err = st.PromoteRoundAsOf(ctx, opens.Add(-time.Millisecond))
	require.NoError(t, err)
	require.Empty(t, p.Promoted)
	p, err = st.PromoteRoundAsOf(ctx, opens)
	require.NoError(t, err)
	require.Len(t, p.Promoted, 2)

	// Past the end, a rollout still holding PENDING work moves to the next day's window.
	r2, tasks2 := newStrategyRollout(t, st, 10, s, task("c", "DML", "1"))
	_, err = st.PromoteRoundAsOf(ctx, opens.Add(31*time.Minute))
	require.NoError(t, err)
	got, err = st.GetRollout(ctx, r2.ID)
	require.NoError(t, err)
	require.Equal(t, opens.Add(24*time.Hour), got.WindowStart.UTC())
	require.Equal(t, domain.TaskRunPending, statusOf(t, st, tasks2["c"].ID).Status)
}

// The rate gate: at most per_minute tasks promoted in any minute, by the promotion clock;
// the exponential rate grows by its factor each after_succeeded tasks DONE.
func TestRateGateBoundsPromotionsPerMinute(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testenv.Store(t)
	s := &domain.Strategy{Rate: &domain.Rate{PerMinute: intp(8), Exponential: &domain.ExponentialRate{BasePerMinute: 2, Factor: 2, AfterSucceeded: 2}}}
	var ts []store.NewTaskRun
	for i := range 20 {
		ts = append(ts, task(fmt.Sprintf("db%02d", i), "DML", "1"))
	}
	r, _ := newStrategyRollout(t, st, 100, s, ts...)
	t0 := time.Now().UTC().Add(time.Hour).Truncate(time.Microsecond) // ahead of the database's clock: the as-of clock rules
	round := func(at time.Time) int {
		p, err := st.PromoteRoundAsOf(ctx, at)
		require.NoError(t, err)
		return len(p.Promoted)
	}
	require.Equal(t, 2, round(t0), "the base rate")
	pending, err := st.ListTaskRuns(ctx, r.ID, 0, []string{"PENDING"}, 1)
	require.NoError(t, err)
	c := cause(t, st, pending[0].ID)
	require.Equal(t, "rate", c["reason"])
	require.EqualValues(t, 2, c["per_minute"])
	runToDone(t, st, r)
	require.Equal(t, 2, round(t0.Add(59*time.Second)), "two succeeded: 4 a minute, 2 of them taken at t0")
	runToDone(t, st, r)
	require.Equal(t, 6, round(t0.Add(61*time.Second)), "four succeeded: 8 a minute (the cap); t0's 2 left the minute, not the 2 of t0+59s")
	p, err := st.PromoteRoundAsOf(ctx, t0.Add(62*time.Second))
	require.NoError(t, err)
	require.Empty(t, p.Promoted)
	require.Equal(t, t0.Add(119*time.Second), p.NextRunAt.UTC(), "the next round when the oldest promotion of the minute leaves it")
	require.Equal(t, "rate", p.NextWhy)
}

// The rate the gates compute in SQL (rollout_rate): floor(base · factor^⌊succeeded /
// after_succeeded⌋), the exponent capped at 100, capped by per_minute; no rate at all is
// unbounded (2³¹−1). Each figure worked by hand.
func TestRolloutRateIsTheDocumentedRule(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	for _, c := range []struct {
		rate      domain.Rate
		succeeded int64
		want      int64
	}{
		{domain.Rate{PerMinute: intp(30)}, 0, 30},
		{domain.Rate{PerMinute: intp(30)}, 1000, 30},
		{domain.Rate{Exponential: &domain.ExponentialRate{BasePerMinute: 5, Factor: 2, AfterSucceeded: 10}}, 0, 5},
		{domain.Rate{Exponential: &domain.ExponentialRate{BasePerMinute: 5, Factor: 2, AfterSucceeded: 10}}, 9, 5},
		{domain.Rate{Exponential: &domain.ExponentialRate{BasePerMinute: 5, Factor: 2, AfterSucceeded: 10}}, 10, 10},
		{domain.Rate{Exponential: &domain.ExponentialRate{BasePerMinute: 5, Factor: 2, AfterSucceeded: 10}}, 41, 80},
		{domain.Rate{PerMinute: intp(100), Exponential: &domain.ExponentialRate{BasePerMinute: 3, Factor: 1.5, AfterSucceeded: 4}}, 4, 4},  // 4.5
		{domain.Rate{PerMinute: intp(100), Exponential: &domain.ExponentialRate{BasePerMinute: 3, Factor: 1.5, AfterSucceeded: 4}}, 11, 6}, // 6.75
		{domain.Rate{PerMinute: intp(100), Exponential: &domain.ExponentialRate{BasePerMinute: 3, Factor: 1.5, AfterSucceeded: 4}}, 400, 100},
		{domain.Rate{Exponential: &domain.ExponentialRate{BasePerMinute: 1, Factor: 5, AfterSucceeded: 1}}, 3, 125},
		{domain.Rate{Exponential: &domain.ExponentialRate{BasePerMinute: 1, Factor: 5, AfterSucceeded: 1}}, 100000, 2147483647},
		{domain.Rate{Exponential: &domain.ExponentialRate{BasePerMinute: 1, Factor: 1.0001, AfterSucceeded: 1}}, 100000, 1}, // 1.0001^100
	} {
		body, err := json.Marshal(c.rate)
		require.NoError(t, err)
		var got int64
		require.NoError(t, st.Pool.QueryRow(context.Background(), `SELECT rollout_rate($1, $2)`, body, c.succeeded).Scan(&got))
		require.Equal(t, c.want, got, "rate %s after %d succeeded", body, c.succeeded)
	}
}

// The abort threshold trips once enough tasks finished and too many failed: pause (the
// default) keeps the running tasks going and nothing new starts; the reason is recorded and
// emitted. A resume counts afresh. With action cancel the tasks not started are canceled.
func TestAbortThresholdPausesOrCancelsTheRollout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testenv.Store(t)
	s := &domain.Strategy{Abort: &domain.RolloutAbort{MinFinished: 3, FailedPercent: 50}}
	var ts []store.NewTaskRun
	for i := range 6 {
		ts = append(ts, task(fmt.Sprintf("db%d", i), "DML", "1"))
	}
	r, _ := newStrategyRollout(t, st, 4, s, ts...)
	require.Equal(t, domain.AbortPause, s.Abort.Action, "pause by default")
	promote(t, st)
	claimed, err := st.ClaimTaskRuns(ctx, r.ID, 10)
	require.NoError(t, err)
	require.Len(t, claimed, 4)
	finish := func(c store.TaskRun, status domain.TaskRunStatus) {
		_, err := st.FinishTaskRuns(ctx, []store.FinishedTaskRun{{ID: c.ID, Attempt: c.Attempt, TaskRunResult: domain.TaskRunResult{Status: status}}})
		require.NoError(t, err)
	}
	status := func(id int64) store.RolloutSummary {
		sum, err := st.GetRolloutSummary(ctx, id)
		require.NoError(t, err)
		return sum
	}
	finish(claimed[0], domain.TaskRunFailed)
	finish(claimed[1], domain.TaskRunFailed)
	require.Equal(t, domain.RolloutRunning, status(r.ID).Status, "2 finished: fewer than min_finished")
	finish(claimed[2], domain.TaskRunDone)
	sum := status(r.ID)
	require.Equal(t, domain.RolloutPaused, sum.Status)
	require.Equal(t, "abort threshold: 2 of 3 finished tasks failed (66.67%, more than 50%, at least 3 finished)", sum.StatusReason)
	evs := events(t, st, fmt.Sprintf("rollout/%d", r.ID))
	require.Len(t, evs, 1)
	require.Equal(t, "rollout.paused", evs[0]["_type"])
	require.Equal(t, "abort", evs[0]["cause"])
	require.Equal(t, sum.StatusReason, evs[0]["reason"])
	// Nothing new starts; the running task finishes.
	p := promote(t, st)
	require.Empty(t, p.Promoted)
	finish(claimed[3], domain.TaskRunDone)
	require.Equal(t, domain.TaskRunDone, statusOf(t, st, claimed[3].ID).Status)

	// After a resume the count starts again: one more failure alone does not trip it.
	_, err = st.SetRolloutStatus(ctx, r.ID, domain.RolloutRunning, domain.RolloutPaused)
	require.NoError(t, err)
	p = promote(t, st)
	require.Len(t, p.Promoted, 2)
	claimed, err = st.ClaimTaskRuns(ctx, r.ID, 10)
	require.NoError(t, err)
	finish(claimed[0], domain.TaskRunFailed)
	require.Equal(t, domain.RolloutRunning, status(r.ID).Status)
	require.Empty(t, status(r.ID).StatusReason, "a resume clears the reason")

	// Cancel: the first failure is enough; what has not started is canceled.
	c := &domain.Strategy{Abort: &domain.RolloutAbort{MinFinished: 1, FailedPercent: 0, Action: domain.AbortCancel}}
	r2, tasks := newStrategyRollout(t, st, 1, c, task("x", "DML", "1"), task("y", "DML", "1"), task("z", "DML", "1"))
	promote(t, st)
	claimed, err = st.ClaimTaskRuns(ctx, r2.ID, 10)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	_, ok, err := st.FinishTaskRun(ctx, claimed[0].ID, claimed[0].Attempt, domain.TaskRunFailed, "boom", nil)
	require.NoError(t, err)
	require.True(t, ok)
	sum = status(r2.ID)
	require.Equal(t, domain.RolloutCanceled, sum.Status)
	require.Contains(t, sum.StatusReason, "abort threshold: 1 of 1 finished tasks failed")
	require.Equal(t, domain.TaskRunCanceled, statusOf(t, st, tasks["y"].ID).Status)
	require.Equal(t, domain.TaskRunCanceled, statusOf(t, st, tasks["z"].ID).Status)
	require.Equal(t, []string{"rollout.canceled"}, typesOf(events(t, st, fmt.Sprintf("rollout/%d", r2.ID))))
}
