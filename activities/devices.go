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
	Settings domain.DeviceSettings
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

// CheckPCTimer is a PC timer's alarm: it times out every attempt in flight on the PC
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
