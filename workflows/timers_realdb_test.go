package workflows_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/internal/version"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// The design card's two timers — the device timeout 20 minutes after SENT and a task's
// run_at — proven in the time-skipping environment with nothing mocked: the real activities
// on a real PostgreSQL, the deadline and the run_at gate taken from what SQL stored.
//
// PostgreSQL's now() is real time while the workflow's clock skips. Each test therefore
// starts the workflow clock at a real instant (the database's SENT; the real time the
// rollout was created), so both clocks agree at the start and the workflow's timers alone
// carry time forward.

// timeWatch records the workflow time at which activities (or local activities) start.
type timeWatch struct {
	env *testsuite.TestWorkflowEnvironment
	mu  sync.Mutex
	at  map[string][]time.Time
}

// pcTimerEnv is a time-skipping environment running PCTimerWorkflow on the real
// device activities acts, with the dispatcher's nudge accepted and activity starts watched.
func pcTimerEnv(acts *activities.DeviceActivities) (*testsuite.TestWorkflowEnvironment, *timeWatch) {
	var ts testsuite.WorkflowTestSuite
	ts.SetLogger(testLogger())
	env := ts.NewTestWorkflowEnvironment()
	env.SetTestTimeout(time.Minute)
	env.RegisterWorkflow(workflows.PCTimerWorkflow)
	env.RegisterActivity(acts)
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, mock.Anything, workflows.SignalDispatcherCheck, mock.Anything).Return(nil).Maybe()
	return env, watchActivities(env)
}

func watchActivities(env *testsuite.TestWorkflowEnvironment) *timeWatch {
	w := &timeWatch{env: env, at: map[string][]time.Time{}}
	record := func(name string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.at[name] = append(w.at[name], env.Now().UTC())
	}
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		record(info.ActivityType.Name)
	})
	env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		record(info.ActivityType.Name)
	})
	return w
}

func (w *timeWatch) startsOf(name string) []time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Time(nil), w.at[name]...)
}

// With TICKGATE_DEVICE_TIMEOUT unset, the worker's configuration gives the 20-minute
// default; the dispatcher's step copies it onto the task it activates; the agent's claim
// stamps SENT and the deadline in SQL; the PC's timer, told an alarm at the deadline (the
// claimed row's timeout_at), times the attempt out at SENT +
// 20m of workflow time — not before — and the stored timeout_at is that instant.
func TestPCTimerTimesOutAtSentPlusTheConfiguredDefault(t *testing.T) {
	t.Setenv("TICKGATE_DEVICE_TIMEOUT", "")
	require.NoError(t, os.Unsetenv("TICKGATE_DEVICE_TIMEOUT"))
	// One attempt, so the timeout is final and the workflow ends by itself.
	t.Setenv("TICKGATE_DEVICE_MAX_ATTEMPTS", "1")
	cfg, err := config.FromEnv()
	require.NoError(t, err)

	ctx := context.Background()
	st := testenv.Store(t)
	// Wired as worker/devices.go wires them.
	acts := &activities.DeviceActivities{Store: st, Settings: cfg.DeviceSettings()}
	_, err = st.CreatePC(ctx, "pc1", 20)
	require.NoError(t, err)
	_, _, err = st.CreateDevice(ctx, "pc1", "pc1-d0")
	require.NoError(t, err)
	task, err := st.CreateDeviceTask(ctx, store.NewDeviceTask{})
	require.NoError(t, err)
	adv, err := acts.Advance(ctx) // the dispatcher's step: activate with the configuration in force
	require.NoError(t, err)
	require.Equal(t, task.ID, adv.ActiveTaskID)
	cmds, err := st.Claim(ctx, "pc1", 1) // the agent's pull
	require.NoError(t, err)
	require.Len(t, cmds, 1)
	cmd := cmds[0]
	require.NotNil(t, cmd.SentAt)
	require.NotNil(t, cmd.TimeoutAt)
	sentAt := cmd.SentAt.UTC()

	env, watch := pcTimerEnv(acts)
	// The PC's timer is already waiting 7 minutes before the send (a deadline counted
	// from the workflow's start would show as 13 minutes after SENT); the deadline arrives
	// when the workflow clock reaches the database's SENT.
	env.SetStartTime(sentAt.Add(-7 * time.Minute))
	env.RegisterDelayedCallback(func() {
		require.True(t, env.Now().Equal(sentAt))
		env.SignalWorkflow(workflows.SignalPCTimerAlarm, workflows.PCTimerAlarm{ExecutionID: cmd.ID, Attempt: cmd.Attempt, At: cmd.TimeoutAt.UTC()})
	}, 7*time.Minute)
	env.RegisterDelayedCallback(func() {
		td, err := st.GetDeviceExecution(ctx, cmd.ID)
		require.NoError(t, err)
		require.Equal(t, domain.ExecutionSent, td.Status, "one second before the deadline the attempt is still out")
	}, 7*time.Minute+20*time.Minute-time.Second)
	env.RegisterDelayedCallback(env.CancelWorkflow, 7*time.Minute+30*time.Minute)
	env.ExecuteWorkflow(workflows.PCTimerWorkflow, workflows.PCTimerInput{
		PC: "pc1", DispatcherID: "d", IdlePoll: 24 * time.Hour,
	})
	require.True(t, env.IsWorkflowCompleted())

	timeouts := watch.startsOf("CheckPCTimer")
	require.Len(t, timeouts, 1)
	require.Equal(t, sentAt.Add(20*time.Minute), timeouts[0].UTC(), "timed out at SENT + 20m of workflow time")
	td, err := st.GetDeviceExecution(ctx, cmd.ID)
	require.NoError(t, err)
	require.Equal(t, sentAt, td.SentAt.UTC())
	require.Equal(t, timeouts[0].UTC(), td.TimeoutAt.UTC(), "the stored deadline is when it timed out")
	require.Equal(t, domain.ExecutionFailedFinal, td.Status)
	evs, err := st.DeviceExecutionEvents(ctx, cmd.ID)
	require.NoError(t, err)
	var got []string
	for _, e := range evs {
		got = append(got, fmt.Sprintf("%s#%d", e.Type, e.Attempt))
	}
	require.Equal(t, []string{"CREATED#1", "SENT#1", "TIMEOUT#1", "FAILED_FINAL#1"}, got)
}

