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

// ErrDeviceGone is the non-retryable error type of a device activity whose row (PC,
// execution) no longer exists: the workflow that called it ends.
const ErrDeviceGone = "DeviceGone"

// DeviceActivities are the device dispatch engine's SQL steps (docs/devices.md).
type DeviceActivities struct {
	Store *store.Store
	// Settings are the attempt limit and device timeout a task takes when the dispatcher
	// activates it: the worker's configuration in force.
	Settings store.DeviceSettings
	// SweepGrace is how long past its deadline an in-flight execution may stay before the
	// dispatcher's safety sweep times it out itself (its PC timer normally does it on
	// the dot). Default 1 minute.
	SweepGrace time.Duration
}

// AdvanceResult is what the dispatcher's step did.
type AdvanceResult struct {
	ActiveTaskID int64
	Finished     []int64
	Activated    []int64
	// Refilled is how many executions were created for a newly activated task.
	Refilled int
}

// Advance finishes the active task when it is done, activates the oldest pending one (D1)
// with the worker's settings and, in the same transaction, fills every PC's slots with it.
func (a *DeviceActivities) Advance(ctx context.Context) (AdvanceResult, error) {
	adv, err := a.Store.Advance(ctx, a.Settings)
	if err != nil {
		return AdvanceResult{}, err
	}
	return AdvanceResult{ActiveTaskID: adv.ActiveTaskID, Finished: adv.Finished, Activated: adv.Activated, Refilled: adv.Refilled}, nil
}

// SweepResult is what a safety sweep did.
type SweepResult struct {
	TimedOut  int
	Refilled  int
	CheckTask bool
}

// Sweep is the dispatcher's safety net: it times out in-flight executions well past their
// deadline (a PC timer never told) and fills every PC's free slots.
func (a *DeviceActivities) Sweep(ctx context.Context) (SweepResult, error) {
	grace := a.SweepGrace
	if grace <= 0 {
		grace = time.Minute
	}
	outs, err := a.Store.SweepOverdue(ctx, grace)
	if err != nil {
		return SweepResult{}, err
	}
	res := SweepResult{TimedOut: len(outs)}
	for _, o := range outs {
		res.CheckTask = res.CheckTask || o.CheckTask
	}
	res.Refilled, err = a.Store.RefillAll(ctx)
	return res, err
}

// RefillPC fills the free slots of one PC and returns how many executions it created.
func (a *DeviceActivities) RefillPC(ctx context.Context, pcName string) (int, error) {
	pc, err := a.Store.GetPC(ctx, pcName)
	if errors.Is(err, store.ErrNotFound) {
		return 0, temporal.NewNonRetryableApplicationError(fmt.Sprintf("pc %q is gone", pcName), ErrDeviceGone, err)
	}
	if err != nil {
		return 0, err
	}
	ids, err := a.Store.RefillPC(ctx, pc.ID)
	return len(ids), err
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
	// ExecutionID keeps its wire name of releases before the rename (TaskDeviceID): the
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

// PCTimerRef names the PC whose timer woke, and when (the workflow's clock): a deadline
// not after AsOf has passed.
type PCTimerRef struct {
	PC   string
	AsOf time.Time
}

// PCTimerCheck is what a PC's timer learned when it woke.
type PCTimerCheck struct {
	// Deadline is the earliest deadline in flight on the PC now, if any.
	Deadline *time.Time
	// TimedOut is set when this check timed an attempt out.
	TimedOut bool
	// CheckTask asks the dispatcher to re-check the task (see store.Outcome).
	CheckTask bool
}

// CheckPCTimer is a PC timer's wake-up: it times out every attempt in flight on the PC
// whose deadline passed — SQL decides the race with the agent's result — and returns the
// earliest deadline in flight there now.
func (a *DeviceActivities) CheckPCTimer(ctx context.Context, ref PCTimerRef) (PCTimerCheck, error) {
	res, err := a.Store.CheckPCTimer(ctx, ref.PC, ref.AsOf)
	if errors.Is(err, store.ErrNotFound) {
		return PCTimerCheck{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("pc %q is gone", ref.PC), ErrDeviceGone, err)
	}
	if err != nil {
		return PCTimerCheck{}, err
	}
	return PCTimerCheck{Deadline: res.Deadline, TimedOut: res.TimedOut > 0, CheckTask: res.CheckTask}, nil
}
