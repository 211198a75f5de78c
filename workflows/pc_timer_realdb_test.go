package workflows_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// A PC's timer watches every slot of its PC: set one alarm —
// a second before the first attempt's deadline, as the API tells it — it times out each
// attempt in flight on the PC at its own deadline, including one sent later in another
// slot that it was never told of, with the real activities on a real PostgreSQL.
func TestPCTimerTimesOutEveryAttemptOfItsPCAtItsDeadline(t *testing.T) {
	ctx := context.Background()
	st := testenv.Store(t)
	acts := &activities.DeviceActivities{Store: st, Settings: domain.DeviceSettings{MaxAttempts: 1, Timeout: 20 * time.Minute}}
	_, err := st.CreatePC(ctx, "pc1", 2)
	require.NoError(t, err)
	for _, d := range []string{"pc1-d0", "pc1-d1"} {
		_, _, err = st.CreateDevice(ctx, "pc1", d)
		require.NoError(t, err)
	}
	_, err = st.CreateDeviceTask(ctx, store.NewDeviceTask{})
	require.NoError(t, err)
	_, err = acts.Advance(ctx)
	require.NoError(t, err)
	first, err := st.Claim(ctx, "pc1", 1)
	require.NoError(t, err)
	require.Len(t, first, 1)
	second, err := st.Claim(ctx, "pc1", 1)
	require.NoError(t, err)
	require.Len(t, second, 1)
	require.NotEqual(t, first[0].Slot, second[0].Slot)
	sentAt := first[0].SentAt.UTC()
	d1, d2 := first[0].TimeoutAt.UTC(), second[0].TimeoutAt.UTC()
	require.True(t, d2.After(d1))

	env, watch := pcTimerEnv(acts)
	env.SetStartTime(sentAt)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(workflows.SignalPCTimerAlarm, workflows.PCTimerAlarm{
			ExecutionID: first[0].ID, Attempt: first[0].Attempt, At: d1.Add(-time.Second),
		})
	}, time.Second)
	env.RegisterDelayedCallback(env.CancelWorkflow, 30*time.Minute)
	env.ExecuteWorkflow(workflows.PCTimerWorkflow, workflows.PCTimerInput{
		PC: "pc1", DispatcherID: "d", IdlePoll: 24 * time.Hour,
	})
	require.True(t, env.IsWorkflowCompleted())

	checks := watch.startsOf("CheckPCTimer")
	require.GreaterOrEqual(t, len(checks), 3, "woke at the told alarm, then at each deadline")
	require.Equal(t, d1.Add(-time.Second), checks[0], "the told alarm")
	require.Equal(t, d1, checks[1], "the first attempt's deadline, found in SQL")
	require.Equal(t, d2, checks[2], "the second attempt's deadline, never told")
	for _, c := range []store.ClaimedCommand{first[0], second[0]} {
		td, err := st.GetDeviceExecution(ctx, c.ID)
		require.NoError(t, err)
		require.Equal(t, domain.ExecutionFailedFinal, td.Status, "execution %d", c.ID)
		evs, err := st.DeviceExecutionEvents(ctx, c.ID)
		require.NoError(t, err)
		require.Equal(t, domain.EvTimeout, evs[2].Type)
	}
}
