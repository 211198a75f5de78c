package worker

import (
	"context"

	sdkworker "go.temporal.io/sdk/worker"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/starter"
)

// registerDevices registers the device dispatch engine's activities (docs/devices.md).
func registerDevices(r sdkworker.Registry, d Deps) {
	r.RegisterActivity(&activities.DeviceActivities{Store: d.Store, Settings: d.Config.DeviceSettings()})
}

func init() {
	singletons = append(singletons, func(ctx context.Context, d Deps) error {
		return (&starter.Starter{Client: d.Temporal, TaskQueue: d.Config.TaskQueue}).StartDispatcher(ctx)
	})
}
