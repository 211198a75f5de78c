package workflows_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/suite"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// The device workflows run in the time-skipping environment: a 20-minute device timeout
// takes milliseconds. Most tests use the real activities on a real PostgreSQL, so what is
// asserted is what was committed; the agent is played by the test (store.Claim + signals).
type DeviceSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env   *testsuite.TestWorkflowEnvironment
	store *store.Store
	t0    time.Time

	mu      sync.Mutex
	started []startedActivity // activities started, with the workflow time
}

type startedActivity struct {
	name string
	at   time.Time
}

func TestDeviceWorkflows(t *testing.T) {
	t.Parallel()
	suite.Run(t, new(DeviceSuite))
}

func (s *DeviceSuite) SetupTest() {
	s.store = testenv.Store(s.T())
	s.SetLogger(testLogger())
	s.env = s.NewTestWorkflowEnvironment()
	s.env.RegisterWorkflow(workflows.DeviceSlotWorkflow)
	s.env.RegisterWorkflow(workflows.SlotDeadlineWorkflow)
	s.env.RegisterWorkflow(workflows.PCTimerWorkflow)
	s.env.RegisterWorkflow(workflows.DispatcherWorkflow)
	s.env.RegisterWorkflow(workflows.PCWorkflow)
	s.env.RegisterActivity(&activities.DeviceActivities{Store: s.store, Settings: domain.DefaultDeviceSettings()})
	s.t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s.env.SetStartTime(s.t0)
	s.started = nil
	s.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.started = append(s.started, startedActivity{name: info.ActivityType.Name, at: s.env.Now()})
	})
	// The slot workflow nudges the dispatcher, which does not run in these tests.
	s.env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, mock.Anything, workflows.SignalDispatcherCheck, mock.Anything).Return(nil).Maybe()
}

func (s *DeviceSuite) startedAt(name string) []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Duration
	for _, a := range s.started {
		if a.name == name {
			out = append(out, a.at.Sub(s.t0))
		}
	}
	return out
}

// farm creates a PC with n devices, queues a task and activates it; it returns the PC's
// executions of the task.
func (s *DeviceSuite) farm(pc string, capacity int32, n int) (store.DeviceTask, []store.DeviceExecutionView) {
	ctx := context.Background()
	_, err := s.store.CreatePC(ctx, pc, capacity)
	s.Require().NoError(err)
	for i := 0; i < n; i++ {
		_, _, err := s.store.CreateDevice(ctx, pc, fmt.Sprintf("%s-d%d", pc, i))
		s.Require().NoError(err)
	}
	task, err := s.store.CreateDeviceTask(ctx, store.NewDeviceTask{})
	s.Require().NoError(err)
	_, err = s.store.Advance(ctx, domain.DefaultDeviceSettings())
	s.Require().NoError(err)
	_, err = s.store.RefillAll(ctx)
	s.Require().NoError(err)
	tds, err := s.store.DeviceExecutions(ctx, task.ID, 0, 100)
	s.Require().NoError(err)
	return task, tds
}

// claimAndSignal plays the agent claiming its PC's commands at the current workflow time:
// the SQL claim, then the sent signal with a deadline 20 minutes later.
func (s *DeviceSuite) claimAndSignal(pc string, id int64) {
	cmds, err := s.store.Claim(context.Background(), pc, 1)
	s.Require().NoError(err)
	s.Require().Len(cmds, 1)
	s.Require().Equal(id, cmds[0].ID)
	now := s.env.Now()
	s.env.SignalWorkflow(workflows.SignalSlotSent, workflows.SlotSent{Attempt: cmds[0].Attempt, SentAt: now, TimeoutAt: now.Add(20 * time.Minute)})
}

func (s *DeviceSuite) events(id int64) []string {
	evs, err := s.store.DeviceExecutionEvents(context.Background(), id)
	s.Require().NoError(err)
	var out []string
	for _, e := range evs {
		out = append(out, fmt.Sprintf("%s#%d", e.Type, e.Attempt))
	}
	return out
}

