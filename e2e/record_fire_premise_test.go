package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/worker"
	"github.com/tickgate/tickgate/workflows"
)

// premiseTarget is the target of the premise schedule: a run lasts the seconds its input
// says.
func premiseTarget(ctx workflow.Context, in struct{ Seconds int }) error {
	return workflow.Sleep(ctx, time.Duration(in.Seconds)*time.Second)
}

// TestScheduleFirePremiseHistoryReplays records, on the whole product, a run that a lost
// workflow task left in flight being counted (schedule-fire-premise). A capped schedule
// (allow_all, max_concurrent 1) is awake after a manual run; then what a lost task leaves is
// put in PostgreSQL and Temporal — a manual run recorded RUNNING and its target started,
// unknown to the workflow — and a manual trigger comes. Its record finds that run and records
// nothing; the workflow takes the run in and decides the trigger again: it waits BUFFERED
// behind it, and starts only once the lost run has ended, whose end the workflow records. The
// history must replay; with TICKGATE_RECORD_HISTORIES=1 it is written to
// workflows/testdata/schedule_fire_premise.json, where the versions test finds the record
// answered with the run it had not counted.
func TestScheduleFirePremiseHistoryReplays(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	queue := fmt.Sprintf("premise-targets-%d", time.Now().UnixNano())
	w := sdkworker.New(st.Temporal, queue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(premiseTarget, workflow.RegisterOptions{Name: "PremiseTarget"})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	rec := &recorder{t: t, tc: st.Temporal, dir: recordDir(t), recorded: map[string]*historypb.History{}}
	ctx := context.Background()

	st.CreateSchedule(t, map[string]any{
		"name": "premise", "spec": map[string]any{"interval": "1h"},
		"action":   map[string]any{"kind": "workflow", "workflow_type": "PremiseTarget", "task_queue": queue, "input": map[string]any{"seconds": 1}},
		"policies": map[string]any{"overlap": "allow_all", "max_concurrent": 1},
	})
	row, err := st.Store.GetSchedule(ctx, "premise")
	require.NoError(t, err)
	status := func(key string) domain.RunStatus {
		var s domain.RunStatus
		require.NoError(t, st.Store.Pool.QueryRow(ctx, `SELECT status FROM schedule_runs WHERE idempotency_key = $1`, key).Scan(&s))
		return s
	}
	first := st.Trigger(t, "premise") // its workflow is awake
	require.Equal(t, "RUNNING", string(first.Status))
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, st.Store.Pool.QueryRow(ctx, `SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND status = 'SUCCEEDED'`, row.ID).Scan(&n))
		return n == 1
	}, time.Minute, 100*time.Millisecond, "the first manual run ended")

	// What a lost workflow task leaves: its fire's record committed, its target started.
	now := time.Now().UTC()
	key := domain.ManualKey(row.ID, "lost-task")
	lostID := domain.RunWorkflowID("premise", key)
	event := domain.FireEvent("premise", domain.Action{Kind: domain.ActionWorkflow, WorkflowType: "PremiseTarget", TaskQueue: queue}, now, domain.TriggerManual, now)
	_, created, err := st.Store.RecordFire(ctx, store.Fire{
		ScheduleID: row.ID, ScheduledAt: now, FiredAt: now, Trigger: domain.TriggerManual, Status: domain.RunRunning,
		IdempotencyKey: key, WorkflowID: lostID, Event: &event, NextRunAt: row.NextRunAt,
	})
	require.NoError(t, err)
	require.True(t, created)
	_, err = st.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: lostID, TaskQueue: queue}, "PremiseTarget", map[string]any{"seconds": 8})
	require.NoError(t, err)

	trig := st.Trigger(t, "premise")
	require.Equal(t, "BUFFERED", string(trig.Status), "the trigger waits behind the run the lost task left")
	require.Equal(t, "max_concurrent 1: 1 run in flight; waits for one to end", trig.Reason)
	require.NotNil(t, trig.Run)

	require.Eventually(t, func() bool { return status(key) == domain.RunSucceeded }, time.Minute, 100*time.Millisecond,
		"the lost run was taken in and its end recorded")
	var afterID string
	require.Eventually(t, func() bool {
		var after domain.RunStatus
		require.NoError(t, st.Store.Pool.QueryRow(ctx, `SELECT status, workflow_id FROM schedule_runs WHERE id = $1`, trig.Run.ID).Scan(&after, &afterID))
		return after == domain.RunSucceeded
	}, time.Minute, 100*time.Millisecond, "the trigger ran once the lost run ended")

	// What Temporal saw: the trigger's target began after the lost one closed.
	lostRun, err := st.Temporal.DescribeWorkflowExecution(ctx, lostID, "")
	require.NoError(t, err)
	afterRun, err := st.Temporal.DescribeWorkflowExecution(ctx, afterID, "")
	require.NoError(t, err)
	closed, began := lostRun.GetWorkflowExecutionInfo().GetCloseTime().AsTime(), afterRun.GetWorkflowExecutionInfo().GetExecutionTime().AsTime()
	require.False(t, began.Before(closed), "the trigger's target began at %s, before the lost run's closed at %s", began, closed)

	id := workflows.ScheduleWorkflowID("premise")
	rec.waitRested(id)
	rec.write(id, workflows.ScheduleWorkflowType, "schedule_fire_premise")
	r, err := worker.NewReplayer()
	require.NoError(t, err)
	require.NoError(t, r.ReplayWorkflowHistory(nil, rec.recorded["schedule_fire_premise"]), "the premise's history does not replay")
}
