package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/tickgate/tickgate/workflows"
)

// historyEvents counts the events written between from and to into every run of every
// schedule workflow (continued-as-new runs included), by the events' own timestamps, so
// reading the histories afterwards adds nothing to the count.
func historyEvents(ctx context.Context, tc client.Client, from, to time.Time) (int64, error) {
	type run struct{ id, runID string }
	var runs []run
	var token []byte
	for {
		var resp *workflowservice.ListWorkflowExecutionsResponse
		err := retryTransient(ctx, func() (err error) {
			resp, err = tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
				Query:         fmt.Sprintf("%s = '%s'", workflows.KindKey.GetName(), workflows.KindSchedule),
				PageSize:      1000,
				NextPageToken: token,
			})
			return err
		})
		if err != nil {
			return 0, fmt.Errorf("list schedule workflows: %w", err)
		}
		for _, ex := range resp.Executions {
			runs = append(runs, run{ex.Execution.WorkflowId, ex.Execution.RunId})
		}
		if token = resp.NextPageToken; len(token) == 0 {
			break
		}
	}
	var total atomic.Int64
	err := parallel(ctx, len(runs), 8, func(i int) error {
		var n int64
		// A history read that fails part-way is read again from its start.
		err := retryTransient(ctx, func() error {
			n = 0
			it := tc.GetWorkflowHistory(ctx, runs[i].id, runs[i].runID, false, 0)
			for it.HasNext() {
				ev, err := it.Next()
				if err != nil {
					return err
				}
				if t := ev.GetEventTime().AsTime(); t.After(from) && !t.After(to) {
					n++
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("history of %s: %w", runs[i].id, err)
		}
		total.Add(n)
		return nil
	})
	return total.Load(), err
}
