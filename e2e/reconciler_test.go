package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/worker"
)

// TestReconcilerStartsMissingWorkflowsAndStopsOrphans runs one reconcile round against the
// real dev server: a schedule row without a workflow gets one, and a schedule workflow
// whose row is gone is stopped.
func TestReconcilerStartsMissingWorkflowsAndStopsOrphans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testenv.Store(t)
	// A namespace of its own: the round stops every schedule workflow in its namespace whose
	// row is not in this test's database, which in "default" are the other tests' schedules.
	tc, err := client.Dial(client.Options{HostPort: testenv.TemporalAddress(t), Namespace: newNamespace(t)})
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	queue := "reconcile-" + time.Now().Format("150405.000000")
	w, err := worker.New(worker.Deps{Config: config.Config{TaskQueue: queue}, Store: st, Temporal: tc})
	require.NoError(t, err)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	s := &starter.Starter{Client: tc, TaskQueue: queue}

	newRow := func(name string) store.Schedule {
		row, err := st.CreateSchedule(ctx, store.NewSchedule{Name: name, Spec: json.RawMessage(`{"cron":"0 0 1 1 *","timezone":"UTC"}`),
			Action: json.RawMessage(`{"kind":"event","topic":"t","type":"x"}`), Overlap: "skip"})
		require.NoError(t, err)
		return row
	}
	// A row whose workflow never started (say the API crashed between insert and start).
	lonely := newRow("reconcile-lonely-" + queue)
	// A workflow whose row was deleted behind the API's back. It is started on a queue no
	// worker polls: a schedule workflow that loads its row and finds it gone ends itself,
	// and on the real server it would do so before visibility lists it as running.
	orphan := newRow("reconcile-orphan-" + queue)
	idle := &starter.Starter{Client: tc, TaskQueue: queue + "-unpolled"}
	require.NoError(t, idle.StartSchedule(ctx, orphan.ID, orphan.Name, ""))
	_, _, err = st.DeleteSchedule(ctx, orphan.Name)
	require.NoError(t, err)
	// Visibility is eventually consistent: wait until the orphan is listed as running.
	require.Eventually(t, func() bool {
		names, err := s.ListRunningScheduleNames(ctx)
		require.NoError(t, err)
		for _, n := range names {
			if n == orphan.Name {
				return true
			}
		}
		return false
	}, 20*time.Second, 200*time.Millisecond)

	r := &activities.ReconcileActivities{Store: st, Starter: s}
	actEnv := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
	actEnv.RegisterActivity(r)
	val, err := actEnv.ExecuteActivity(r.ReconcileSchedules)
	require.NoError(t, err)
	var res activities.ReconcileResult
	require.NoError(t, val.Get(&res))
	require.GreaterOrEqual(t, res.Started, 1)
	require.GreaterOrEqual(t, res.Stopped, 1)

	d, err := tc.DescribeWorkflowExecution(ctx, "schedule/"+lonely.Name, "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, d.WorkflowExecutionInfo.Status)
	d, err = tc.DescribeWorkflowExecution(ctx, "schedule/"+orphan.Name, "")
	require.NoError(t, err)
	require.NotEqual(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, d.WorkflowExecutionInfo.Status)
	var _ sdkworker.Worker = w
}
