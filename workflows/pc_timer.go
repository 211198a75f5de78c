package workflows

import (
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
)

// SignalPCTimerAlarm tells a PC's timer an alarm (payload PCTimerAlarm): the API sends
// it when it hands out attempts whose deadlines the timer may not wake for in time.
const SignalPCTimerAlarm = "wake-up"

// PCTimerAlarm is the payload of SignalPCTimerAlarm: wake at At at the latest. The
// attempt that asked for it is named for the record; the timer reads what is in flight
// from SQL when it wakes.
type PCTimerAlarm struct {
	ExecutionID int64
	Attempt     int32
	At          time.Time
}

// PCTimerInput starts (or continues) a PC's timer.
type PCTimerInput struct {
	PC string
	// DispatcherID is the dispatcher to nudge when a timeout may have finished the task.
	DispatcherID string
	// Deadline and Alarms carry the timer's alarms over a continue-as-new (see pcTimer).
	Deadline time.Time
	Alarms   []time.Time `json:"Wakeups"` // its wire name before the rename
	// IdlePoll is how long an idle timer sleeps before checking that its PC still exists.
	// Default 1 hour.
	IdlePoll time.Duration
}

// pcTimerIterations bounds one run's history before it continues as new.
const pcTimerIterations = 200

// PCTimerWorkflow is a PC's timer (D3; docs/devices.md): the one durable timer that times
// out the attempts in flight on every slot of the PC. It sleeps until the earliest
// deadline in flight on the PC, and then times out what is overdue if the agent's result
// has not been recorded meanwhile (CheckPCTimer: SQL decides that race, so a result needs
// no signal). When it wakes it reads SQL again and sleeps until the earliest deadline in
// flight now — a retry, or the next execution.
//
// The API sets an alarm on it when it hands out attempts, unless it already set one
// that is still ahead and not later than the new deadline: the timer wakes at every
// alarm it was told, so by then at the latest it finds the new attempts in SQL and
// sleeps until their deadlines. One signal thus covers a run of executions, and an
// execution costs no Temporal call of its own.
func PCTimerWorkflow(ctx workflow.Context, in PCTimerInput) error {
	if in.IdlePoll <= 0 {
		in.IdlePoll = time.Hour
	}
	t := &pcTimer{in: in, deadline: in.Deadline, alarms: in.Alarms, signals: workflow.GetSignalChannel(ctx, SignalPCTimerAlarm)}
	return t.run(ctx)
}

// pcTimer is a PC timer's state: deadline is the earliest deadline in flight the last
// check found (zero: none), alarms the alarms told that have not passed, in order. The
// timer wakes at the earliest of them, so it keeps every alarm it was told.
type pcTimer struct {
	in       PCTimerInput
	deadline time.Time
	alarms   []time.Time
	signals  workflow.ReceiveChannel
	handlers handlerCount
}

func (t *pcTimer) run(ctx workflow.Context) error {
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
		if i+1 >= pcTimerIterations || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			t.drainSignals()
			if err := t.handlers.awaitIdle(ctx); err != nil {
				return err
			}
			in := t.in
			in.Deadline, in.Alarms = t.deadline, t.alarms
			return workflow.NewContinueAsNewError(ctx, PCTimerWorkflow, in)
		}
	}
}

// onAlarm keeps an alarm the timer was told.
func (t *pcTimer) onAlarm(w PCTimerAlarm) {
	i, found := slices.BinarySearchFunc(t.alarms, w.At, time.Time.Compare)
	if !found {
		t.alarms = slices.Insert(t.alarms, i, w.At)
	}
}

func (t *pcTimer) drainSignals() {
	var w PCTimerAlarm
	for t.signals.ReceiveAsync(&w) {
		t.onAlarm(w)
	}
}

// next is the earliest alarm, zero when there is none.
func (t *pcTimer) next() time.Time {
	next := t.deadline
	if len(t.alarms) > 0 && (next.IsZero() || t.alarms[0].Before(next)) {
		next = t.alarms[0]
	}
	return next
}

// sleep waits for the next alarm (or, with none, the idle poll) or a signal; woke says
// the timer fired.
func (t *pcTimer) sleep(ctx workflow.Context) (woke bool, err error) {
	wait, summary := t.in.IdlePoll, fmt.Sprintf("PC %s is idle: re-check that it exists", t.in.PC)
	if next := t.next(); !next.IsZero() {
		wait = max(next.Sub(workflow.Now(ctx)), 0)
		summary = fmt.Sprintf("wake-up %s on PC %s", next.UTC().Format(time.RFC3339), t.in.PC)
	}
	tctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	timer := workflow.NewTimerWithOptions(tctx, wait, workflow.TimerOptions{Summary: summary})
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(t.signals, func(c workflow.ReceiveChannel, _ bool) {
		defer t.handlers.track()()
		var w PCTimerAlarm
		c.Receive(ctx, &w)
		t.onAlarm(w)
	})
	sel.AddFuture(timer, func(f workflow.Future) { woke = f.Get(ctx, nil) == nil })
	sel.Select(ctx)
	return woke, nil
}

// check runs at an alarm: it drops the alarms that passed, times out what is overdue
// on the PC and keeps the earliest deadline in flight there now. done says the PC is gone.
func (t *pcTimer) check(ctx workflow.Context) (done bool, err error) {
	now := workflow.Now(ctx)
	for len(t.alarms) > 0 && !t.alarms[0].After(now) {
		t.alarms = t.alarms[1:]
	}
	var res activities.PCTimerCheck
	err = workflow.ExecuteActivity(deviceActivityCtx(ctx), deviceActs.CheckPCTimer,
		activities.PCTimerRef{PC: t.in.PC, AsOf: now}).Get(ctx, &res)
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
