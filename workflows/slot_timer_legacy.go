package workflows

import (
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
)

// Legacy: the per-slot timers, and PC timers under their old name. Delete this file, its
// registration (workflows/registry.go), its histories (workflows/testdata/slot_deadline_*.json)
// and the CheckSlot activity (activities/devices_legacy.go) once no SlotDeadlineWorkflow is
// open in any deployment:
//
//	temporal workflow count --query 'WorkflowType = "SlotDeadlineWorkflow" AND ExecutionStatus = "Running"'
//
// Nothing starts one any more: PCTimerWorkflow (pc_timer.go) is the PC's timer, under the id
// pc-timer/<pc>. Those already running — numbered slots 1..capacity (slot/<pc>/<n>) and slot 0,
// the PC's timer under its old id (slot/<pc>/0) — time out the deadlines they were told and
// find in SQL; they do not end by themselves while their PC exists (an idle one re-checks
// hourly). Once a device timeout has passed since every API process was upgraded, what
// they watched has timed out or ended, and an operator may terminate them (docs/operations.md,
// "Upgrading past the legacy device timers").

// SignalSlotDeadline tells a legacy slot timer a deadline (payload SlotDeadline).
const SignalSlotDeadline = "deadline"

// SlotDeadline is the payload of SignalSlotDeadline.
type SlotDeadline struct {
	ExecutionID int64 `json:"TaskDeviceID"` // its wire name before the rename
	Attempt     int32
	TimeoutAt   time.Time
}

// SlotDeadlineInput started (or continues) a legacy slot timer.
type SlotDeadlineInput struct {
	PC string
	// Slot is the numbered slot watched, or 0 for every slot of the PC.
	Slot int32
	// DispatcherID is the dispatcher to nudge when a timeout may have finished the task.
	DispatcherID string
	// Deadline and Told carry the workflow's wake-ups over a continue-as-new (see slotTimer).
	Deadline time.Time
	Told     []time.Time
	// IdlePoll is how long an idle slot sleeps before checking that its PC still exists.
	// Default 1 hour.
	IdlePoll time.Duration
}

// slotIterations bounds one run's history before it continues as new.
const slotIterations = 200

// SlotDeadlineWorkflow (legacy) is the durable timer of one numbered slot of a PC or, for
// slot 0, of every slot of the PC (what PCTimerWorkflow is now) (D3): it
// sleeps until the deadline of the attempt in flight (the earliest one on the PC), and then
// times it out if the agent's result has not been recorded meanwhile (CheckSlot: SQL decides
// that race, so a result needs no signal). When it wakes it reads SQL again and sleeps until
// the deadline of whatever is in flight now — a retry, or the next execution.
//
// The API of earlier versions signalled it the deadlines of the attempts it handed out;
// the workflow wakes at every one it was told.
func SlotDeadlineWorkflow(ctx workflow.Context, in SlotDeadlineInput) error {
	if in.IdlePoll <= 0 {
		in.IdlePoll = time.Hour
	}
	t := &slotTimer{in: in, deadline: in.Deadline, told: in.Told, deadlines: workflow.GetSignalChannel(ctx, SignalSlotDeadline)}
	return t.run(ctx)
}

// slotTimer is a slot workflow's state: deadline is the deadline in flight the last check
// found (zero: none), told the deadlines signalled that have not passed, in order. The
// workflow wakes at the earliest of them, so it keeps every wake-up it was promised.
type slotTimer struct {
	in        SlotDeadlineInput
	deadline  time.Time
	told      []time.Time
	deadlines workflow.ReceiveChannel
	handlers  handlerCount
}

func (t *slotTimer) run(ctx workflow.Context) error {
	for i := 0; ; i++ {
		woke, err := t.sleep(ctx)
		if err != nil {
			return err
		}
		if woke {
			done, err := t.check(ctx)
			if err != nil || done {
				return err
			}
		}
		if i+1 >= slotIterations || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			t.drainSignals()
			if err := t.handlers.awaitIdle(ctx); err != nil {
				return err
			}
			in := t.in
			in.Deadline, in.Told = t.deadline, t.told
			return workflow.NewContinueAsNewError(ctx, SlotDeadlineWorkflow, in)
		}
	}
}

// onDeadline keeps a signalled deadline as a wake-up.
func (t *slotTimer) onDeadline(d SlotDeadline) {
	i, found := slices.BinarySearchFunc(t.told, d.TimeoutAt, time.Time.Compare)
	if !found {
		t.told = slices.Insert(t.told, i, d.TimeoutAt)
	}
}

func (t *slotTimer) drainSignals() {
	var d SlotDeadline
	for t.deadlines.ReceiveAsync(&d) {
		t.onDeadline(d)
	}
}

// next is the earliest wake-up, zero when there is none.
func (t *slotTimer) next() time.Time {
	next := t.deadline
	if len(t.told) > 0 && (next.IsZero() || t.told[0].Before(next)) {
		next = t.told[0]
	}
	return next
}

// sleep waits for the next wake-up (or, with none, the idle poll) or a signal; woke says
// the timer fired.
func (t *slotTimer) sleep(ctx workflow.Context) (woke bool, err error) {
	wait, summary := t.in.IdlePoll, fmt.Sprintf("slot %d of PC %s is idle: re-check that the PC exists", t.in.Slot, t.in.PC)
	if next := t.next(); !next.IsZero() {
		wait = max(next.Sub(workflow.Now(ctx)), 0)
		summary = fmt.Sprintf("deadline %s in slot %d of PC %s", next.UTC().Format(time.RFC3339), t.in.Slot, t.in.PC)
	}
	tctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	timer := workflow.NewTimerWithOptions(tctx, wait, workflow.TimerOptions{Summary: summary})
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(t.deadlines, func(c workflow.ReceiveChannel, _ bool) {
		defer t.handlers.track()()
		var d SlotDeadline
		c.Receive(ctx, &d)
		t.onDeadline(d)
	})
	sel.AddFuture(timer, func(f workflow.Future) { woke = f.Get(ctx, nil) == nil })
	sel.Select(ctx)
	return woke, nil
}

// check runs at a wake-up: it drops the wake-ups that passed, times out what is overdue
// in the slot and keeps the deadline in flight there now. done says the PC is gone.
func (t *slotTimer) check(ctx workflow.Context) (done bool, err error) {
	now := workflow.Now(ctx)
	for len(t.told) > 0 && !t.told[0].After(now) {
		t.told = t.told[1:]
	}
	var res activities.SlotCheck
	err = workflow.ExecuteActivity(deviceActivityCtx(ctx), deviceActs.CheckSlot,
		activities.SlotRef{PC: t.in.PC, Slot: t.in.Slot, AsOf: now}).Get(ctx, &res)
	if isDeviceGone(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if res.CheckTask {
		nudgeDispatcher(ctx, t.in.DispatcherID)
	}
	t.deadline = time.Time{}
	if res.Deadline != nil {
		t.deadline = *res.Deadline
	}
	return false, nil
}
