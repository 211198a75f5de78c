package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
)

// ScheduleReconcilerType is the registered name of the reconciler.
const ScheduleReconcilerType = "ScheduleReconcilerWorkflow"

// ScheduleReconcilerID is the reconciler's fixed id: workflow-id uniqueness makes it a
// singleton with no lock table and no heartbeat window.
const ScheduleReconcilerID = "schedule-reconciler"

// reconcileEvery is how often rows and workflows are compared.
const reconcileEvery = time.Minute

var reconcileActs *activities.ReconcileActivities

// ScheduleReconcilerWorkflow makes sure every schedule row has its running workflow and no
// workflow outlives its row, then sleeps; it continues as new every 100 rounds.
func ScheduleReconcilerWorkflow(ctx workflow.Context) error {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute, MaximumAttempts: 5},
	})
	for round := 0; round < 100; round++ {
		var res activities.ReconcileResult
		if err := workflow.ExecuteActivity(actx, reconcileActs.ReconcileSchedules).Get(ctx, &res); err != nil {
			workflow.GetLogger(ctx).Warn("reconcile round failed", "error", err)
		}
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("last round: started %d, stopped %d of %d schedules", res.Started, res.Stopped, res.Schedules))
		next := workflow.Now(ctx).Add(reconcileEvery)
		if err := workflow.NewTimerWithOptions(ctx, reconcileEvery, workflow.TimerOptions{
			Summary: "next reconcile at " + next.UTC().Format(time.RFC3339),
		}).Get(ctx, nil); err != nil {
			return err
		}
	}
	return workflow.NewContinueAsNewError(ctx, ScheduleReconcilerType)
}
