package worker

import (
	"context"
	"net/http"

	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/workflows"
)

// registerRollouts registers the rollout engine (docs/rollouts.md).
func registerRollouts(r sdkworker.Registry, d Deps) {
	r.RegisterWorkflowWithOptions(workflows.RolloutWorkflow, workflow.RegisterOptions{Name: workflows.RolloutWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.PromoterWorkflow, workflow.RegisterOptions{Name: workflows.PromoterWorkflowType})
	r.RegisterActivity(&activities.RolloutActivities{
		Store:      d.Store,
		Waker:      &starter.Starter{Client: d.Temporal, TaskQueue: d.Config.TaskQueue},
		SQLTargets: d.Config.SQLTargets,
		// The probes' read-only DSNs and the server-side bounds of SQL on targets.
		SQLProbeTargets: d.Config.SQLProbeTargets, SQLStatementTimeout: d.Config.SQLStatementTimeout, SQLLockTimeout: d.Config.SQLLockTimeout,
		Tracer: d.Telemetry.Tracer(),
		// With tracing on, an http executor's call is a span of its task run's trace and
		// carries its traceparent to the endpoint.
		HTTPClient: &http.Client{Transport: d.Telemetry.HTTPTransport(http.DefaultTransport)},
		HealthHTTP: d.Config.HTTPAllow,
	})
}

func init() {
	// The promoter singleton: SignalWithStart makes a second worker's start a no-op kick.
	singletons = append(singletons, func(ctx context.Context, d Deps) error {
		return (&starter.Starter{Client: d.Temporal, TaskQueue: d.Config.TaskQueue}).KickPromoter(ctx)
	})
}
