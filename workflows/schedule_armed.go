package workflows

import (
	"errors"
	"hash/fnv"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
)

// armedFiresChange versions arming an event fire ahead of its tick (see armTime):
// histories recorded before it fire every tick at the tick.
const armedFiresChange = "armed-event-fires"

// armedWindowsChange versions arming ticks closer together than armLead in windows (see
// armTime): histories recorded before it fire such ticks at the tick.
const armedWindowsChange = "armed-fire-windows"

// armSpanByLoadChange versions arming every event fire in windows whose span (and the spread
// of their arming times) grows with how many schedules share the tick (see armSpan):
// histories recorded before it armed a tick alone 30–50 s ahead, and windows of 20 s.
const armSpanByLoadChange = "arm-span-by-load"

// armedStartsChange versions arming a workflow action's tick by starting its target ahead
// with Temporal's start delay (see armTime, armStart): histories recorded before it start
// every target at its tick.
const armedStartsChange = "armed-workflow-starts"

// Arming (issue 13). Many schedules sharing a tick would all wake, and all commit their
// fire, in the same second; an event action needs nothing from the moment of its tick, so
// its fire is committed ahead instead — spread over a window — and made visible at the tick
// by the worker's releaser (store.Releaser), one statement for every due fire.
const (
	// armLead is how long before its fire time at the latest a tick is armed.
	armLead = 30 * time.Second
	// armSpread spreads the arming of ticks that share a time over [fire − lead − spread,
	// fire − lead), by a hash of (schedule, tick), so replays agree.
	armSpread = 20 * time.Second
	// armMinAhead: a tick is only armed while its fire time is at least this far ahead,
	// so the arming commits before it; a later one fires at the tick as before.
	armMinAhead = 5 * time.Second
	// armStartMinAhead: a workflow action's target is started ahead while its tick is at
	// least this far off — a start delay only needs the start to reach Temporal before it
	// ends — so ticks closer together than armLead (every few seconds) are armed one at a
	// time, each once the one before it has fired.
	armStartMinAhead = time.Second

	// Ticks closer together than armLead (an every-second schedule) are armed in windows:
	// one transaction and one workflow task for every few seconds of ticks instead of one
	// per tick. A window is armed armWindowLead before its first fire, less a spread of up
	// to armWindowSpread by a hash of (schedule, first tick) so that schedules sharing a
	// grid do not all wake together, and holds the ticks firing up to armWindowSpan after
	// that lead (at most armWindowMax of them).
	armWindowLead   = 10 * time.Second
	armWindowSpread = 5 * time.Second
	armWindowSpan   = 20 * time.Second
	armWindowMax    = 100

	// Under armSpanByLoadChange an event schedule arms every fire in windows: a window is
	// armed armWindowLead before its first fire, less a hashed offset within the span, and
	// holds the fires up to armWindowLead + span ahead (at most armWindowMaxByLoad). The span
	// grows with the schedules due in the same second, n: n / armRate seconds, at least
	// armWindowSpan and at most armSpanMax, so that arming all of them takes about armRate
	// workflow tasks a second, whatever n is — the arming work fits the machine, and a
	// burst of ten thousand costs no more per second than one of a thousand.
	armRate            = 50
	armSpanMax         = 15 * time.Minute
	armWindowMaxByLoad = 1000
)

// ArmedFire is the fire a schedule armed last: committed ahead, visible at FireAt. Earlier
// are the fires armed before it that were still pending when it was armed (a window's),
// oldest first. Before is the watermark before the first of them, restored if a command
// retracts them all.
type ArmedFire struct {
	Tick    time.Time
	FireAt  time.Time
	Before  time.Time
	Earlier []activities.ArmedTick `json:",omitempty"`
	// WorkflowID and RunID are set for a workflow action's fire: its target was started
	// ahead, with a start delay, and RunID is among the running runs from then on.
	WorkflowID string `json:",omitempty"`
	RunID      int64  `json:",omitempty"`
}

