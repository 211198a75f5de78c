package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
)

// Legacy: the per-execution timer of versions before numbered slots (task-device/<id>),
// which nothing starts any more. Those still open end with their execution; the worker
// registers it (worker/devices_legacy.go) only so that they go on and their histories
// (testdata/device_slot_*.json) replay. Delete this file, its registration, its histories
// and its activities (TimeoutAttempt and GetSlotState, activities/devices_legacy.go) once
// none is open:
//
//	temporal workflow count --query 'WorkflowType = "DeviceSlotWorkflow" AND ExecutionStatus = "Running"'

// Signals of the legacy slot workflow.
const (
	// SignalSlotSent tells a slot workflow an attempt was sent (claimed by the agent).
	SignalSlotSent = "sent"
	// SignalSlotResult tells a slot workflow the API recorded the agent's result.
	SignalSlotResult = "result"
)

// SlotWorkflowID is the id of one device execution's legacy workflow.
func SlotWorkflowID(scope string, deviceExecutionID int64) string {
	return fmt.Sprintf("%stask-device/%d", scope, deviceExecutionID)
}

// SlotSent is the payload of SignalSlotSent: the attempt out on the device and its
// deadline (sent_at + TICKGATE_DEVICE_TIMEOUT, from SQL).
type SlotSent struct {
	Attempt   int32
	SentAt    time.Time
	TimeoutAt time.Time
}

// SlotResult is the payload of SignalSlotResult: the execution's status after the API
// recorded a result for Attempt (RETRY_SCHEDULED, SUCCEEDED, FAILED_FINAL).
type SlotResult struct {
	Attempt int32
	Status  domain.ExecutionStatus
}

// SlotInput starts a slot workflow.
type SlotInput struct {
	// ExecutionID keeps its wire name of versions before the rename (TaskDeviceID): running
	// workflows decode the input they were started with.
	ExecutionID int64 `json:"TaskDeviceID"`
	TaskID      int64
	PC          string
	// DispatcherID is the dispatcher to nudge when the task may be done.
	DispatcherID string
	// Poll is how often a slot waiting for its next send re-reads its state (a canceled
	// execution ends its workflow this way). Default 5 minutes.
	Poll time.Duration
}

// SlotOutcome is how a slot workflow ended.
type SlotOutcome struct {
	Status   domain.ExecutionStatus
	Attempt  int32
	TimedOut int // attempts this workflow timed out
}

// DeviceSlotWorkflow (legacy) follows one device execution: for each attempt sent to the
// device, a durable timer set to the attempt's deadline (20 minutes after SENT, not after
// CREATED) races the agent's result. The timer firing runs TimeoutAttempt, whose
// conditional update in SQL decides the race; a result recorded by the API arrives as a
// signal and cancels the timer. The workflow ends when the execution is final.
func DeviceSlotWorkflow(ctx workflow.Context, in SlotInput) (SlotOutcome, error) {
	if in.Poll <= 0 {
		in.Poll = 5 * time.Minute
	}
	s := &slot{in: in, sentCh: workflow.GetSignalChannel(ctx, SignalSlotSent), resCh: workflow.GetSignalChannel(ctx, SignalSlotResult)}
	return s.run(ctx)
}

type slot struct {
	in       SlotInput
	sentCh   workflow.ReceiveChannel
	resCh    workflow.ReceiveChannel
	cur      *SlotSent // the attempt in flight, nil while waiting for a send
	resolved int32     // the highest attempt known to be resolved
	out      SlotOutcome
	handlers handlerCount // the sent and result handlers mid-way (see handlerCount)
}

func (s *slot) run(ctx workflow.Context) (SlotOutcome, error) {
	for {
		var done bool
		var err error
		if s.cur == nil {
			done, err = s.waitForSend(ctx)
		} else {
			done, err = s.waitForResult(ctx)
		}
		if err != nil {
			if isDeviceGone(err) {
				s.out.Status = "GONE"
				return s.out, nil
			}
			return s.out, err
		}
		if done {
			return s.out, s.handlers.awaitIdle(ctx)
		}
	}
}

