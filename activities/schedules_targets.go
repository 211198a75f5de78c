package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
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
