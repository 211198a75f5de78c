package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
)

// pause pauses the schedule: nothing fires until a resume. The mirror write records it in
// the schedule's history (who: the request's identity, else the door) when the schedule was
// not paused; a pause of a paused schedule changes nothing, and the standing pause keeps its
// note.
func (w *scheduleWorkflow) pause(ctx workflow.Context, req PauseRequest, door domain.Door) (ScheduleDescription, error) {
	if r := CheckPause(req); r != nil {
		return ScheduleDescription{}, r.ApplicationError()
	}
	if err := w.awaitTakeover(ctx); err != nil {
		return ScheduleDescription{}, err
	}
	unlock, err := w.lockMirror(ctx)
	if err != nil {
		return ScheduleDescription{}, err
	}
	defer unlock()
	// The same transaction retracts an armed fire not yet due: a paused schedule fires
	// nothing. An armed workflow fire's delayed start is stopped first.
	if err := w.stopArmedStart(ctx, "the schedule was paused"); err != nil {
		return ScheduleDescription{}, err
	}
	var m activities.PauseMirrored
	if err := workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.MirrorPaused, activities.PausedState{
		ScheduleID: w.in.ScheduleID, Paused: true, Note: req.Note, Actor: actorOf(req.Identity, door), Door: door,
	}).Get(ctx, &m); err != nil {
		return ScheduleDescription{}, err
	}
	if w.carry.Armed != nil {
		w.unarm(m.Retracted)
	}
	note := req.Note
	if m.Note != nil {
		note = *m.Note // the standing pause's, when the schedule was paused already
	}
	// Pausing drops a pending reschedule: a paused schedule catches nothing up.
	w.carry.Paused, w.carry.Note, w.mirrored, w.carry.Rescheduled = true, note, nil, nil
	w.handlerChanged()
	d := w.describe()
	d.Changed = m.Changed == nil || *m.Changed
	return d, nil
}

// actorOf is who a command came from, for the schedule's history: the identity it gave, or
// the door it came through.
func actorOf(identity string, door domain.Door) string {
	if identity != "" {
		return identity
	}
	return string(door)
}

// resume lifts a pause (recorded in the schedule's history by its mirror write, like a
// pause); a resume of an active schedule changes nothing.
func (w *scheduleWorkflow) resume(ctx workflow.Context, req ResumeRequest, door domain.Door) (ScheduleDescription, error) {
	if r := CheckResume(req); r != nil {
		return ScheduleDescription{}, r.ApplicationError()
	}
	if err := w.awaitTakeover(ctx); err != nil {
		return ScheduleDescription{}, err
	}
	unlock, err := w.lockMirror(ctx)
	if err != nil {
		return ScheduleDescription{}, err
	}
	defer unlock()
	if !w.carry.Paused {
		return w.describe(), nil
	}
	// The paused time is not caught up: ticks count again from now.
	now := workflow.Now(ctx)
	var next time.Time
	_ = workflow.SideEffect(ctx, func(workflow.Context) any { return w.spec.Next(now) }).Get(&next)
	var nextPtr *time.Time
	if !next.IsZero() {
		nextPtr = &next
	}
	var m activities.PauseMirrored
	if err := workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.MirrorPaused, activities.PausedState{
		ScheduleID: w.in.ScheduleID, Paused: false, NextRunAt: nextPtr, Note: req.Note, Actor: actorOf(req.Identity, door), Door: door,
	}).Get(ctx, &m); err != nil {
		return ScheduleDescription{}, err
	}
	if now.After(w.carry.Watermark) {
		w.carry.Watermark = now
	}
	w.carry.Paused, w.carry.Note, w.mirrored = false, "", nextPtr
	w.handlerChanged()
	d := w.describe()
	d.Changed = m.Changed == nil || *m.Changed
	return d, nil
}

