package starter

import (
	"context"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/workflows"
)

// deviceScope scopes the device engine's workflow ids by task queue (domain.DeviceScope).
func (s *Starter) deviceScope() string { return domain.DeviceScope(s.TaskQueue) }

// DispatcherID is the device dispatcher's workflow id on this starter's task queue.
func (s *Starter) DispatcherID() string { return domain.DispatcherWorkflowID(s.deviceScope()) }

func (s *Starter) dispatcherOptions() client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                    s.DispatcherID(),
		TaskQueue:             s.TaskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(workflows.KindKey.ValueSet(workflows.KindDispatcher)),
		StaticSummary:         "keeps the single active device task and fills the PCs' slots with it",
	}
}

// StartDispatcher makes sure the singleton dispatcher runs (a running one is kept).
func (s *Starter) StartDispatcher(ctx context.Context) error {
	opts := s.dispatcherOptions()
	opts.WorkflowIDConflictPolicy = enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING
	if _, err := s.Client.ExecuteWorkflow(ctx, opts, workflows.DispatcherWorkflow, workflows.DispatcherInput{}); err != nil {
		return fmt.Errorf("start device dispatcher: %w", err)
	}
	return nil
}

// CheckDispatcher nudges the dispatcher (starting it if needed) to re-check the active task.
func (s *Starter) CheckDispatcher(ctx context.Context) error {
	_, err := s.Client.SignalWithStartWorkflow(ctx, s.DispatcherID(), workflows.SignalDispatcherCheck, nil,
		s.dispatcherOptions(), workflows.DispatcherWorkflow, workflows.DispatcherInput{})
	if err != nil {
		return fmt.Errorf("nudge device dispatcher: %w", err)
	}
	return nil
}

// NudgePC signals a PC's workflow (starting it if needed) to fill its free slots.
func (s *Starter) NudgePC(ctx context.Context, pc string) error {
	id := domain.PCWorkflowID(s.deviceScope(), pc)
	_, err := s.Client.SignalWithStartWorkflow(ctx, id, workflows.SignalNudgePC, nil, client.StartWorkflowOptions{
		ID:                    id,
		TaskQueue:             s.TaskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(workflows.KindKey.ValueSet(workflows.KindPC), workflows.PCKey.ValueSet(pc)),
		StaticSummary:         "keeps PC " + pc + "'s device slots full",
	}, workflows.PCWorkflow, workflows.PCInput{PC: pc})
	if err != nil {
		return fmt.Errorf("signal pc %q workflow: %w", pc, err)
	}
	return nil
}

// SetPCTimerAlarm sets an alarm on a PC's timer (starting it if needed): it wakes at w.At at
// the latest and then times out what is overdue on the PC.
func (s *Starter) SetPCTimerAlarm(ctx context.Context, pc string, w workflows.PCTimerAlarm) error {
	id := domain.PCTimerWorkflowID(s.deviceScope(), pc)
	_, err := s.Client.SignalWithStartWorkflow(ctx, id, workflows.SignalPCTimerAlarm, w, client.StartWorkflowOptions{
		ID:                    id,
		TaskQueue:             s.TaskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(workflows.KindKey.ValueSet(workflows.KindPCTimer), workflows.PCKey.ValueSet(pc)),
		StaticSummary:         "the timer of PC " + pc + ": times out its attempts at their deadlines",
	}, workflows.PCTimerWorkflow, workflows.PCTimerInput{PC: pc, DispatcherID: s.DispatcherID()})
	if err != nil {
		return fmt.Errorf("set an alarm on pc %q timer: %w", pc, err)
	}
	return nil
}