// A task whose run_at lies ten minutes ahead stays PENDING, waiting on run_at, through the
// promoter's safety polls; the promoter's durable timer wakes it at run_at and the real SQL
// round promotes the task then. The round reads run_at against the later of the database's
// clock and the promoter's workflow time (activities.PromoteInput.AsOf), so here — where the
// database's clock stays seconds after the start while the workflow's skips — only run_at
// passing in workflow time can promote it.
func TestRunAtPassingPromotesThroughTheRealSQLRound(t *testing.T) {
	ctx := context.Background()
	st := testenv.Store(t)
	start := time.Now().UTC().Truncate(time.Second)
	// Between two safety polls (every 30 s), so the run_at timer and no poll promotes it.
	runAt := start.Add(10*time.Minute + 10*time.Second)
	r, err := st.CreateRollout(ctx, "run-at", 5, []store.NewTaskRun{{
		Database: "db1", Type: "DML", Version: "1", VersionKey: version.MustKey("1"), RunAt: &runAt, Executor: "noop",
	}})
	require.NoError(t, err)
	runs, err := st.ListTaskRuns(ctx, r.ID, 0, nil, 10)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	id := runs[0].ID

	var ts testsuite.WorkflowTestSuite
	ts.SetLogger(testLogger())
	env := ts.NewTestWorkflowEnvironment()
	env.SetTestTimeout(time.Minute)
	env.RegisterWorkflowWithOptions(workflows.PromoterWorkflow, workflow.RegisterOptions{Name: workflows.PromoterWorkflowType})
	env.RegisterActivity(&activities.RolloutActivities{Store: st}) // no waker: the task stays AVAILABLE
	watch := watchActivities(env)
	env.SetStartTime(start)
	env.RegisterDelayedCallback(func() {
		tr, err := st.GetTaskRun(ctx, id)
		require.NoError(t, err)
		require.Equal(t, domain.TaskRunPending, tr.Status, "before run_at")
		var cause struct {
			Reason string `json:"reason"`
			RunAt  string `json:"run_at"`
		}
		require.NoError(t, json.Unmarshal(tr.WaitingCause, &cause), "waiting cause %s", tr.WaitingCause)
		require.Equal(t, "run_at", cause.Reason)
		at, err := time.Parse(time.RFC3339Nano, cause.RunAt)
		require.NoError(t, err)
		require.True(t, at.Equal(runAt), "cause names run_at %s, got %s", runAt, cause.RunAt)
	}, runAt.Sub(start)-time.Second)
	env.RegisterDelayedCallback(func() {
		tr, err := st.GetTaskRun(ctx, id)
		require.NoError(t, err)
		require.Equal(t, domain.TaskRunAvailable, tr.Status, "after run_at")
		require.Nil(t, tr.WaitingCause)
		require.NotNil(t, tr.PromotedAt)
		var dbReachedRunAt bool
		require.NoError(t, st.Pool.QueryRow(ctx, "SELECT now() >= $1", runAt).Scan(&dbReachedRunAt))
		require.False(t, dbReachedRunAt, "the database's own clock has not reached run_at: the workflow's time promoted it")
		env.CancelWorkflow()
	}, runAt.Sub(start)+time.Second)
	env.ExecuteWorkflow(workflows.PromoterWorkflowType)
	require.True(t, env.IsWorkflowCompleted())

	rounds := watch.startsOf("PromoteRollouts")
	require.NotEmpty(t, rounds)
	require.True(t, rounds[0].Equal(start), "a round at the start")
	require.Contains(t, rounds, runAt, "a round woken by the run_at timer, at run_at exactly")
	// Every round before run_at left it PENDING (checked at run_at − 1s); the one at run_at
	// promoted it; at most the next safety poll followed.
	after := 0
	for _, at := range rounds {
		if at.After(runAt) {
			after++
		}
	}
	require.LessOrEqual(t, after, 1, "rounds after run_at: %v", rounds)
}