// all lists the armed fires, oldest first.
func (a *ArmedFire) all() []activities.ArmedTick {
	return append(append([]activities.ArmedTick(nil), a.Earlier...), activities.ArmedTick{Tick: a.Tick, FireAt: a.FireAt})
}

// armedFires is the ArmedFire of fires, oldest first (nil: none).
func armedFires(fires []activities.ArmedTick, before time.Time) *ArmedFire {
	if len(fires) == 0 {
		return nil
	}
	last := fires[len(fires)-1]
	return &ArmedFire{Tick: last.Tick, FireAt: last.FireAt, Before: before, Earlier: fires[:len(fires)-1]}
}

// armOffset is the tick's deterministic place in the arming window.
func armOffset(schedule string, tick time.Time, spread time.Duration) time.Duration {
	return spreadOffset("arm/", schedule, tick, spread)
}

// armsByLoad reports whether event fires are armed in windows spread by load
// (armSpanByLoadChange).
func (w *scheduleWorkflow) armsByLoad(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, armSpanByLoadChange, workflow.DefaultVersion, 1) != workflow.DefaultVersion
}

// armSpan is how far a window reaches beyond its lead, and how widely the armings of ticks
// shared by many schedules are spread: it grows with the schedules due in the same second as
// the last fire armed (see armRate).
func (w *scheduleWorkflow) armSpan() time.Duration {
	return min(max(time.Duration(w.carry.DueTogether)*time.Second/armRate, armWindowSpan), armSpanMax)
}

// dueTogether keeps the schedules due with this one's tick: the newest count, but never
// below fifteen sixteenths of the last one. A window whose first tick lies beyond the next
// one counts short (schedules that have not armed that far yet show their earlier fire),
// and the span must not collapse on such a count; a true drop still shows within a few
// windows.
func dueTogether(last, counted int64) int64 {
	return max(counted, last-last/16)
}

// armSpread is over how long the single armings of a shared tick are spread: armSpread, or
// for a workflow action's starts (armed alone) the span by load, so that many of them are
// not all armed in the same seconds. It stays inside the time from the tick before (the
// watermark) to the lead, so that no arming is pulled back onto that tick.
func (w *scheduleWorkflow) armSpread(starts bool, fireAt time.Time) time.Duration {
	if !starts || w.carry.DueTogether == 0 {
		return armSpread
	}
	room := fireAt.Sub(w.carry.Watermark) - armLead - armMinAhead
	return max(min(w.armSpan(), room), armSpread)
}

// spreadOffset hashes (schedule, tick) into [0, spread).
func spreadOffset(kind, schedule string, tick time.Time, spread time.Duration) time.Duration {
	h := fnv.New64a()
	_, _ = h.Write([]byte(kind + schedule + "/"))
	_, _ = h.Write([]byte(tick.UTC().Format(time.RFC3339Nano)))
	return time.Duration(h.Sum64() % uint64(spread))
}

// armTime is when the tick firing at fireAt is armed; ok is false when it fires at its
// tick instead. Only a tick that no policy has to decide at its time is armed:
// skip_if_successful needs the runs up to the tick, a rescheduled tick fires as the
// reschedule says, and a workflow action's overlap policy must be one whose decision
// cannot change before the tick (see startFixed). A tick at least armLead after the one
// before is armed alone, once that one's fire time has come; an event action's ticks
// closer together are armed in windows (window is true), a workflow action's one at a
// time, each once the one before has fired (armStartMinAhead).
func (w *scheduleWorkflow) armTime(ctx workflow.Context, tick, fireAt time.Time) (at time.Time, window, ok bool) {
	if w.def.SkipIfSuccessful || w.carry.Paused || w.carry.Rescheduled != nil {
		return time.Time{}, false, false
	}
	starts := w.def.Action.Kind == domain.ActionWorkflow
	if starts && !w.startFixed() {
		return time.Time{}, false, false
	}
	// GetVersion only when a tick could be armed, so other histories carry no marker.
	if !starts && w.armsByLoad(ctx) {
		return fireAt.Add(-armWindowLead - spreadOffset("window/", w.def.Name, tick, w.armSpan())), true, true
	}
	at = fireAt.Add(-armLead - armOffset(w.def.Name, tick, w.armSpread(starts, fireAt)))
	if w.carry.Watermark.After(at) {
		at = w.carry.Watermark // not before the tick it follows (or the schedule's creation, a resume)
	}
	if a := w.carry.Armed; a != nil && a.FireAt.After(at) {
		at = a.FireAt
	}
	if fireAt.Sub(at) >= armLead || (starts && fireAt.Sub(at) >= armStartMinAhead) {
		// GetVersion only when a tick could be armed, so other histories carry no marker.
		change := armedFiresChange
		if starts {
			change = armedStartsChange
		}
		if workflow.GetVersion(ctx, change, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
			return time.Time{}, false, false
		}
		return at, false, true
	}
	if starts || workflow.GetVersion(ctx, armedWindowsChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return time.Time{}, false, false
	}
	// Not held back by the fires armed before: they are committed, the window follows them.
	return fireAt.Add(-armWindowLead - spreadOffset("window/", w.def.Name, tick, armWindowSpread)), true, true
}