// trigger fires the schedule now, as a manual run — the one start a paused schedule allows.
func (w *scheduleWorkflow) trigger(ctx workflow.Context, req TriggerRequest) (TriggerResult, error) {
	if err := w.awaitTakeover(ctx); err != nil {
		return TriggerResult{}, err
	}
	if r := CheckTrigger(req, w.target()); r != nil {
		return TriggerResult{}, r.ApplicationError()
	}
	if req.RequestID == "" {
		_ = workflow.SideEffect(ctx, func(workflow.Context) any {
			return fmt.Sprintf("signal-%d", time.Now().UnixNano())
		}).Get(&req.RequestID)
	}
	if err := w.retractArmedStartFor(ctx, "a manual trigger started a run first; the tick is decided at its time"); err != nil {
		return TriggerResult{}, err
	}
	now := workflow.Now(ctx)
	res, err := w.fire(ctx, now, domain.TriggerManual, domain.ManualKey(w.def.ID, req.RequestID), req.Overlap, req.Input)
	w.handlerChanged()
	return res, err
}

// refresh takes the definition Postgres holds now: the loop reloads it when it takes the
// command, the ticks due before the command came having been decided under the old one. (A
// run pinned before scheduleOneWriterChange asks its loop to reload on its next round.)
func (w *scheduleWorkflow) refresh(ctx workflow.Context) (ScheduleDescription, error) {
	if w.legacy != nil {
		w.legacy.reload = true
		w.handlerChanged()
		return w.describe(), nil
	}
	err := w.reloadDefinition(ctx)
	return w.describe(), err
}

// reschedule moves the next fire to the time asked, which the rules keep from the past.
func (w *scheduleWorkflow) reschedule(ctx workflow.Context, req RescheduleRequest) (ScheduleDescription, error) {
	if err := w.awaitTakeover(ctx); err != nil {
		return ScheduleDescription{}, err
	}
	if r := CheckReschedule(req, w.target(), workflow.Now(ctx)); r != nil {
		return ScheduleDescription{}, r.ApplicationError()
	}
	at := req.NextRunAt.UTC()
	if now := workflow.Now(ctx); at.Before(now) {
		at = now // within the clock skew the rules allow: now, never a tick in the past
	}
	unlock, err := w.lockMirror(ctx)
	if err != nil {
		return ScheduleDescription{}, err
	}
	defer unlock()
	// The same transaction retracts an armed fire not yet due: the reschedule decides the
	// next fire (the tick it replaces is recorded SKIPPED, see processRescheduled). An armed
	// workflow fire's delayed start is stopped first.
	if err := w.stopArmedStart(ctx, "the schedule was rescheduled"); err != nil {
		return ScheduleDescription{}, err
	}
	if err := w.getRetracted(ctx, workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.MirrorNextRun, activities.NextRun{
		ScheduleID: w.in.ScheduleID, NextRunAt: &at, Retract: w.carry.Armed != nil,
	})); err != nil {
		return ScheduleDescription{}, err
	}
	w.carry.Rescheduled, w.mirrored, w.next = &at, &at, &at
	w.handlerChanged()
	return w.describe(), nil
}

// backfill queues the ticks of a past range. Ticks that already ran are not run again
// (their idempotency keys are taken); the count is of the ticks the range holds.
func (w *scheduleWorkflow) backfill(ctx workflow.Context, req BackfillRequest) (BackfillResult, error) {
	if err := w.awaitTakeover(ctx); err != nil {
		return BackfillResult{}, err
	}
	now := workflow.Now(ctx)
	var judged struct {
		Ticks   int
		Refusal *Refusal
	}
	// Counting ticks reads the spec: a side effect, so a replay under other time-zone data
	// decides as the run did. So does a replay of a history recorded before a rule changed
	// (the cap on pending backfills): the judgement is read back from the history, not
	// made again.
	_ = workflow.SideEffect(ctx, func(workflow.Context) any {
		n, r := CheckBackfill(req, w.target(), now)
		judged.Ticks, judged.Refusal = n, r
		return judged
	}).Get(&judged)
	if judged.Refusal != nil {
		return BackfillResult{}, judged.Refusal.ApplicationError()
	}
	start, end := req.Start.UTC(), req.End.UTC()
	if end.After(now) {
		end = now // within the clock skew the rules allow: the ticks after now are not past yet
	}
	w.carry.Backfills = append(w.carry.Backfills, Backfill{Done: start.Add(-time.Nanosecond), End: end, Overlap: req.Overlap})
	w.handlerChanged()
	if err := w.mirrorBackfills(ctx); err != nil {
		return BackfillResult{}, err
	}
	return BackfillResult{Ticks: judged.Ticks}, nil
}

