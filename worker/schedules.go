package worker

import sdkworker "go.temporal.io/sdk/worker"

// registerSchedules registers the schedule engine (DESIGN.md §1).
func registerSchedules(r sdkworker.Registry, d Deps) {}
