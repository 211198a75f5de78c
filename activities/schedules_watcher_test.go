package activities_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/internal/testing/testenv"
)

func quickTarget(ctx workflow.Context) error { return workflow.Sleep(ctx, 100*time.Millisecond) }

// TestRunWatcherRecordsTheOutcomeOfARunAtRest: a run in flight of a schedule at rest has
// no schedule workflow waiting for it; a run watcher leases it, waits for its target to
// close and records the outcome (and the schedule's newest success). A run whose target
// was never started (the planner's start was lost) is started, late, by the watcher, once.
func TestRunWatcherRecordsTheOutcomeOfARunAtRest(t *testing.T) {
	t.Parallel()
	e := newPlannerEnv(t)
	tc := testenv.TemporalClient(t)
	ctx := context.Background()
	queue := fmt.Sprintf("watched-%d", time.Now().UnixNano())
	w := sdkworker.New(tc, queue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(quickTarget, workflow.RegisterOptions{Name: "Quick"})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	name := fmt.Sprintf("watched-%d", time.Now().UnixNano())
	row := e.create(name, schedulespec.Spec{Cron: "0 0 1 1 *"}, domain.Action{Kind: domain.ActionWorkflow, WorkflowType: "Quick", TaskQueue: queue},
		api.SchedulePolicies{}, time.Now().UTC())
	tick := time.Now().UTC().Truncate(time.Second)
	started := domain.RunWorkflowID(name, "started")
	lost := domain.RunWorkflowID(name, "lost")
	_, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: started, TaskQueue: queue}, "Quick")
	require.NoError(t, err)
	for _, id := range []string{started, lost} {
		_, err := e.st.Pool.Exec(ctx, `INSERT INTO schedule_runs (schedule_id, scheduled_at, fired_at, trigger, status, idempotency_key, workflow_id)
			VALUES ($1, $2, $2, 'scheduled', 'RUNNING', $3, $3)`, row.ID, tick, id)
		require.NoError(t, err)
	}

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go (&activities.RunWatcher{Acts: &activities.ScheduleActivities{Store: e.st, Temporal: tc}}).Run(wctx)
	status := func(id string) string {
		var s string
		require.NoError(t, e.st.Pool.QueryRow(ctx, "SELECT status FROM schedule_runs WHERE workflow_id = $1", id).Scan(&s))
		return s
	}
	require.Eventually(t, func() bool { return status(started) == "SUCCEEDED" }, 30*time.Second, 100*time.Millisecond, "the watched run's outcome")
	got := e.row(name)
	require.NotNil(t, got.LastSuccessAt)
	require.Equal(t, tick, got.LastSuccessAt.UTC(), "the schedule's newest success")
	// The lost one was started by the watcher; its outcome is recorded on a later lease.
	require.Eventually(t, func() bool {
		_, err := tc.DescribeWorkflowExecution(ctx, lost, "")
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "the lost start was made")
}
