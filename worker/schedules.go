package worker

import (
	"context"

	sdkworker "go.temporal.io/sdk/worker"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/workflows"
)

// registerSchedules registers the schedule engine's activities (docs/schedules.md): the
// schedule workflows', the planners' and the http actions' deliveries.
func registerSchedules(r sdkworker.Registry, d Deps) {
	r.RegisterActivity(&activities.ScheduleActivities{
		Store: d.Store, Temporal: d.Temporal, Tracer: d.Telemetry.Tracer(), TaskQueue: d.Config.TaskQueue,
		Targets:   workflows.OwnTargets(d.Config.TaskQueue, d.Config.WorkflowTaskQueues),
		Schedules: &starter.Starter{Client: d.Temporal, TaskQueue: d.Config.TaskQueue, ResidentSchedules: d.Config.SchedulesResident},
		Resident:  d.Config.SchedulesResident,
	})
	r.RegisterActivity(d.httpDeliveries())
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
