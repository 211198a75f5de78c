package deviceengine

import (
	"context"
	"sync"
	"time"

	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// Telling a PC's timer (workflows.PCTimerWorkflow, D3) of the deadlines a claim started.
// "Setting an alarm" is the PC timer's verb (the signal keeps its name, "wake-up"); "arming"
// is a schedule's (committing a fire ahead).

// alarmMargin is how far ahead an alarm a PC's timer was told must still be for a claim to
// rely on it instead of signalling: room for the time from this check to the claim's commit
// being seen (already committed here) and for clock skew between this process and the
// Temporal server's timers.
const alarmMargin = 2 * time.Second

// alarmLead is how long before an attempt's deadline the alarm told to its PC's timer is.
// The timer wakes there, finds the attempts in flight and sleeps until the earliest
// deadline among them, so a timeout still fires on its deadline; and claims told
// concurrently, out of order, whose deadlines lie within alarmLead before the told alarm's
// deadline need no signal of their own.
const alarmLead = time.Second

// tellPCTimer sets an alarm on the PC's timer for attempts just sent, after the answer:
// agents never wait on Temporal. The deadline itself is already committed (timeout_at), and
// the dispatcher's sweep times out an attempt whose timer was never told.
func (e *Engine) tellPCTimer(pc string, cmds []store.ClaimedCommand) {
	if e.starter != nil && len(cmds) > 0 {
		e.afterAnswer(time.Minute, func(ctx context.Context) { e.setPCTimerAlarm(ctx, pc, cmds) })
	}
}

// setPCTimerAlarm sets an alarm on the PC's timer alarmLead before the earliest deadline among
// the sent attempts, unless it already wakes in time (pcAlarms).
func (e *Engine) setPCTimerAlarm(ctx context.Context, pc string, cmds []store.ClaimedCommand) {
	var first *store.ClaimedCommand
	for i, cmd := range cmds {
		if cmd.TimeoutAt != nil && (first == nil || cmd.TimeoutAt.Before(*first.TimeoutAt)) {
			first = &cmds[i]
		}
	}
	now := time.Now()
	if first == nil || !e.alarms.needsSignal(pc, first.TimeoutAt.UTC(), now) {
		return
	}
	at := first.TimeoutAt.UTC().Add(-alarmLead)
	e.alarms.toldAt(pc, at, now)
	e.timerSignals <- struct{}{}
	defer func() { <-e.timerSignals }()
	w := workflows.PCTimerAlarm{ExecutionID: first.ID, Attempt: first.Attempt, At: at}
	if err := e.starter.SetPCTimerAlarm(ctx, pc, w); err != nil {
		e.alarms.forget(pc, at)
		e.logf("devices: %v", err)
	}
}

// pcAlarms remembers, per PC, the earliest alarm this process told the PC's timer that is
// still ahead (or is telling it: a signal in flight counts, so claims arriving while
// Temporal is slow do not each signal; a signal that fails is forgotten, and the claims
// that relied on it fall to the dispatcher's overdue sweep, as after an API crash). The
// timer wakes at every alarm it was told and then sleeps until the earliest deadline in
// flight on the PC, read in SQL. So a claim whose deadline is not before a told alarm
// still ahead needs no signal: the timer wakes by then, after the claim committed, and
// finds it. Another process's signals only add alarms, so several API processes stay
// correct; a restarted one has forgotten and signals again.
//
// One PC's claims for a timeout's length thus cost one signal, and an execution costs no
// Temporal call of its own.
type pcAlarms struct {
	mu  sync.Mutex
	pcs map[string]time.Time
}

// needsSignal reports whether a claim on pc of an attempt with deadline d must tell the
// PC's timer (now: this process's clock after the claim committed).
func (a *pcAlarms) needsSignal(pc string, d, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	told := a.pcs[pc]
	return told.IsZero() || !told.After(now.Add(alarmMargin)) || told.After(d)
}

// toldAt records that pc's timer was told alarm w (now: this process's clock): it is
// kept while it is the earliest one still ahead.
func (a *pcAlarms) toldAt(pc string, w, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pcs == nil {
		a.pcs = map[string]time.Time{}
	}
	told := a.pcs[pc]
	if told.IsZero() || w.Before(told) || !told.After(now) {
		a.pcs[pc] = w
	}
}

// forget drops what toldAt recorded for pc if it is still alarm w: telling it failed.
func (a *pcAlarms) forget(pc string, w time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if told, ok := a.pcs[pc]; ok && told.Equal(w) {
		delete(a.pcs, pc)
	}
}
