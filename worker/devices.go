package worker

import sdkworker "go.temporal.io/sdk/worker"

// registerDevices registers the device dispatch engine (DESIGN.md §3).
func registerDevices(r sdkworker.Registry, d Deps) {}
