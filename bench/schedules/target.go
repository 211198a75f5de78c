package main

import (
	"fmt"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// The target of every workflow action the bench schedules, tickgate's and native Temporal
// Schedules' alike: a workflow that does nothing, on a task queue of its own, served by one
// worker in this process with the SDK's default options. Both engines' runs thus start the
// same code on the same worker, and their lateness differs only by the scheduler.
const (
	targetTaskQueue = "bench-targets"
	targetWorkflow  = "BenchNoop"
)

// startTargetWorker starts the worker that runs targetWorkflow; stop it when done.
func startTargetWorker(tc client.Client) (sdkworker.Worker, error) {
	w := sdkworker.New(tc, targetTaskQueue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(func(workflow.Context) error { return nil }, workflow.RegisterOptions{Name: targetWorkflow})
	registerNativeHTTP(w)
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("start target worker: %w", err)
	}
	return w, nil
}
