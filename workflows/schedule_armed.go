package workflows

import (
	"hash/fnv"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
)

// armedFiresChange versions arming an event fire ahead of its tick (see armTime):
// histories recorded before it fire every tick at the tick.
const armedFiresChange = "armed-event-fires"

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
)

// ArmedFire is the fire a schedule armed last: committed ahead, visible at FireAt. Before
// is the watermark it replaced, restored if a command retracts the fire.
type ArmedFire struct {
	Tick   time.Time
	FireAt time.Time
	Before time.Time
}

// armOffset is the tick's deterministic place in the arming window.
func armOffset(schedule string, tick time.Time) time.Duration {
	h := fnv.New64a()
	_, _ = h.Write([]byte("arm/" + schedule + "/"))
	_, _ = h.Write([]byte(tick.UTC().Format(time.RFC3339Nano)))
	return time.Duration(h.Sum64() % uint64(armSpread))
}

// armTime is when the tick firing at fireAt is armed; ok is false when it fires at its
// tick instead. Only an event action that no policy has to decide at the tick is armed:
// overlap policies apply to workflow actions only (see fire), skip_if_successful needs the
// runs up to the tick, a rescheduled tick fires as the reschedule says. One armed fire at a
// time: the next is armed once the last one's fire time has come, and only if that is still
// armLead before its own (a schedule with ticks closer together fires each at its tick).
func (w *scheduleWorkflow) armTime(ctx workflow.Context, tick, fireAt time.Time) (at time.Time, ok bool) {
	if w.def.Action.Kind != domain.ActionEvent || w.def.SkipIfSuccessful || w.carry.Paused || w.carry.Rescheduled != nil {
		return time.Time{}, false
	}
	at = fireAt.Add(-armLead - armOffset(w.def.Name, tick))
	if w.carry.Watermark.After(at) {
		at = w.carry.Watermark // not before the tick it follows (or the schedule's creation, a resume)
	}
	if a := w.carry.Armed; a != nil && a.FireAt.After(at) {
		at = a.FireAt
	}
	if fireAt.Sub(at) < armLead {
		return time.Time{}, false // ticks closer together than the lead fire at their tick
	}
	// GetVersion only when a tick could be armed, so other histories carry no marker.
	if workflow.GetVersion(ctx, armedFiresChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return time.Time{}, false
	}
	return at, true
}

// armIfDue arms the next tick when its arming time has come and its fire time is still far
// enough ahead; it reports whether it did, and otherwise when to wake (zero: at the fire).
func (w *scheduleWorkflow) armIfDue(ctx workflow.Context, tick, fireAt time.Time) (armed bool, wake time.Time, err error) {
	at, ok := w.armTime(ctx, tick, fireAt)
	if !ok {
		return false, time.Time{}, nil
	}
	now := workflow.Now(ctx)
	if now.Before(at) {
		return false, at, nil
	}
	if fireAt.Sub(now) < armMinAhead {
		return false, time.Time{}, nil // woke too late to arm: it fires at the tick
	}
	return true, time.Time{}, w.arm(ctx, tick, fireAt)
}

// arm commits the tick's fire now — run, event and outbox message — visible at fireAt.
// The tick is then processed: the watermark moves past it.
func (w *scheduleWorkflow) arm(ctx workflow.Context, tick, fireAt time.Time) error {
	before := w.carry.Watermark
	w.carry.Watermark = tick
	if _, err := w.recordFire(ctx, tick, domain.TriggerScheduled, domain.TickKey(w.def.ID, tick), domain.RunSucceeded, "", "", nil, &fireAt); err != nil {
		return err
	}
	w.carry.Armed = &ArmedFire{Tick: tick, FireAt: fireAt, Before: before}
	return nil
}

// pendingArmed is the armed fire not yet due at now, if any: until then it is the
// schedule's next fire.
func (w *scheduleWorkflow) pendingArmed(now time.Time) *ArmedFire {
	if a := w.carry.Armed; a != nil && a.FireAt.After(now) {
		return a
	}
	return nil
}

// unarm forgets the armed fire after a command's transaction retracted it (ticks): the
// tick was never processed, so the watermark goes back to before it.
func (w *scheduleWorkflow) unarm(retracted activities.Retracted) {
	a := w.carry.Armed
	if a == nil || !retracted.Has(a.Tick) {
		return
	}
	if w.carry.Watermark.Equal(a.Tick) {
		w.carry.Watermark = a.Before
	}
	w.carry.Armed = nil
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
	var r activities.Retracted
	if err := workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.RetractArmed, w.def.ID).Get(ctx, &r); err != nil {
		return err
	}
	w.unarm(r)
	return nil
}
