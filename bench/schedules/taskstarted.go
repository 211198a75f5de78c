package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
)

// targetRun is one fire's target workflow execution (runID "" is the latest run of id).
type targetRun[ID comparable] struct {
	fire        fireKey[ID]
	scheduledAt time.Time // what lateness counts from: the nominal tick
	workflowID  string
	runID       string
}

// taskStartedLateness reads when each run's user code began: its first WorkflowTaskStarted
// event in Temporal's history, − the run's nominal tick. A run whose history has no such
// event (or no history at all) is left out of the map, so collect counts it +Inf; of
// several runs for one fire the earliest counts.
func taskStartedLateness[ID comparable](ctx context.Context, tc client.Client, runs []targetRun[ID]) (map[fireKey[ID]]float64, error) {
	started := make([]*time.Time, len(runs))
	err := parallel(ctx, len(runs), 8, func(i int) error {
		return retryTransient(ctx, func() (err error) {
			started[i], err = firstTaskStarted(ctx, tc, runs[i].workflowID, runs[i].runID)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	got := map[fireKey[ID]]float64{}
	for i, r := range runs {
		if started[i] == nil {
			continue
		}
		ms := float64(started[i].Sub(r.scheduledAt).Microseconds()) / 1000
		if old, ok := got[r.fire]; !ok || ms < old {
			got[r.fire] = ms
		}
	}
	return got, nil
}

// firstTaskStarted is the time of the execution's first WorkflowTaskStarted event; nil when
// it has none (yet) or does not exist.
func firstTaskStarted(ctx context.Context, tc client.Client, workflowID, runID string) (*time.Time, error) {
	it := tc.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", workflowID, err)
		}
		if ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED {
			t := ev.GetEventTime().AsTime()
			return &t, nil
		}
	}
	return nil, nil
}
