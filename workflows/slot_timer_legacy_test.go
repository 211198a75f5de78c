package workflows_test

import (
	"time"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/workflows"
)

// The legacy per-slot timer (SlotDeadlineWorkflow, workflows/slot_timer_legacy.go): nothing
// starts one any more, but one running when a deployment was upgraded still times out the
// deadline it was told, and ends when its PC is gone. Delete with it.

func (s *DeviceSuite) TestLegacySlotTimerTimesOutTheDeadlineItWasTold() {
	_, tds := s.farm("pc1", 1, 1)
	id := tds[0].ID
	s.env.RegisterDelayedCallback(func() {
		deadline := s.claimAt("pc1", id, false)
		s.env.SignalWorkflow(workflows.SignalSlotDeadline, workflows.SlotDeadline{ExecutionID: id, Attempt: 1, TimeoutAt: deadline})
	}, 7*time.Minute)
	s.env.RegisterDelayedCallback(func() { s.env.CancelWorkflow() }, 30*time.Minute)
	s.env.ExecuteWorkflow(workflows.SlotDeadlineWorkflow, workflows.SlotDeadlineInput{PC: "pc1", Slot: 1, DispatcherID: "d", IdlePoll: 24 * time.Hour})
	s.Require().True(s.env.IsWorkflowCompleted())

	s.Equal([]time.Duration{27 * time.Minute}, s.startedAt("CheckSlot"))
	s.Equal(domain.ExecutionRetryScheduled, s.status(id))
	s.Equal([]string{"CREATED#1", "SENT#1", "TIMEOUT#1", "RETRY_SCHEDULED#2"}, s.events(id))
}

func (s *DeviceSuite) TestLegacySlotTimerEndsWhenItsPCIsGone() {
	s.env.ExecuteWorkflow(workflows.SlotDeadlineWorkflow, workflows.SlotDeadlineInput{PC: "ghost", Slot: 1, IdlePoll: time.Hour})
	s.Require().True(s.env.IsWorkflowCompleted())
	s.NoError(s.env.GetWorkflowError())
	s.Equal([]time.Duration{time.Hour}, s.startedAt("CheckSlot"))
}