// armIfDue arms the next tick (or the window it starts) when its arming time has come; it
// reports whether it did, and otherwise when to wake (zero: at the fire).
func (w *scheduleWorkflow) armIfDue(ctx workflow.Context, tick, fireAt time.Time) (armed bool, wake time.Time, err error) {
	at, window, ok := w.armTime(ctx, tick, fireAt)
	if !ok {
		return false, time.Time{}, nil
	}
	now := workflow.Now(ctx)
	if now.Before(at) {
		return false, at, nil
	}
	if window {
		// Even a window that starts less than armMinAhead ahead is armed: firing its first
		// ticks at their tick would leave every later one as close, and none armed again.
		span, most := armWindowSpan, armWindowMax
		if w.armsByLoad(ctx) {
			span, most = w.armSpan(), armWindowMaxByLoad
		}
		return w.armWindow(ctx, tick, now.Add(armWindowLead+span), most)
	}
	minAhead := armMinAhead
	if w.def.Action.Kind == domain.ActionWorkflow {
		minAhead = armStartMinAhead
	}
	if fireAt.Sub(now) < minAhead {
		return false, time.Time{}, nil // woke too late to arm: it fires at the tick
	}
	return true, time.Time{}, w.arm(ctx, tick, fireAt)
}

// startFixed reports whether the overlap decision of a workflow action's next tick is
// already known and cannot change before the tick: allow_all starts every tick; any other
// policy starts it when no run is in flight, none waits and no backfill is pending — and
// what could start one before the tick (a trigger, a backfill) retracts the armed fire
// first (see retractArmedStartFor).
func (w *scheduleWorkflow) startFixed() bool {
	if w.def.Overlap == domain.OverlapAllowAll {
		return true
	}
	return len(w.carry.Running) == 0 && len(w.carry.Buffer) == 0 && len(w.carry.Backfills) == 0
}

// arm commits the tick's fire now — run, event and outbox message — visible at fireAt.
// The tick is then processed: the watermark moves past it.
func (w *scheduleWorkflow) arm(ctx workflow.Context, tick, fireAt time.Time) error {
	if w.def.Action.Kind == domain.ActionWorkflow {
		return w.armStart(ctx, tick, fireAt)
	}
	before := w.carry.Watermark
	w.carry.Watermark = tick
	if _, err := w.recordFire(ctx, tick, domain.TriggerScheduled, domain.TickKey(w.def.ID, tick), domain.RunSucceeded, "", "", nil, &fireAt); err != nil {
		if errors.Is(err, errArmingOvertaken) {
			w.carry.Watermark = before // nothing was armed: the loop looks again
			return nil
		}
		return err
	}
	w.carry.Armed = &ArmedFire{Tick: tick, FireAt: fireAt, Before: before}
	return nil
}

