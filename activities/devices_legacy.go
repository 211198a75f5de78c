package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store"
)

// Legacy: the activities of the device timers of earlier versions, which nothing starts any
// more. Each goes with its workflow:
//
//   - CheckSlot, of workflows.SlotDeadlineWorkflow, the per-slot timers that PCTimerWorkflow
//     replaced (see workflows/slot_timer_legacy.go for when);
//   - TimeoutAttempt and GetSlotState, of workflows.DeviceSlotWorkflow, the per-execution
//     timer of versions before numbered slots (workflows/device_slot_legacy.go).

// SlotRef names one numbered slot of a PC, or with Slot 0 every slot of the PC (the PC's
// timer), checked as of a time.
type SlotRef struct {
	PC   string
	Slot int32
	// AsOf is when the slot's timer woke (the workflow's clock): a deadline not after it
	// has passed.
	AsOf time.Time
}

// SlotCheck is what a slot's timer learned when it woke.
type SlotCheck struct {
	// Deadline is the deadline of the attempt in flight in the slot now, if any.
	Deadline *time.Time
	// TimedOut is set when this check timed an attempt out.
	TimedOut bool
	// CheckTask asks the dispatcher to re-check the task (see store.Outcome).
	CheckTask bool
}

// CheckSlot times out the attempt in flight in the slot if its deadline passed — SQL
// decides the race with the agent's result — and returns the deadline of what is in
// flight there now.
func (a *DeviceActivities) CheckSlot(ctx context.Context, ref SlotRef) (SlotCheck, error) {
	if ref.Slot == 0 {
		return a.checkPC(ctx, ref)
	}
	res, err := a.Store.CheckSlot(ctx, ref.PC, ref.Slot, ref.AsOf)
	if errors.Is(err, store.ErrNotFound) {
		return SlotCheck{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("pc %q is gone", ref.PC), ErrDeviceGone, err)
	}
	if err != nil {
		return SlotCheck{}, err
	}
	out := SlotCheck{Deadline: res.Deadline}
	if res.TimedOut != nil {
		out.TimedOut, out.CheckTask = true, res.TimedOut.CheckTask
	}
	return out, nil
}

// checkPC is CheckSlot for slot 0: CheckPCTimer.
func (a *DeviceActivities) checkPC(ctx context.Context, ref SlotRef) (SlotCheck, error) {
	res, err := a.CheckPCTimer(ctx, PCTimerRef{PC: ref.PC, AsOf: ref.AsOf})
	return SlotCheck(res), err
}

// SlotState is an execution's state as its slot workflow sees it.
type SlotState struct {
	Status    domain.ExecutionStatus
	Attempt   int32
	SentAt    *time.Time
	TimeoutAt *time.Time
	// CheckTask asks the dispatcher to re-check the task (see store.Outcome).
	CheckTask bool
	// Stale: the timeout found the attempt already resolved and changed nothing.
	Stale bool
}

// Final reports whether the execution is over.
func (s SlotState) Final() bool { return IsFinalStatus(s.Status) }

// InFlight reports whether an attempt is out on the device.
func (s SlotState) InFlight() bool {
	return s.Status == domain.ExecutionSent || s.Status == domain.ExecutionAcked
}

// TimeoutInput names the attempt whose deadline passed.
type TimeoutInput struct {
	// ExecutionID keeps its wire name of versions before the rename (TaskDeviceID): the
	// input of an activity scheduled before an upgrade decodes after it.
	ExecutionID int64 `json:"TaskDeviceID"`
	Attempt     int32
}

// TimeoutAttempt marks the attempt TIMEOUT if it is still in flight — then RETRY_SCHEDULED
// or FAILED_FINAL (device error, slot refilled) — and otherwise changes nothing: SQL
// decides the race between the agent's result and the timer.
func (a *DeviceActivities) TimeoutAttempt(ctx context.Context, in TimeoutInput) (SlotState, error) {
	out, err := a.Store.TimeoutAttempt(ctx, in.ExecutionID, in.Attempt)
	if errors.Is(err, store.ErrNotFound) {
		return SlotState{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("execution %d is gone", in.ExecutionID), ErrDeviceGone, err)
	}
	if err != nil {
		return SlotState{}, err
	}
	st := SlotState{Status: out.Status, Attempt: out.Attempt, CheckTask: out.CheckTask, Stale: out.Stale}
	if out.Stale && (out.Status == domain.ExecutionSent || out.Status == domain.ExecutionAcked) {
		// A newer attempt is out: hand its deadline to the workflow.
		return a.GetSlotState(ctx, in.ExecutionID)
	}
	return st, nil
}

// GetSlotState reads an execution's state.
func (a *DeviceActivities) GetSlotState(ctx context.Context, id int64) (SlotState, error) {
	td, err := a.Store.GetDeviceExecution(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return SlotState{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("execution %d is gone", id), ErrDeviceGone, err)
	}
	if err != nil {
		return SlotState{}, err
	}
	return SlotState{Status: td.Status, Attempt: td.Attempt, SentAt: td.SentAt, TimeoutAt: td.TimeoutAt}, nil
}

// IsFinalStatus reports whether an execution status is final, for the per-execution
// DeviceSlotWorkflow. It also takes "CANCELLED", the spelling before migration 00044: an
// activity result or signal recorded in a history before the upgrade carries it, and the
// workflow must take the same branch when it replays that history.
func IsFinalStatus(status domain.ExecutionStatus) bool {
	return domain.ExecutionFinal(status) || status == canceledBefore00044
}

// canceledBefore00044 is how ExecutionCanceled was spelled before migration 00044.
const canceledBefore00044 domain.ExecutionStatus = "CANCELLED"
