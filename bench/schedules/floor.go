package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

var flagFloor = flag.Bool("floor", true, "with -wf: also measure Temporal's floor for the workflow burst (as many target workflows started with start delays that end at one instant, on the same worker)")

// runFloor measures what Temporal and the target worker give any scheduler that starts a
// burst of workflows on time: -wf-schedules target workflows, started ahead with start
// delays ending at the same instant (the next tick of -cron at least 30 s away), with no
// scheduler at all. Lateness is measured as for the workflow burst: the target's first
// WorkflowTaskStarted − that instant. No engine can start its targets' code earlier than
// this on this machine, server and worker. Its CPU per fire runs from before the starts to
// the last workflow closed: what Temporal and the worker spend on a burst with no scheduler.
func runFloor(ctx context.Context, e *env) (burstResult, error) {
	n := *flagWfSchedules
	res := burstResult{schedules: n}
	_, compiled, err := burstSpec()
	if err != nil {
		return res, err
	}
	tick := compiled.Next(time.Now().Add(30 * time.Second))
	prefix := fmt.Sprintf("bench-floor/%d", tick.Unix())
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s/%05d", prefix, i)
	}
	// The CPU window runs from before the starts (the scheduler's part: arming them ahead)
	// to the last of them closed.
	cpuFrom, err := e.stack.CPU()
	if err != nil {
		return res, err
	}
	began := time.Now()
	if err := parallel(ctx, n, 16, func(i int) error {
		return retryTransient(ctx, func() error {
			_, err := e.tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
				ID: ids[i], TaskQueue: targetTaskQueue, StartDelay: max(time.Until(tick), 0),
			}, targetWorkflow)
			return err
		})
	}); err != nil {
		return res, fmt.Errorf("start the floor's workflows: %w", err)
	}
	res.created = time.Since(began)
	log.Printf("floor: %d workflows started with delays ending at %s in %s", n, tick.Format(time.TimeOnly), res.created.Round(time.Millisecond))
	// Their code began by the drain timeout at the latest, or never counts. Paced by their
	// closing (the trivial workflow closes in its first workflow task), a visibility count
	// once a second, as native runs are.
	closed := fmt.Sprintf("WorkflowId STARTS_WITH '%s/' AND ExecutionStatus != 'Running'", prefix)
	nClosed, last, err := waitFires(ctx, func(ctx context.Context) (int, error) {
		resp, err := e.tc.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: closed})
		if err != nil {
			return 0, fmt.Errorf("count the floor's closed workflows: %w", err)
		}
		return int(resp.Count), nil
	}, n, tick, time.Second)
	if err != nil {
		return res, err
	}
	cpuTo, err := e.stack.CPU()
	if err != nil {
		return res, err
	}
	res.cpu, res.window = cpuTo.Sub(cpuFrom), time.Since(began)
	log.Printf("floor: %d/%d closed after %s", nClosed, n, last.Sub(tick).Round(time.Millisecond))
	if nClosed < n {
		// The rest may still begin before the drain timeout: give them until then.
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(time.Until(tick.Add(*flagDrainTimeout))):
		}
	}
	runs := make([]targetRun[string], n)
	for i, id := range ids {
		runs[i] = targetRun[string]{fire: fireKey[string]{id, tick.UnixNano()}, scheduledAt: tick, workflowID: id}
	}
	got, err := taskStartedLateness(ctx, e.tc, runs)
	if err != nil {
		return res, err
	}
	res.ticks = []time.Time{tick}
	res.late = collect(ids, res.ticks, got)
	res.tallyBursts()
	return res, nil
}
