package e2e

import (
	"context"
	"encoding/json"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/workflows"
)

// scheduleStart is how another service starts a schedule's workflow to reach it, as
// docs/schedules.md documents: the schedule's workflow id and name, tickgate's task queue;
// a run already open is used, a closed one does not block a new one.
func scheduleStart(st *teststack.Stack, name string) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID: workflows.ScheduleWorkflowID(name), TaskQueue: st.Config.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}
}

// signalSchedule sends a command signal to a schedule as another service does: with
// signal-with-start, since a schedule at rest has no open workflow.
func signalSchedule(ctx context.Context, st *teststack.Stack, name, signal string, arg any) error {
	_, err := st.Temporal.SignalWithStartWorkflow(ctx, workflows.ScheduleWorkflowID(name), signal, arg, scheduleStart(st, name),
		workflows.ScheduleWorkflowType, workflows.ScheduleInput{Name: name})
	return err
}

// updateSchedule sends a command update to a schedule as another service does: with
// update-with-start, and waits for its answer.
func updateSchedule(ctx context.Context, st *teststack.Stack, name, update string, arg any, out any) error {
	h, err := st.Temporal.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: st.Temporal.NewWithStartWorkflowOperation(scheduleStart(st, name), workflows.ScheduleWorkflowType,
			workflows.ScheduleInput{Name: name}),
		UpdateOptions: client.UpdateWorkflowOptions{
			WorkflowID: workflows.ScheduleWorkflowID(name), UpdateName: update, Args: []any{arg},
			WaitForStage: client.WorkflowUpdateStageCompleted,
		},
	})
	if err != nil {
		return err
	}
	return h.Get(ctx, out)
}

// rawJSON passes a payload as it is written, bad or not.
func rawJSON(s string) json.RawMessage { return json.RawMessage(s) }
