package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/tickgate/tickgate/domain"
)

// TargetStarts tells the releaser of armed fires what the target of an armed workflow fire
// did (store.TargetChecker): released late, such a fire may have started on time all the
// same (Temporal's start delay started it), or not yet.
type TargetStarts struct {
	Temporal client.Client
}

// maxEventsToFirstTask bounds how much of a target's history is read: its first workflow
// task comes within the first few events.
const maxEventsToFirstTask = 10

// Started answers when the target's first workflow task was scheduled (nil: not yet, or no
// such workflow) and whether one was picked up by a worker (its code began).
func (t TargetStarts) Started(ctx context.Context, workflowID string) (*time.Time, bool, error) {
	iter := t.Temporal.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var scheduledAt *time.Time
	for n := 0; iter.HasNext() && n < maxEventsToFirstTask; n++ {
		ev, err := iter.Next()
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("history of %s: %w", workflowID, err)
		}
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
			if scheduledAt == nil {
				at := ev.GetEventTime().AsTime().UTC()
				scheduledAt = &at
			}
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
			return scheduledAt, true, nil
		}
	}
	return scheduledAt, false, nil
}

// Terminate stops a target that has not begun, for a fire recorded MISSED; one already
// gone is fine.
func (t TargetStarts) Terminate(ctx context.Context, workflowID, reason string) error {
	err := t.Temporal.TerminateWorkflow(ctx, workflowID, "", reason)
	var notFound *serviceerror.NotFound
	if err != nil && !errors.As(err, &notFound) {
		return fmt.Errorf("terminate %s: %w", workflowID, err)
	}
	return nil
}

// targetEnd reads what a wait for a run's target answered (the error of
// client.WorkflowRun.Get): the run's end, and closed, only when it is Temporal's word that
// the target closed — it completed (no error), or it closed failed, timed out, canceled or
// terminated (a *temporal.WorkflowExecutionError saying which), or there is no such
// workflow at all (not found: never started, or gone past its retention). Any other error is
// a wait that failed — a poll cut by a deadline, a server unavailable under load — which
// says nothing of the target, still running as far as anyone knows: closed is false, and
// the wait is retried (the activity's retry, the watcher's next try). Turning such an error
// into the run's end once made runs read FAILED while their targets still waited to start.
func targetEnd(err error) (out RunOutcome, closed bool) {
	if err == nil {
		return RunOutcome{Status: domain.RunSucceeded}, true
	}
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return RunOutcome{Status: domain.RunFailed, Error: "run workflow not found: " + err.Error()}, true
	}
	var closedErr *temporal.WorkflowExecutionError
	if !errors.As(err, &closedErr) {
		return RunOutcome{}, false
	}
	var delivery *temporal.ApplicationError
	if errors.As(err, &delivery) && delivery.Type() == ErrHTTPDeliveryFailed {
		// An http action's delivery says why it failed in words of its own: that is the run's
		// error, without the workflow's wrapping.
		return RunOutcome{Status: domain.RunFailed, Error: delivery.Message()}, true
	}
	var canceled *temporal.CanceledError
	var terminated *temporal.TerminatedError
	switch {
	case errors.As(err, &canceled):
		return RunOutcome{Status: domain.RunCanceled, Error: err.Error()}, true
	case errors.As(err, &terminated):
		return RunOutcome{Status: domain.RunTerminated, Error: err.Error()}, true
	}
	return RunOutcome{Status: domain.RunFailed, Error: err.Error()}, true
}