func (s *DeviceSuite) TestTimeoutIsTwentyMinutesAfterSentNotCreated() {
	var timedOutAt time.Time
	s.env.OnActivity("TimeoutAttempt", mock.Anything, activities.TimeoutInput{ExecutionID: 7, Attempt: 1}).
		Return(func(context.Context, activities.TimeoutInput) (activities.SlotState, error) {
			timedOutAt = s.env.Now()
			return activities.SlotState{Status: domain.ExecutionFailedFinal, Attempt: 1}, nil
		}).Once()
	// Created at t0, sent 7 minutes later.
	s.env.RegisterDelayedCallback(func() {
		now := s.env.Now()
		s.env.SignalWorkflow(workflows.SignalSlotSent, workflows.SlotSent{Attempt: 1, SentAt: now, TimeoutAt: now.Add(20 * time.Minute)})
	}, 7*time.Minute)
	s.env.ExecuteWorkflow(workflows.DeviceSlotWorkflow, workflows.SlotInput{ExecutionID: 7, TaskID: 1, PC: "pc1", Poll: time.Hour})

	s.Require().True(s.env.IsWorkflowCompleted())
	s.Require().NoError(s.env.GetWorkflowError())
	s.Equal(27*time.Minute, timedOutAt.Sub(s.t0), "deadline = SENT + 20m")
	var out workflows.SlotOutcome
	s.Require().NoError(s.env.GetWorkflowResult(&out))
	s.Equal(domain.ExecutionFailedFinal, out.Status)
	s.Equal(1, out.TimedOut)
}

func (s *DeviceSuite) TestResultBeforeDeadlineCancelsTheTimer() {
	_, tds := s.farm("pc1", 1, 1)
	id := tds[0].ID
	s.env.RegisterDelayedCallback(func() { s.claimAndSignal("pc1", id) }, time.Minute)
	s.env.RegisterDelayedCallback(func() {
		out, err := s.store.ReportResult(context.Background(), id, store.Result{Succeeded: true})
		s.Require().NoError(err)
		s.env.SignalWorkflow(workflows.SignalSlotResult, workflows.SlotResult{Attempt: 1, Status: out.Status})
	}, 19*time.Minute)
	s.env.ExecuteWorkflow(workflows.DeviceSlotWorkflow, workflows.SlotInput{ExecutionID: id, TaskID: tds[0].TaskID, PC: "pc1", DispatcherID: "d"})

	s.Require().True(s.env.IsWorkflowCompleted())
	s.Require().NoError(s.env.GetWorkflowError())
	var out workflows.SlotOutcome
	s.Require().NoError(s.env.GetWorkflowResult(&out))
	s.Equal(domain.ExecutionSucceeded, out.Status)
	s.Empty(s.startedAt("TimeoutAttempt"), "the timer lost the race and never ran the timeout")
	s.Equal([]string{"CREATED#1", "SENT#1", "SUCCEEDED#1"}, s.events(id))
}

func (s *DeviceSuite) TestThreeTimeoutsThenFailedFinalDeviceErrorAndTargetShrinks() {
	_, tds := s.farm("pc1", 2, 2)
	s.Require().Len(tds, 2)
	id := tds[0].ID
	// The agent claims each attempt one minute after the previous deadline.
	for _, at := range []time.Duration{time.Minute, 22 * time.Minute, 43 * time.Minute} {
		s.env.RegisterDelayedCallback(func() { s.claimAndSignal("pc1", id) }, at)
	}
	s.env.ExecuteWorkflow(workflows.DeviceSlotWorkflow, workflows.SlotInput{ExecutionID: id, TaskID: tds[0].TaskID, PC: "pc1", DispatcherID: "d"})

	s.Require().True(s.env.IsWorkflowCompleted())
	s.Require().NoError(s.env.GetWorkflowError())
	var out workflows.SlotOutcome
	s.Require().NoError(s.env.GetWorkflowResult(&out))
	s.Equal(workflows.SlotOutcome{Status: domain.ExecutionFailedFinal, Attempt: 3, TimedOut: 3}, out)
	s.Equal([]time.Duration{21 * time.Minute, 42 * time.Minute, 63 * time.Minute}, s.startedAt("TimeoutAttempt"))
	s.Equal([]string{"CREATED#1", "SENT#1", "TIMEOUT#1", "RETRY_SCHEDULED#2", "SENT#2", "TIMEOUT#2",
		"RETRY_SCHEDULED#3", "SENT#3", "TIMEOUT#3", "FAILED_FINAL#3"}, s.events(id))

	ctx := context.Background()
	dev, err := s.store.GetDevice(ctx, tds[0].DeviceSerial)
	s.Require().NoError(err)
	s.Equal(domain.DeviceError, dev.Status)
	detail, err := s.store.GetPCDetail(ctx, "pc1")
	s.Require().NoError(err)
	s.Equal(int64(1), detail.Slots.Eligible)
	s.Equal(int64(1), detail.Slots.Target, "target shrank with the device in error")
	s.Equal(int64(1), detail.Slots.Running)

	// A result for the timed-out attempt is rejected and recorded.
	three := int32(3)
	_, err = s.store.ReportResult(ctx, id, store.Result{Succeeded: true, Attempt: &three})
	s.ErrorIs(err, store.ErrNotInFlight)
	s.Equal("LATE_RESULT#3", s.events(id)[10])
}

