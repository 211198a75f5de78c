package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

func health(t *testing.T, st *store.Store) store.EngineHealth {
	t.Helper()
	h, err := st.ReadEngineHealth(context.Background())
	require.NoError(t, err)
	return h
}

func counts(cs []store.StatusCount) map[string]int64 {
	out := map[string]int64{}
	for _, c := range cs {
		out[c.Status] = c.N
	}
	return out
}

// TestEngineHealthFollowsTheEngine: the figures the alerts watch move as the engine moves
// them. A worker that starts is alive, and counts no more once its beats stop for longer
// than the grace; a device attempt the timeout takes counts; a failure that cannot be
// retried puts its device in error; a workflow run that fails enters the dead letter and a
// redrive takes it out. Every status and cause is there from the start, at 0.
func TestEngineHealthFollowsTheEngine(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	h := health(t, st)
	require.Equal(t, store.EngineHealth{
		Devices:        []store.StatusCount{{Status: "online"}, {Status: "offline"}, {Status: "error"}},
		PausedRollouts: []store.StatusCount{{Status: "health"}, {Status: "tasks"}, {Status: "other"}},
	}, h, "an empty deployment: every series at 0")

	// Workers.
	require.NoError(t, st.StartLiveness(ctx, "w1"))
	require.NoError(t, st.StartLiveness(ctx, "w2"))
	require.EqualValues(t, 2, health(t, st).WorkersAlive)
	_, err := st.Pool.Exec(ctx, `UPDATE worker_liveness SET started_at = now() - interval '1 hour',
		beat_at = now() - make_interval(secs => $1) WHERE worker_id = 'w1'`, (store.LivenessGrace + time.Second).Seconds())
	require.NoError(t, err)
	require.EqualValues(t, 1, health(t, st).WorkersAlive, "w1 stopped beating longer than the grace ago")

	// Devices: one attempt times out (and is retried), then a failure that cannot be retried.
	devFarm(t, st, "pc1", 5, 2)
	activate(t, st, store.NewDeviceTask{})
	cmds := claimed(t, st, "pc1", 5)
	require.Len(t, cmds, 2)
	require.Equal(t, map[string]int64{"online": 2, "offline": 0, "error": 0}, counts(health(t, st).Devices))
	out, err := st.TimeoutAttempt(ctx, cmds[0].ID, cmds[0].Attempt)
	require.NoError(t, err)
	require.Equal(t, domain.ExecutionRetryScheduled, out.Status)
	h = health(t, st)
	require.EqualValues(t, 1, h.DeviceTimeouts)
	require.Equal(t, map[string]int64{"online": 2, "offline": 0, "error": 0}, counts(h.Devices), "a timeout with attempts left is retried")
	out, err = st.ReportResult(ctx, cmds[1].ID, store.Result{Error: "unsupported model", NotRetryable: true})
	require.NoError(t, err)
	require.Equal(t, domain.ExecutionFailedFinal, out.Status)
	h = health(t, st)
	require.Equal(t, map[string]int64{"online": 1, "offline": 0, "error": 1}, counts(h.Devices))
	require.EqualValues(t, 1, h.DeviceTimeouts)

	// The dead letter.
	sched, err := st.CreateSchedule(ctx, store.NewSchedule{Name: "report", Spec: json.RawMessage(`{"cron":"0 3 * * *","timezone":"UTC"}`),
		Action:  json.RawMessage(`{"kind":"workflow","workflow_type":"Report","task_queue":"reports"}`),
		Overlap: domain.OverlapSkip})
	require.NoError(t, err)
	tick := time.Date(2026, 11, 1, 3, 0, 0, 0, time.UTC)
	run, created, err := st.RecordFire(ctx, store.Fire{ScheduleID: sched.ID, ScheduledAt: tick, FiredAt: tick, Trigger: domain.TriggerScheduled,
		Status: domain.RunRunning, IdempotencyKey: domain.TickKey(sched.ID, tick), WorkflowID: "schedule/report/run/" + tick.Format(time.RFC3339)})
	require.NoError(t, err)
	require.True(t, created)
	require.Zero(t, health(t, st).DeadLetter, "a running run is not dead")
	require.NoError(t, st.FinishRun(ctx, run.ID, domain.RunFailed, "the report workflow failed"))
	require.EqualValues(t, 1, health(t, st).DeadLetter)
	_, err = st.RedriveRun(ctx, run.ID)
	require.NoError(t, err)
	require.Zero(t, health(t, st).DeadLetter, "a redriven run left the dead letter")
}

// TestEngineHealthCountsRolloutsPausedByTheirHealthChecks: a wave whose health checks fail
// pauses its rollout, counted under "health"; one paused by an operator under "other";
// resumed, the rollout counts no more.
func TestEngineHealthCountsRolloutsPausedByTheirHealthChecks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testenv.Store(t)
	s := &domain.Strategy{
		Waves:  []domain.Wave{{Databases: []string{"billing"}}, {Percent: intp(100)}},
		Bake:   "10m",
		Health: &domain.HealthCheck{SQL: "SELECT true"},
	}
	r, _ := newStrategyRollout(t, st, 10, s, task("billing", "DDL", "1"), task("orders", "DDL", "1"))
	promote(t, st)
	runToDone(t, st, r)
	now := time.Now().UTC().Truncate(time.Second)
	_, err := st.AdvanceWave(ctx, r.ID, now)
	require.NoError(t, err)
	_, _, run, err := st.BeginWaveChecks(ctx, r.ID, 1, now.Add(10*time.Minute))
	require.NoError(t, err)
	require.True(t, run)
	require.Equal(t, map[string]int64{"health": 0, "tasks": 0, "other": 0}, counts(health(t, st).PausedRollouts))
	failed, err := st.FailWave(ctx, r.ID, 1, "health check failed on billing: the probe answered false", nil, now)
	require.NoError(t, err)
	require.True(t, failed)
	require.Equal(t, map[string]int64{"health": 1, "tasks": 0, "other": 0}, counts(health(t, st).PausedRollouts))

	plain, _ := newRollout(t, st, 1, task("users", "DML", "1"))
	_, err = st.SetRolloutStatus(ctx, plain.ID, domain.RolloutPaused, domain.RolloutRunning)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"health": 1, "tasks": 0, "other": 1}, counts(health(t, st).PausedRollouts))
	_, err = st.SetRolloutStatus(ctx, r.ID, domain.RolloutRunning, domain.RolloutPaused)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"health": 0, "tasks": 0, "other": 1}, counts(health(t, st).PausedRollouts))
}
