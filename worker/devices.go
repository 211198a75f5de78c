package worker

import (
	"context"

	sdkworker "go.temporal.io/sdk/worker"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/store"
)

// registerDevices registers the device dispatch engine's activities (docs/devices.md).
func registerDevices(r sdkworker.Registry, d Deps) {
	r.RegisterActivity(&activities.DeviceActivities{Store: d.Store, Settings: DeviceSettings(d.Config)})
}

// DeviceSettings are the attempt limit and device timeout a device task takes when it
// becomes active, from the configuration in force; the API's task advancer takes the same.
// A field left zero (a Config built by hand, not by config.FromEnv) means its default (docs/operations.md).
func DeviceSettings(cfg config.Config) store.DeviceSettings {
	s := store.DefaultDeviceSettings()
	if cfg.DeviceMaxAttempts > 0 {
		s.MaxAttempts = cfg.DeviceMaxAttempts
	}
	if cfg.DeviceTimeout > 0 {
		s.DeviceTimeout = cfg.DeviceTimeout
	}
	return s
}

func init() {
	singletons = append(singletons, func(ctx context.Context, d Deps) error {
		return (&starter.Starter{Client: d.Temporal, TaskQueue: d.Config.TaskQueue}).StartDispatcher(ctx)
	})
}