func (s *DeviceSuite) TestDispatcherActivatesNextTaskOnlyWhenCurrentIsFinal() {
	ctx := context.Background()
	t1, tds := s.farm("pc1", 5, 2)
	s.Require().Len(tds, 2)
	t2, err := s.store.CreateDeviceTask(ctx, store.NewDeviceTask{})
	s.Require().NoError(err)
	status := func(id int64) domain.DeviceTaskStatus {
		t, err := s.store.GetDeviceTask(ctx, id)
		s.Require().NoError(err)
		return t.Status
	}
	s.env.RegisterDelayedCallback(func() {
		cmds, err := s.store.Claim(ctx, "pc1", 5)
		s.Require().NoError(err)
		s.Require().Len(cmds, 2)
		_, err = s.store.ReportResult(ctx, cmds[0].ID, store.Result{Succeeded: true})
		s.Require().NoError(err)
		s.env.SignalWorkflow(workflows.SignalDispatcherCheck, nil)
	}, time.Minute)
	s.env.RegisterDelayedCallback(func() {
		s.Equal(domain.DeviceTaskRunning, status(t1.ID), "one execution of task 1 is still in flight")
		s.Equal(domain.DeviceTaskPending, status(t2.ID))
		out, err := s.store.ReportResult(ctx, tds[1].ID, store.Result{Error: "x", NotRetryable: true})
		s.Require().NoError(err)
		s.True(out.CheckTask)
		s.env.SignalWorkflow(workflows.SignalDispatcherCheck, nil)
	}, 2*time.Minute)
	s.env.RegisterDelayedCallback(func() {
		s.Equal(domain.DeviceTaskFailed, status(t1.ID), "one of its executions failed finally")
		s.Equal(domain.DeviceTaskRunning, status(t2.ID))
		// The new task was fanned out to the eligible device only (the other is in error).
		tds, err := s.store.DeviceExecutions(ctx, t2.ID, 0, 10)
		s.Require().NoError(err)
		s.Len(tds, 1)
		s.env.CancelWorkflow()
	}, 3*time.Minute)
	s.env.ExecuteWorkflow(workflows.DispatcherWorkflow, workflows.DispatcherInput{Poll: time.Hour})
	s.Require().True(s.env.IsWorkflowCompleted())
}

func (s *DeviceSuite) TestPCWorkflowRefillsOnSignal() {
	ctx := context.Background()
	_, tds := s.farm("pc1", 3, 2)
	s.Require().Len(tds, 2)
	s.env.RegisterDelayedCallback(func() {
		// A device added behind the engine's back (a raw insert, no refill) is picked up
		// when the PC workflow is told to refill.
		_, err := s.store.Pool.Exec(ctx, "INSERT INTO devices (pc_id, serial) SELECT id, 'late' FROM pcs WHERE name = 'pc1'")
		s.Require().NoError(err)
		s.env.SignalWorkflow(workflows.SignalNudgePC, nil)
	}, time.Minute)
	s.env.RegisterDelayedCallback(func() {
		d, err := s.store.GetPCDetail(ctx, "pc1")
		s.Require().NoError(err)
		s.Equal(int64(3), d.Slots.Running)
		s.env.CancelWorkflow()
	}, 2*time.Minute)
	s.env.ExecuteWorkflow(workflows.PCWorkflow, workflows.PCInput{PC: "pc1", Poll: time.Hour})
	s.Require().True(s.env.IsWorkflowCompleted())
}

func (s *DeviceSuite) TestFinalTimeoutRefillsExactlyOneSlot() {
	task, tds := s.farm("pc1", 2, 4)
	s.Require().Len(tds, 2, "capacity 2: two executions, no fan-out to all four devices")
	id := tds[0].ID
	for _, at := range []time.Duration{time.Minute, 22 * time.Minute, 43 * time.Minute} {
		s.env.RegisterDelayedCallback(func() { s.claimAndSignal("pc1", id) }, at)
	}
	s.env.ExecuteWorkflow(workflows.DeviceSlotWorkflow, workflows.SlotInput{ExecutionID: id, TaskID: task.ID, PC: "pc1", DispatcherID: "d"})
	s.Require().True(s.env.IsWorkflowCompleted())
	s.Require().NoError(s.env.GetWorkflowError())

	after, err := s.store.DeviceExecutions(context.Background(), task.ID, 0, 100)
	s.Require().NoError(err)
	s.Len(after, 3, "the slot freed by the final timeout was refilled with exactly one execution")
	s.Equal(domain.ExecutionCreated, after[2].Status)
	s.NotEqual(tds[0].DeviceSerial, after[2].DeviceSerial)
	s.NotEqual(tds[1].DeviceSerial, after[2].DeviceSerial)
	detail, err := s.store.GetPCDetail(context.Background(), "pc1")
	s.Require().NoError(err)
	s.Equal(int64(2), detail.Slots.Running)
	s.Equal(int64(2), detail.Slots.Target)
}
