// Package worker wires tickgate's workflows and activities onto a Temporal worker, and runs
// beside it the loops the engines need in every worker process (background.go: the releaser
// of armed fires, the run watcher, the http sender, the liveness beat, the resident keeper).
// It also registers the search attributes, starts the singleton workflows (the promoter, the
// dispatcher, the planners) and gives tests a Replayer of recorded histories.
package worker

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/telemetry"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// Deps are what the engines' activities need.
type Deps struct {
	Config   config.Config
	Store    *store.Store
	Temporal client.Client
	// Telemetry records the traces of the engines' units of work (docs/tracing.md); nil or
	// off when tracing is off. When on, the Temporal client carries the SDK's tracing
	// interceptor (the binary dials it so).
	Telemetry *telemetry.Telemetry

	// deliveries sends the http actions' requests of this process: the delivery activities'
	// and the first attempts' alike, under one set of host limits (New makes it).
	deliveries *activities.HTTPDeliveries
}

// httpDeliveries is the process's sender of http requests, with its host limits.
func (d Deps) httpDeliveries() *activities.HTTPDeliveries {
	if d.deliveries != nil {
		return d.deliveries
	}
	return &activities.HTTPDeliveries{Store: d.Store, Outbound: d.Config.HTTPAllow,
		Limits: &activities.HostLimiter{Limits: d.Config.HTTPHostLimits}}
}

// New creates a worker on cfg.TaskQueue with every engine registered; while it runs, it
// also releases armed schedule fires when they come due and records itself alive (see
// engineWorker).
func New(d Deps) (sdkworker.Worker, error) {
	w := sdkworker.New(d.Temporal, d.Config.TaskQueue, PollerOptions(d.Config.WorkerPollers))
	d.deliveries = d.httpDeliveries()
	if err := Register(w, d); err != nil {
		return nil, err
	}
	return withEngineLoops(w, d), nil
}

// Register registers every workflow (workflows.Registrations) and the activities of the
// three engines on r.
func Register(r sdkworker.Registry, d Deps) error {
	if d.Store == nil {
		return fmt.Errorf("worker: no store")
	}
	// Every workflow type, from the one list a schedule's workflow action is judged against.
	for _, wf := range workflows.Registrations() {
		r.RegisterWorkflowWithOptions(wf.Fn, workflow.RegisterOptions{Name: wf.Name})
	}
	registerSchedules(r, d)
	registerRollouts(r, d)
	registerDevices(r, d)
	return nil
}

// StartSingletons makes sure the cluster-wide singleton workflows run (started with fixed
// ids, so a second worker's attempt is a no-op: workflow-id uniqueness is the election).
func StartSingletons(ctx context.Context, d Deps) error {
	var errs []error
	for _, start := range singletons {
		if err := start(ctx, d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// singletons are added by the engines (the schedule planners, the rollout promoter, the
// device dispatcher).
var singletons []func(ctx context.Context, d Deps) error
