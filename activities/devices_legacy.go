package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/tickgate/tickgate/store"
)

// Legacy: the activity of workflows.SlotDeadlineWorkflow, the per-slot timers that
// PCTimerWorkflow replaced. It goes with that workflow (see workflows/slot_timer_legacy.go
// for when).

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
