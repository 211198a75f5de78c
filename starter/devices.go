package starter

import (
	"context"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/tickgate/tickgate/workflows"
)

// deviceScope scopes the device engine's workflow ids by task queue (see workflows.DeviceScope).
func (s *Starter) deviceScope() string { return workflows.DeviceScope(s.TaskQueue) }

// DispatcherID is the device dispatcher's workflow id on this starter's task queue.
func (s *Starter) DispatcherID() string { return workflows.DispatcherWorkflowID(s.deviceScope()) }

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

// RefillPC signals a PC's workflow (starting it if needed) to fill its free slots.
func (s *Starter) RefillPC(ctx context.Context, pc string) error {
	id := workflows.PCWorkflowID(s.deviceScope(), pc)
	_, err := s.Client.SignalWithStartWorkflow(ctx, id, workflows.SignalPCRefill, nil, client.StartWorkflowOptions{
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

// ArmSlot tells numbered slot n of a PC (starting its workflow if needed) the deadline of
// an attempt just sent in it: its durable timer wakes at that deadline at the latest.
func (s *Starter) ArmSlot(ctx context.Context, pc string, n int32, d workflows.SlotDeadline) error {
	id := workflows.SlotDeadlineWorkflowID(s.deviceScope(), pc, n)
	_, err := s.Client.SignalWithStartWorkflow(ctx, id, workflows.SignalSlotDeadline, d, client.StartWorkflowOptions{
		ID:                    id,
		TaskQueue:             s.TaskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(workflows.KindKey.ValueSet(workflows.KindDeviceSlot), workflows.PCKey.ValueSet(pc)),
		StaticSummary:         slotTimerSummary(pc, n),
	}, workflows.SlotDeadlineWorkflow, workflows.SlotDeadlineInput{PC: pc, Slot: n, DispatcherID: s.DispatcherID()})
	if err != nil {
		return fmt.Errorf("signal slot workflow %s: %w", id, err)
	}
	return nil
}

func slotTimerSummary(pc string, n int32) string {
	if n == 0 {
		return fmt.Sprintf("the deadline timer of PC %s (every slot)", pc)
	}
	return fmt.Sprintf("the deadline timer of slot %d of PC %s", n, pc)
}
