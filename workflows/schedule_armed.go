package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
)

// Armed fires (docs/schedules.md "Armed fires"). The planner commits a schedule's fires
// ahead of their ticks while the schedule is at rest — an event action's, visible at its
// time through the worker's releaser (store.Releaser); a workflow action's, its target
// started with a start delay ending at its tick. A workflow that takes its schedule over
// finds the fires armed and not yet released in its row (carryOf), and holds them here until
// they are released or a command retracts them: a pause, a reschedule and a new definition
// retract every fire not yet due; a trigger or backfill, under any policy but allow_all, the
// workflow fire whose overlap decision counted on nothing running at its tick.

// ArmedTick is an armed tick and when its fire becomes visible (the tick with its jitter).
type ArmedTick struct {
	Tick   time.Time
	FireAt time.Time
}

// ArmedFire is the last of the fires armed and not yet released: committed ahead, visible at
// FireAt. Earlier are the fires armed before it, oldest first. Before is the watermark
// before the first of them, restored if a command retracts them all.
type ArmedFire struct {
	Tick    time.Time
	FireAt  time.Time
	Before  time.Time
	Earlier []ArmedTick `json:",omitempty"`
	// WorkflowID and RunID are set for a workflow action's fire: its target was started
	// ahead, with a start delay, and RunID is among the running runs from then on.
	WorkflowID string `json:",omitempty"`
	RunID      int64  `json:",omitempty"`
}

// all lists the armed fires, oldest first.
func (a *ArmedFire) all() []ArmedTick {
	return append(append([]ArmedTick(nil), a.Earlier...), ArmedTick{Tick: a.Tick, FireAt: a.FireAt})
}

// armedFires is the ArmedFire of fires, oldest first (nil: none).
func armedFires(fires []ArmedTick, before time.Time) *ArmedFire {
	if len(fires) == 0 {
		return nil
	}
	last := fires[len(fires)-1]
	return &ArmedFire{Tick: last.Tick, FireAt: last.FireAt, Before: before, Earlier: fires[:len(fires)-1]}
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
// nothing would be running at its time, which that run would change. The tick
// is then decided at its time, under its overlap policy.
func (w *scheduleWorkflow) retractArmedStartFor(ctx workflow.Context, why string) error {
	a := w.carry.Armed
	if a == nil || a.WorkflowID == "" || w.def.Overlap == domain.OverlapAllowAll || !a.FireAt.After(workflow.Now(ctx)) {
		return nil
	}
	unlock, err := w.lockMirror(ctx)
	if err != nil {
		return err
	}
	defer unlock()
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

// pendingArmed is the first armed fire not yet due at now, if any: until then it is the
// schedule's next fire.
func (w *scheduleWorkflow) pendingArmed(now time.Time) *ArmedTick {
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
	var kept []ArmedTick
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
