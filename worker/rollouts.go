package worker

import (
	"context"

	sdkworker "go.temporal.io/sdk/worker"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/starter"
)

// registerRollouts registers the rollout engine's activities (docs/rollouts.md).
func registerRollouts(r sdkworker.Registry, d Deps) {
	r.RegisterActivity(&activities.RolloutActivities{
		Store:      d.Store,
		Nudger:     &starter.Starter{Client: d.Temporal, TaskQueue: d.Config.TaskQueue},
		SQLTargets: d.Config.SQLTargets,
		// The probes' read-only DSNs and the server-side bounds of SQL on targets.
		SQLProbeTargets: d.Config.SQLProbeTargets, SQLStatementTimeout: d.Config.SQLStatementTimeout, SQLLockTimeout: d.Config.SQLLockTimeout,
		Tracer: d.Telemetry.Tracer(),
		// With tracing on, an http executor's call is a span of its task run's trace and
		// carries its traceparent to the endpoint.
		Outbound: d.Config.HTTPAllow,
		WrapHTTP: d.Telemetry.HTTPTransport,
	})
}

func init() {
	// The promoter singleton: SignalWithStart makes a second worker's start a no-op nudge.
	singletons = append(singletons, func(ctx context.Context, d Deps) error {
		return (&starter.Starter{Client: d.Temporal, TaskQueue: d.Config.TaskQueue}).NudgePromoter(ctx)
	})
}
