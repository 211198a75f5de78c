package worker

import (
	"context"

	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/workflows"
)

// registerSchedules registers the schedule engine (docs/schedules.md): the schedule
// workflows, the planners and their activities.
func registerSchedules(r sdkworker.Registry, d Deps) {
	r.RegisterWorkflowWithOptions(workflows.ScheduleWorkflow, workflow.RegisterOptions{Name: workflows.ScheduleWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.SchedulePlannerWorkflow, workflow.RegisterOptions{Name: workflows.SchedulePlannerType})
	r.RegisterActivity(&activities.ScheduleActivities{
		Store: d.Store, Temporal: d.Temporal, Tracer: d.Telemetry.Tracer(), TaskQueue: d.Config.TaskQueue,
		Schedules: &starter.Starter{Client: d.Temporal, TaskQueue: d.Config.TaskQueue, ResidentSchedules: d.Config.SchedulesResident},
		Resident:  d.Config.SchedulesResident,
	})
	// The runs of http actions: a delivery workflow each, on tickgate's own task queue.
	r.RegisterWorkflowWithOptions(workflows.HTTPDeliveryWorkflow, workflow.RegisterOptions{Name: workflows.HTTPDeliveryWorkflowType})
	r.RegisterActivity(&activities.HTTPDeliveries{Store: d.Store, Outbound: d.Config.HTTPAllow})
}

func init() {
	singletons = append(singletons, func(ctx context.Context, d Deps) error {
		n := d.Config.SchedulePlanners
		if n == 0 {
			n = config.DefaultSchedulePlanners
		}
		return (&starter.Starter{Client: d.Temporal, TaskQueue: d.Config.TaskQueue}).StartSchedulePlanners(ctx, n)
	})
}
