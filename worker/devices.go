package worker

import (
	"context"

	sdkworker "go.temporal.io/sdk/worker"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/workflows"
)

// registerDevices registers the device dispatch engine (DESIGN.md §3).
func registerDevices(r sdkworker.Registry, d Deps) {
	r.RegisterWorkflow(workflows.DispatcherWorkflow)
	r.RegisterWorkflow(workflows.PCWorkflow)
	r.RegisterWorkflow(workflows.DeviceSlotWorkflow)
	r.RegisterActivity(&activities.DeviceActivities{
		Store: d.Store, MaxAttempts: d.Config.DeviceMaxAttempts, DeviceTimeout: d.Config.DeviceTimeout,
	})
}

func init() {
	singletons = append(singletons, func(ctx context.Context, d Deps) error {
		return (&starter.Starter{Client: d.Temporal, TaskQueue: d.Config.TaskQueue}).StartDispatcher(ctx)
	})
}