// armStart arms a workflow action's tick: its run is committed now, hidden until fireAt
// (status RUNNING), and its target is started with a start delay, so that Temporal starts
// it at fireAt whatever the worker is doing then. The run is watched from now on.
func (w *scheduleWorkflow) armStart(ctx workflow.Context, tick, fireAt time.Time) error {
	before := w.carry.Watermark
	w.carry.Watermark = tick
	key := domain.TickKey(w.def.ID, tick)
	res, err := w.recordFire(ctx, tick, domain.TriggerScheduled, key, domain.RunRunning, "", w.runWorkflowID(key), nil, &fireAt)
	if err != nil {
		if errors.Is(err, errArmingOvertaken) {
			w.carry.Watermark = before // nothing was armed: the loop looks again
			return nil
		}
		return err
	}
	w.carry.Armed = &ArmedFire{Tick: tick, FireAt: fireAt, Before: before, WorkflowID: res.workflowID, RunID: res.RunID}
	if !res.existed {
		// (A run recorded before was started and watched by recordFire, see adoptIfUnwatched.)
		w.launch(ctx, res.RunID, res.workflowID, tick, nil, &fireAt)
	}
	return nil
}

// stopArmedStart terminates the delayed start of the armed workflow fire not yet due, before
// a command retracts it in its transaction (the row then records the retraction). Its
// failure fails the command: a fire whose start could not be stopped is not retracted.
func (w *scheduleWorkflow) stopArmedStart(ctx workflow.Context, why string) error {
	a := w.carry.Armed
	if a == nil || a.WorkflowID == "" || !a.FireAt.After(workflow.Now(ctx)) {
		return nil
	}
	return workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.StopRunWorkflow, activities.StopRun{
		WorkflowID: a.WorkflowID, Terminate: true, Reason: "retracted before its tick: " + why,
	}).Get(ctx, nil)
}

// retractArmedStartFor retracts the armed workflow fire not yet due before a trigger or a
// backfill starts a run: under any policy but allow_all, the armed tick was started because
// nothing would be running at its time (startFixed), which that run would change. The tick
// is then decided at its time, under its overlap policy.
func (w *scheduleWorkflow) retractArmedStartFor(ctx workflow.Context, why string) error {
	a := w.carry.Armed
	if a == nil || a.WorkflowID == "" || w.def.Overlap == domain.OverlapAllowAll || !a.FireAt.After(workflow.Now(ctx)) {
		return nil
	}
	if err := w.mirror.Lock(ctx); err != nil {
		return err
	}
	defer w.mirror.Unlock()
	if err := w.stopArmedStart(ctx, why); err != nil {
		return err
	}
	var r activities.Retracted
	if err := workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.RetractArmedBecause, activities.Retraction{
		ScheduleID: w.def.ID, Why: why,
	}).Get(ctx, &r); err != nil {
		return err
	}
	w.unarm(r)
	return nil
}

// errArmingOvertaken: a pause or reschedule took the mirror lock while an arming waited
// for it, so the tick is no longer to be armed (see armingOvertaken).
var errArmingOvertaken = errors.New("arming overtaken by a command")

// armingOvertaken reports whether a command that rules out arming ran while an arming
// waited for the mirror lock: armTime's decision was taken before it. Checked under the
// lock, the arming and the command are then ordered one way or the other, never both.
func (w *scheduleWorkflow) armingOvertaken() bool {
	return w.carry.Paused || w.carry.Rescheduled != nil
}