// backfilling reports whether the loop fires backfill ticks this round: when some are
// pending, paused or not — a backfill is an explicit request, like a manual trigger.
func (w *scheduleWorkflow) backfilling() bool {
	return len(w.carry.Backfills) > 0
}

// mirrorBackfills writes the pending backfill ranges to the schedule's row, where the
// schedule's view reads what is waiting. (Under the mirror lock in a run pinned before
// scheduleOneWriterChange, so that its handlers' writes land in the order of the states
// they copy.)
func (w *scheduleWorkflow) mirrorBackfills(ctx workflow.Context) error {
	unlock, err := w.lockMirror(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	ranges := make([]activities.BackfillRange, len(w.carry.Backfills))
	for i, b := range w.carry.Backfills {
		ranges[i] = activities.BackfillRange{Done: b.Done, End: b.End, Overlap: b.Overlap}
	}
	return workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.MirrorBackfills, activities.WaitingBackfills{
		ScheduleID: w.def.ID, Spec: w.def.Spec, CreatedAt: w.def.CreatedAt, Ranges: ranges,
	}).Get(ctx, nil)
}

// backfillSpec is the spec a backfill from `from` reads: bounded only by the start_at and
// end_at the user set, not by the schedule's creation (see schedulespec.ForBackfill).
func (w *scheduleWorkflow) backfillSpec(from time.Time) *schedulespec.Compiled {
	return w.spec.ForBackfill(w.def.CreatedAt, from)
}

// processRescheduled fires the rescheduled tick once it is due by until; natural ticks it
// replaced are recorded SKIPPED with the reason, so none is silently lost (S2).
func (w *scheduleWorkflow) processRescheduled(ctx workflow.Context, until time.Time) error {
	at := *w.carry.Rescheduled
	if at.After(until) {
		return nil
	}
	var replaced []time.Time
	_ = workflow.SideEffect(ctx, func(workflow.Context) any {
		var out []time.Time
		for t := w.spec.Next(w.carry.Watermark); !t.IsZero() && t.Before(at) && len(out) < maxTicksPerRound; t = w.spec.Next(t) {
			out = append(out, t)
		}
		return out
	}).Get(&replaced)
	reason := "rescheduled: the next fire was moved to " + at.UTC().Format(time.RFC3339)
	for _, tick := range replaced {
		w.carry.Watermark = tick
		if _, err := w.record(ctx, tick, domain.TriggerScheduled, domain.TickKey(w.def.ID, tick), domain.RunSkipped, reason, ""); err != nil {
			return err
		}
	}
	w.carry.Rescheduled = nil
	_, err := w.fire(ctx, at, domain.TriggerScheduled, domain.TickKey(w.def.ID, at), "", nil)
	return err
}

// processBackfill fires the next few ticks of the oldest backfill request.
func (w *scheduleWorkflow) processBackfill(ctx workflow.Context) error {
	b := &w.carry.Backfills[0]
	now := workflow.Now(ctx)
	var ticks []time.Time
	_ = workflow.SideEffect(ctx, func(workflow.Context) any {
		var out []time.Time
		spec := w.backfillSpec(b.Done)
		// Never a tick after now, whatever the range says: no fire happens before its tick.
		for t := spec.Next(b.Done); !t.IsZero() && !t.After(b.End) && !t.After(now) && len(out) < backfillPerRound; t = spec.Next(t) {
			out = append(out, t)
		}
		return out
	}).Get(&ticks)
	if len(ticks) > 0 {
		if err := w.retractArmedStartFor(ctx, "a backfill started a run first; the tick is decided at its time"); err != nil {
			return err
		}
	}
	for i, tick := range ticks {
		if _, err := w.fire(ctx, tick, domain.TriggerBackfill, domain.TickKey(w.def.ID, tick), b.Overlap, nil); err != nil {
			return err
		}
		b.Done = tick
		if w.work.spent() && i < len(ticks)-1 {
			return w.mirrorBackfills(ctx) // the rest of this round after the loop yields (see yieldIfSpent)
		}
	}
	if len(ticks) < backfillPerRound {
		w.carry.Backfills = w.carry.Backfills[1:]
	}
	return w.mirrorBackfills(ctx)
}
