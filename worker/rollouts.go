package worker

import sdkworker "go.temporal.io/sdk/worker"

// registerRollouts registers the rollout engine (DESIGN.md §2).
func registerRollouts(r sdkworker.Registry, d Deps) {}
