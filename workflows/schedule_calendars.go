package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
)

// Calendars and one-time schedules in the schedule's workflow (docs/schedules.md
// "Calendars", "One-time schedules").
//
// A tick one of the schedule's calendars excludes is recorded SKIPPED with the reason naming
// the calendar, on every path the workflow decides a tick: on time, caught up, rescheduled,
// backfilled, recorded MISSED. The workflow asks (ExcludedBy) before the overlap policy
// decides the tick — an excluded tick neither waits in the buffer nor stops the run in
// flight — and the record of the tick judges it again in its own transaction, holding the
// calendars, so that a calendar edit committed in between is obeyed (the record then
// answers SKIPPED, and nothing starts).

// Change ids (workflows.Changes).
const (
	scheduleCalendarsChange     = "schedule-calendars"
	scheduleOneTimeReloadChange = "schedule-one-time-reload"
)

// calendars are the calendars the schedule's spec excludes, for the records of its ticks
// (nil for a run pinned before calendars: it records as it did).
func (w *scheduleWorkflow) calendars(ctx workflow.Context) []string {
	if !w.spec.Excluding() || workflow.GetVersion(ctx, scheduleCalendarsChange, workflow.DefaultVersion, 1) < 1 {
		return nil
	}
	return w.spec.Spec.ExcludeCalendars
}

// excludedBy is the reason a calendar of the schedule excludes the tick ("" when none does,
// and for a manual trigger, which is an explicit request).
func (w *scheduleWorkflow) excludedBy(ctx workflow.Context, tick time.Time, trigger domain.Trigger) (string, error) {
	if trigger == domain.TriggerManual {
		return "", nil
	}
	names := w.calendars(ctx)
	if len(names) == 0 {
		return "", nil
	}
	var reason string
	err := workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.ExcludedBy, activities.ExclusionCheck{
		Calendars: names, Tick: tick,
	}).Get(ctx, &reason)
	return reason, err
}

// watermarkForNewSpec is where a spec an update changed counts its ticks from: now — but a
// one-time spec from just before its at, which the API accepts a little in the past (within
// the catch-up window), so that the reload, a moment after the update, does not put its one
// tick behind it.
func (w *scheduleWorkflow) watermarkForNewSpec(ctx workflow.Context) time.Time {
	now := workflow.Now(ctx)
	if !w.spec.OneTime() || workflow.GetVersion(ctx, scheduleOneTimeReloadChange, workflow.DefaultVersion, 1) < 1 {
		if now.After(w.carry.Watermark) {
			return now
		}
		return w.carry.Watermark
	}
	if before := w.spec.Spec.At.Add(-time.Microsecond); before.Before(now) {
		return before
	}
	return now
}
