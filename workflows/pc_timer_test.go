package workflows_test

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// The PC's timer, on the real activities and PostgreSQL, in workflow time.

// claimAt plays the agent claiming execution id at the current workflow time: the SQL
// claim, with its SENT time and deadline put on the workflow's clock (the database's clock
// does not skip ahead with the test's). It returns the deadline. With tell, the claim
// sets an alarm on the PC's timer at the deadline, as the API does when the timer is not
// already due to wake.
func (s *DeviceSuite) claimAt(pc string, id int64, tell bool) time.Time {
	ctx := context.Background()
	cmds, err := s.store.Claim(ctx, pc, 1)
	s.Require().NoError(err)
	s.Require().Len(cmds, 1)
	s.Require().Equal(id, cmds[0].ID)
	now := s.env.Now()
	deadline := now.Add(20 * time.Minute)
	_, err = s.store.Pool.Exec(ctx, "UPDATE task_devices SET sent_at = $2, timeout_at = $3 WHERE id = $1", id, now, deadline)
	s.Require().NoError(err)
	if tell {
		s.env.SignalWorkflow(workflows.SignalPCTimerAlarm, workflows.PCTimerAlarm{ExecutionID: id, Attempt: cmds[0].Attempt, At: deadline})
	}
	return deadline
}

func (s *DeviceSuite) status(id int64) domain.ExecutionStatus {
	td, err := s.store.GetDeviceExecution(context.Background(), id)
	s.Require().NoError(err)
	return td.Status
}

func (s *DeviceSuite) startPCTimer(pc string) {
	s.env.ExecuteWorkflow(workflows.PCTimerWorkflow, workflows.PCTimerInput{PC: pc, DispatcherID: "d", IdlePoll: 24 * time.Hour})
	s.Require().True(s.env.IsWorkflowCompleted())
}

func (s *DeviceSuite) TestPCTimerTimesOutTheAttemptAtItsDeadline() {
	_, tds := s.farm("pc1", 1, 1)
	id := tds[0].ID
	s.Require().Equal(int32(1), *tds[0].Slot)
	s.env.RegisterDelayedCallback(func() { s.claimAt("pc1", id, true) }, 7*time.Minute)
	s.env.RegisterDelayedCallback(func() {
		s.Equal(domain.ExecutionSent, s.status(id), "one second before the deadline the attempt is still out")
	}, 27*time.Minute-time.Second)
	s.env.RegisterDelayedCallback(func() { s.env.CancelWorkflow() }, 30*time.Minute)
	s.startPCTimer("pc1")

	s.Equal([]time.Duration{27 * time.Minute}, s.startedAt("CheckPCTimer"), "woke at SENT + 20m, not CREATED + 20m")
	s.Equal(domain.ExecutionRetryScheduled, s.status(id))
	s.Equal([]string{"CREATED#1", "SENT#1", "TIMEOUT#1", "RETRY_SCHEDULED#2"}, s.events(id))
}

// A result needs no signal: the timer wakes at the alarm it was told, finds the attempt
// resolved and the slot's next execution in flight (claimed without a signal, since the
// timer was already due to wake before its deadline), and sleeps until that deadline.
func (s *DeviceSuite) TestPCTimerFollowsTheNextExecutionWithoutBeingTold() {
	ctx := context.Background()
	task, tds := s.farm("pc1", 1, 2)
	s.Require().Len(tds, 1, "capacity 1")
	first := tds[0].ID
	var second int64
	s.env.RegisterDelayedCallback(func() { s.claimAt("pc1", first, true) }, time.Minute) // deadline 21m
	s.env.RegisterDelayedCallback(func() {
		out, err := s.store.ReportResult(ctx, first, store.Result{Succeeded: true})
		s.Require().NoError(err)
		s.Require().Len(out.Refilled, 1, "the freed slot holds the next execution")
		second = out.Refilled[0]
		td, err := s.store.GetDeviceExecution(ctx, second)
		s.Require().NoError(err)
		s.Equal(int32(1), *td.Slot, "in the same numbered slot")
	}, 5*time.Minute)
	s.env.RegisterDelayedCallback(func() { s.claimAt("pc1", second, false) }, 10*time.Minute) // deadline 30m
	s.env.RegisterDelayedCallback(func() { s.env.CancelWorkflow() }, 40*time.Minute)
	s.startPCTimer("pc1")

	s.Equal([]time.Duration{21 * time.Minute, 30 * time.Minute}, s.startedAt("CheckPCTimer"))
	s.Equal([]string{"CREATED#1", "SENT#1", "SUCCEEDED#1"}, s.events(first), "the result won; the alarm at 21m changed nothing")
	s.Equal([]string{"CREATED#1", "SENT#1", "TIMEOUT#1", "RETRY_SCHEDULED#2"}, s.events(second), "timed out at its own deadline")
	tdsAfter, err := s.store.DeviceExecutions(ctx, task.ID, 0, 10)
	s.Require().NoError(err)
	s.Len(tdsAfter, 2)
}