// onSent accepts a send of a newer attempt than any resolved one.
func (s *slot) onSent(sig SlotSent) {
	if sig.Attempt > s.resolved && (s.cur == nil || sig.Attempt > s.cur.Attempt) {
		s.cur = &sig
	}
}

// onResult applies a result the API recorded; it reports whether the execution is final.
func (s *slot) onResult(r SlotResult) bool {
	if r.Attempt > s.resolved {
		s.resolved = r.Attempt
	}
	if s.cur != nil && s.cur.Attempt <= r.Attempt {
		s.cur = nil
	}
	if activities.IsFinalStatus(r.Status) {
		s.out.Status, s.out.Attempt = r.Status, r.Attempt
		return true
	}
	return false
}

// onState applies a state read from SQL; it reports whether the execution is final.
func (s *slot) onState(st activities.SlotState) bool {
	if st.Final() {
		s.out.Status, s.out.Attempt = st.Status, st.Attempt
		return true
	}
	if st.InFlight() && st.TimeoutAt != nil && st.Attempt > s.resolved {
		sent := SlotSent{Attempt: st.Attempt, TimeoutAt: *st.TimeoutAt}
		if st.SentAt != nil {
			sent.SentAt = *st.SentAt
		}
		s.onSent(sent)
	}
	return false
}

// awaitSignalOr handles the next sent or result signal, or the timer firing: fired says the
// timer fired, final that a result ended the execution.
func (s *slot) awaitSignalOr(ctx workflow.Context, timer workflow.Future) (fired, final bool) {
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(s.sentCh, func(c workflow.ReceiveChannel, _ bool) {
		defer s.handlers.track()()
		var sig SlotSent
		c.Receive(ctx, &sig)
		s.onSent(sig)
	})
	sel.AddReceive(s.resCh, func(c workflow.ReceiveChannel, _ bool) {
		defer s.handlers.track()()
		var r SlotResult
		c.Receive(ctx, &r)
		final = s.onResult(r)
	})
	sel.AddFuture(timer, func(f workflow.Future) { fired = f.Get(ctx, nil) == nil })
	sel.Select(ctx)
	return fired, final
}

func (s *slot) waitForSend(ctx workflow.Context) (bool, error) {
	tctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	timer := workflow.NewTimerWithOptions(tctx, s.in.Poll, workflow.TimerOptions{Summary: "re-check while waiting for the next send"})
	polled, final := s.awaitSignalOr(ctx, timer)
	if final {
		return true, nil
	}
	if polled {
		var st activities.SlotState
		if err := workflow.ExecuteActivity(deviceActivityCtx(ctx), deviceActs.GetSlotState, s.in.ExecutionID).Get(ctx, &st); err != nil {
			return false, err
		}
		return s.onState(st), nil
	}
	return false, nil
}

func (s *slot) waitForResult(ctx workflow.Context) (bool, error) {
	cur := *s.cur
	wait := cur.TimeoutAt.Sub(workflow.Now(ctx))
	if wait < 0 {
		wait = 0
	}
	tctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	timer := workflow.NewTimerWithOptions(tctx, wait, workflow.TimerOptions{
		Summary: fmt.Sprintf("attempt %d deadline %s", cur.Attempt, cur.TimeoutAt.UTC().Format(time.RFC3339)),
	})
	fired, final := s.awaitSignalOr(ctx, timer)
	if final || !fired {
		return final, nil
	}
	var st activities.SlotState
	err := workflow.ExecuteActivity(deviceActivityCtx(ctx), deviceActs.TimeoutAttempt,
		activities.TimeoutInput{ExecutionID: s.in.ExecutionID, Attempt: cur.Attempt}).Get(ctx, &st)
	if err != nil {
		return false, err
	}
	if !st.Stale {
		s.out.TimedOut++
	}
	if cur.Attempt > s.resolved {
		s.resolved = cur.Attempt
	}
	if s.cur != nil && s.cur.Attempt == cur.Attempt {
		s.cur = nil
	}
	if st.CheckTask {
		nudgeDispatcher(ctx, s.in.DispatcherID)
	}
	return s.onState(st), nil
}
