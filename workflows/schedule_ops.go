package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
)

func (w *scheduleWorkflow) pause(ctx workflow.Context, req PauseRequest) (ScheduleDescription, error) {
	if err := w.lockMirror(ctx); err != nil {
		return ScheduleDescription{}, err
	}
	defer w.unlockMirror()
	if err := workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.MirrorPaused, activities.PausedState{
		ScheduleID: w.in.ScheduleID, Paused: true, Note: req.Note,
	}).Get(ctx, nil); err != nil {
		return ScheduleDescription{}, err
	}
	// Pausing drops a pending reschedule: a paused schedule catches nothing up.
	w.carry.Paused, w.carry.Note, w.mirrored, w.carry.Rescheduled = true, req.Note, nil, nil
	w.dirty = true
	return w.describe(), nil
}

func (w *scheduleWorkflow) resume(ctx workflow.Context) (ScheduleDescription, error) {
	if err := w.lockMirror(ctx); err != nil {
		return ScheduleDescription{}, err
	}
	defer w.unlockMirror()
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
	if err := workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.MirrorPaused, activities.PausedState{
		ScheduleID: w.in.ScheduleID, Paused: false, NextRunAt: nextPtr,
	}).Get(ctx, nil); err != nil {
		return ScheduleDescription{}, err
	}
	if now.After(w.carry.Watermark) {
		w.carry.Watermark = now
	}
	w.carry.Paused, w.carry.Note, w.mirrored = false, "", nextPtr
	w.dirty = true
	return w.describe(), nil
}

func (w *scheduleWorkflow) trigger(ctx workflow.Context, req TriggerRequest) (TriggerResult, error) {
	if w.spec == nil {
		if err := workflow.Await(ctx, func() bool { return w.spec != nil }); err != nil {
			return TriggerResult{}, err
		}
	}
	if req.RequestID == "" {
		_ = workflow.SideEffect(ctx, func(workflow.Context) any {
			return fmt.Sprintf("signal-%d", time.Now().UnixNano())
		}).Get(&req.RequestID)
	}
	now := workflow.Now(ctx)
	res, err := w.fire(ctx, now, domain.TriggerManual, domain.ManualKey(w.def.ID, req.RequestID), req.Overlap, req.Input)
	w.dirty = true
	return res, err
}

func (w *scheduleWorkflow) reschedule(ctx workflow.Context, req RescheduleRequest) (ScheduleDescription, error) {
	at := req.NextRunAt.UTC()
	if err := w.lockMirror(ctx); err != nil {
		return ScheduleDescription{}, err
	}
	defer w.unlockMirror()
	if err := workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.MirrorNextRun, activities.NextRun{
		ScheduleID: w.in.ScheduleID, NextRunAt: &at,
	}).Get(ctx, nil); err != nil {
		return ScheduleDescription{}, err
	}
	w.carry.Rescheduled, w.mirrored, w.next = &at, &at, &at
	w.dirty = true
	return w.describe(), nil
}

func (w *scheduleWorkflow) backfill(ctx workflow.Context, req BackfillRequest) (BackfillResult, error) {
	if w.spec == nil {
		if err := workflow.Await(ctx, func() bool { return w.spec != nil }); err != nil {
			return BackfillResult{}, err
		}
	}
	start, end := req.Start.UTC(), req.End.UTC()
	var n int
	_ = workflow.SideEffect(ctx, func(workflow.Context) any {
		count := 0
		for t := w.spec.Next(start.Add(-time.Nanosecond)); !t.IsZero() && !t.After(end) && count <= maxBackfillTicks; t = w.spec.Next(t) {
			count++
		}
		return count
	}).Get(&n)
	if n > maxBackfillTicks {
		return BackfillResult{}, temporal.NewApplicationError(fmt.Sprintf("the range holds more than %d ticks", maxBackfillTicks), ErrBackfillTooLarge)
	}
	if n > 0 {
		w.carry.Backfills = append(w.carry.Backfills, Backfill{Done: start.Add(-time.Nanosecond), End: end, Overlap: req.Overlap})
		w.dirty = true
	}
	return BackfillResult{Ticks: n}, nil
}

// processRescheduled fires the rescheduled tick once it is due; natural ticks it replaced
// are recorded SKIPPED with the reason, so none is silently lost (S2).
func (w *scheduleWorkflow) processRescheduled(ctx workflow.Context, now time.Time) error {
	at := *w.carry.Rescheduled
	if at.After(now) {
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
	var ticks []time.Time
	_ = workflow.SideEffect(ctx, func(workflow.Context) any {
		var out []time.Time
		for t := w.spec.Next(b.Done); !t.IsZero() && !t.After(b.End) && len(out) < backfillPerRound; t = w.spec.Next(t) {
			out = append(out, t)
		}
		return out
	}).Get(&ticks)
	for _, tick := range ticks {
		if _, err := w.fire(ctx, tick, domain.TriggerBackfill, domain.TickKey(w.def.ID, tick), b.Overlap, nil); err != nil {
			return err
		}
		b.Done = tick
	}
	if len(ticks) < backfillPerRound {
		w.carry.Backfills = w.carry.Backfills[1:]
	}
	return nil
}