// armWindow commits the fires of the ticks from first on that fire by until, in one
// transaction, each visible at its fire time; the watermark moves past the last. armed is
// false when the window held no tick (the spec ends): the tick fires at its time then.
func (w *scheduleWorkflow) armWindow(ctx workflow.Context, first, until time.Time, most int) (armed bool, wake time.Time, err error) {
	if err := w.mirror.Lock(ctx); err != nil {
		return false, time.Time{}, err
	}
	defer w.mirror.Unlock()
	if w.armingOvertaken() {
		return false, time.Time{}, nil // the loop looks again
	}
	var res activities.ArmedWindow
	if err := workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.ArmWindow, activities.ArmWindowRequest{
		ScheduleID: w.def.ID, Name: w.def.Name, Spec: w.def.Spec, CreatedAt: w.def.CreatedAt,
		First: first, Until: until, Max: most, Event: *w.eventFor(first, domain.TriggerScheduled, until),
	}).Get(ctx, &res); err != nil {
		return false, time.Time{}, err
	}
	w.work.add(res.CommittedAt)
	if len(res.Ticks) == 0 {
		return false, time.Time{}, nil
	}
	w.carry.DueTogether = dueTogether(w.carry.DueTogether, res.DueTogether)
	// The fires armed before that are still pending stay listed ahead of the window's (a
	// retraction takes them too); Before is then the last of the earlier ones already due.
	now := workflow.Now(ctx)
	before, pending := w.carry.Watermark, []activities.ArmedTick(nil)
	if a := w.carry.Armed; a != nil && a.FireAt.After(now) {
		before = a.Before
		for _, f := range a.all() {
			if f.FireAt.After(now) {
				pending = append(pending, f)
			} else {
				before = f.Tick
			}
		}
	}
	last := res.Ticks[len(res.Ticks)-1]
	w.carry.Watermark = last.Tick
	w.carry.Armed = armedFires(append(pending, res.Ticks...), before)
	w.plan(ctx, last.Tick, res.NextRunAt)
	if p := w.pendingArmed(now); p != nil {
		w.mirrored = &p.Tick // the transaction put next_run_at on the first armed fire
	}
	return true, time.Time{}, nil
}

// pendingArmed is the first armed fire not yet due at now, if any: until then it is the
// schedule's next fire.
func (w *scheduleWorkflow) pendingArmed(now time.Time) *activities.ArmedTick {
	a := w.carry.Armed
	if a == nil || !a.FireAt.After(now) {
		return nil
	}
	for _, f := range a.all() {
		if f.FireAt.After(now) {
			return &f
		}
	}
	return nil
}

// unarm forgets the armed fires a command's transaction retracted (ticks): those ticks
// were never processed, so the watermark goes back to the last armed fire the command left
// (one already due), or to before them all. A retraction takes every fire not yet due, so
// when the last armed one stands, none was taken.
func (w *scheduleWorkflow) unarm(retracted activities.Retracted) {
	a := w.carry.Armed
	if a == nil || !retracted.Has(a.Tick) {
		return
	}
	var kept []activities.ArmedTick
	for _, f := range a.all() {
		if !retracted.Has(f.Tick) {
			kept = append(kept, f)
		}
	}
	if w.carry.Watermark.Equal(a.Tick) {
		w.carry.Watermark = a.Before
		if len(kept) > 0 {
			w.carry.Watermark = kept[len(kept)-1].Tick
		}
	}
	if a.RunID != 0 {
		w.forgetRun(a.RunID) // its start was stopped before it ran: nothing is in flight
	}
	w.carry.Armed = armedFires(kept, a.Before)
}

// getRetracted waits for a command's mirror write and unarms what it retracted. Only a
// schedule that armed a fire reads the answer (histories from before arming carry none).
func (w *scheduleWorkflow) getRetracted(ctx workflow.Context, f workflow.Future) error {
	if w.carry.Armed == nil {
		return f.Get(ctx, nil)
	}
	var r activities.Retracted
	if err := f.Get(ctx, &r); err != nil {
		return err
	}
	w.unarm(r)
	return nil
}

// retractArmedAfterReload retracts the armed fire, if it is not due yet, once the
// workflow took a new definition: the new definition decides that tick anew (it may arm it
// again). Until the workflow reloads, the fire stands under the old definition, as a fire
// at the tick would, so an update whose refresh never arrives loses no tick.
func (w *scheduleWorkflow) retractArmedAfterReload(ctx workflow.Context) error {
	if w.carry.Armed == nil {
		return nil
	}
	if err := w.stopArmedStart(ctx, "the schedule's definition changed"); err != nil {
		return err
	}
	var r activities.Retracted
	if err := workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.RetractArmed, w.def.ID).Get(ctx, &r); err != nil {
		return err
	}
	w.unarm(r)
	return nil
}