// Several API processes each tell the PC's timer alarms for what they claimed. The timer
// wakes at every one it was told, so a process that skipped its signal because it had told
// an alarm still ahead is covered even when another process told a later one meanwhile.
func (s *DeviceSuite) TestPCTimerWakesAtEveryDeadlineItWasTold() {
	ctx := context.Background()
	_, tds := s.farm("pc1", 1, 3)
	first := tds[0].ID
	var second int64
	s.env.RegisterDelayedCallback(func() { s.claimAt("pc1", first, true) }, time.Minute) // told 21m
	s.env.RegisterDelayedCallback(func() {
		// Another process told a later deadline (an attempt of its own that since resolved).
		s.env.SignalWorkflow(workflows.SignalPCTimerAlarm, workflows.PCTimerAlarm{At: s.t0.Add(45 * time.Minute)})
		out, err := s.store.ReportResult(ctx, first, store.Result{Succeeded: true})
		s.Require().NoError(err)
		second = out.Refilled[0]
	}, 2*time.Minute)
	// Claimed without a signal: this process told 21m, still ahead and before 23m.
	s.env.RegisterDelayedCallback(func() { s.claimAt("pc1", second, false) }, 3*time.Minute) // deadline 23m
	s.env.RegisterDelayedCallback(func() { s.env.CancelWorkflow() }, 50*time.Minute)
	s.startPCTimer("pc1")

	s.Equal([]time.Duration{21 * time.Minute, 23 * time.Minute, 45 * time.Minute}, s.startedAt("CheckPCTimer"))
	s.Equal([]string{"CREATED#1", "SENT#1", "TIMEOUT#1", "RETRY_SCHEDULED#2"}, s.events(second))
}

func (s *DeviceSuite) TestPCTimerEndsWhenItsPCIsGone() {
	s.env.ExecuteWorkflow(workflows.PCTimerWorkflow, workflows.PCTimerInput{PC: "ghost", IdlePoll: time.Hour})
	s.Require().True(s.env.IsWorkflowCompleted())
	s.NoError(s.env.GetWorkflowError())
	s.Equal([]time.Duration{time.Hour}, s.startedAt("CheckPCTimer"))
}

// Continuing as new keeps every alarm the timer was told.
func (s *DeviceSuite) TestPCTimerCarriesItsAlarmsAcrossContinueAsNew() {
	_, _ = s.farm("pc1", 1, 1)
	for i := range 200 {
		s.env.RegisterDelayedCallback(func() {
			s.env.SignalWorkflow(workflows.SignalPCTimerAlarm, workflows.PCTimerAlarm{At: s.t0.Add(time.Duration(24+i) * time.Hour)})
		}, time.Duration(i+1)*time.Second)
	}
	s.env.ExecuteWorkflow(workflows.PCTimerWorkflow, workflows.PCTimerInput{PC: "pc1", IdlePoll: time.Hour})
	s.Require().True(s.env.IsWorkflowCompleted())
	var can *workflow.ContinueAsNewError
	s.Require().True(errors.As(s.env.GetWorkflowError(), &can), "continued as new: %v", s.env.GetWorkflowError())
	var next workflows.PCTimerInput
	s.Require().NoError(converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	s.Len(next.Alarms, 200)
	s.Equal(s.t0.Add(24*time.Hour), next.Alarms[0].UTC())
	s.Equal(s.t0.Add(223*time.Hour), next.Alarms[199].UTC())
	s.Equal("pc1", next.PC)
}
