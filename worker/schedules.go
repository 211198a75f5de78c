package worker

import (
	"context"

	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/workflows"
)

// registerSchedules registers the schedule engine (docs/schedules.md).
func registerSchedules(r sdkworker.Registry, d Deps) {
	r.RegisterWorkflowWithOptions(workflows.ScheduleWorkflow, workflow.RegisterOptions{Name: workflows.ScheduleWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.ScheduleReconcilerWorkflow, workflow.RegisterOptions{Name: workflows.ScheduleReconcilerType})
	r.RegisterActivity(&activities.ScheduleActivities{Store: d.Store, Temporal: d.Temporal, Tracer: d.Telemetry.Tracer()})
	r.RegisterActivity(&activities.ReconcileActivities{Store: d.Store, Starter: &starter.Starter{Client: d.Temporal, TaskQueue: d.Config.TaskQueue}})
}

func init() {
	singletons = append(singletons, func(ctx context.Context, d Deps) error {
		return (&starter.Starter{Client: d.Temporal, TaskQueue: d.Config.TaskQueue}).StartScheduleReconciler(ctx)
	})
}
