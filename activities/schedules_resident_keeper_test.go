package activities_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

// The resident keeper (TICKGATE_SCHEDULES_RESIDENT) wakes the schedules at rest whose
// workflow is not open on the task queue — one from before the setting was turned on, one
// whose workflow was terminated — once, and leaves alone the one whose workflow is open, one
// a run holds, a completed one and one just created (its creation wakes it).
func TestResidentKeeperWakesSchedulesAtRestWithoutAWorkflow(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	tc := testenv.TemporalClient(t)
	ctx := context.Background()
	suffix := fmt.Sprint(time.Now().UnixNano())
	queue := "keeper-" + suffix
	name := func(s string) string { return "keep-" + s + "-" + suffix }
	create := func(s string, age time.Duration, set string) {
		row, err := st.CreateSchedule(ctx, store.NewSchedule{Name: name(s), Spec: json.RawMessage(`{"cron":"0 * * * *"}`),
			Action: json.RawMessage(`{"kind":"event","topic":"t","type":"x"}`), Overlap: "skip"})
		require.NoError(t, err)
		_, err = st.Pool.Exec(ctx, "UPDATE schedules SET created_at = now() - $2::interval, plan_at = now() + interval '1 hour', plan_action = 'arm' "+set+" WHERE id = $1",
			row.ID, age.String())
		require.NoError(t, err)
	}
	create("open", time.Hour, "")
	create("missing", time.Hour, "")
	create("new", 0, "")
	create("owned", time.Hour, ", owner = 'a-run'")
	create("done", time.Hour, ", completed_at = now()")

	// The open one's workflow: started on a queue no worker polls, it stays open.
	_, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "schedule/" + name("open"), TaskQueue: queue}, "ScheduleWorkflow", map[string]any{"Name": name("open")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tc.TerminateWorkflow(context.Background(), "schedule/"+name("open"), "", "test over") })
	require.Eventually(t, func() bool {
		resp, err := tc.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{
			Query: fmt.Sprintf("WorkflowType = 'ScheduleWorkflow' AND ExecutionStatus = 'Running' AND TaskQueue = '%s'", queue)})
		return err == nil && resp.GetCount() == 1
	}, 30*time.Second, 100*time.Millisecond, "visibility lists the open workflow")

	keeper := &activities.ResidentKeeper{Acts: &activities.ScheduleActivities{Store: st, Temporal: tc, TaskQueue: queue}}
	woken, err := keeper.Keep(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), woken)
	plans := map[string]string{}
	for _, s := range []string{"open", "missing", "new", "owned", "done"} {
		row, err := st.GetSchedule(ctx, name(s))
		require.NoError(t, err)
		plans[s] = *row.PlanAction
		if s == "missing" {
			require.False(t, row.PlanAt.After(time.Now()), "woken at once")
		}
	}
	require.Equal(t, map[string]string{"open": "arm", "missing": "wake", "new": "arm", "owned": "arm", "done": "arm"}, plans)

	woken, err = keeper.Keep(ctx)
	require.NoError(t, err)
	require.Zero(t, woken, "a wake is planned once")
}
