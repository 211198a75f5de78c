package activities

import (
	"context"
	"time"

	"github.com/tickgate/tickgate/internal/scheduleplan"
	"github.com/tickgate/tickgate/store"
)

// Resident schedules (TICKGATE_SCHEDULES_RESIDENT, docs/schedules.md "Resident workflows"):
// a schedule's workflow that rests stays open instead of ending. The handover to the planner
// is the same rest, completed at once in its own transaction (store.RestScheduleInPlace),
// because the run decides nothing more until it takes the schedule over again, whatever
// reaches it meanwhile. While it rests, the planner arms its fires and the releasers release
// them, as for a schedule whose workflow ended; the run only looks at its row now and then to
// show what comes next.

// RestLook is what a resident run at rest shows of its schedule — its describe answer, its
// timer's summary — as the row holds it at the look.
type RestLook struct {
	// Resident is the worker's TICKGATE_SCHEDULES_RESIDENT: false ends the run at rest (the
	// schedule stays at rest, the planner's, and its workflow comes back with its next command).
	Resident bool
	Version  int64
	Paused   bool   `json:",omitempty"`
	Note     string `json:",omitempty"`
	// Completed: a one-time schedule with its tick behind it; its run ends.
	Completed bool `json:",omitempty"`
	// OneTime: a one-time schedule (its completion comes soon after its fire).
	OneTime bool `json:",omitempty"`
	// Watermark is the newest tick dealt with: the planner's, past the fires it armed.
	Watermark time.Time
	// NextTick is the schedule's next tick after the look, and NextFire when it fires (the
	// tick with its jitter); nil when none comes (paused, or its spec has ended).
	NextTick *time.Time `json:",omitempty"`
	NextFire *time.Time `json:",omitempty"`
	// Decided: the planner does not arm the next fire but wakes the run before it, to decide
	// it at its tick (the schedule's plan is a wake).
	Decided bool `json:",omitempty"`
}

// RestLookRequest asks for a look at a resident run's schedule at rest, At the run's clock.
type RestLookRequest struct {
	ScheduleID int64
	At         time.Time
}

// LookAtRest reads the schedule of a resident run at rest. A deleted schedule is the
// ErrScheduleGone error: its run ends.
func (a *ScheduleActivities) LookAtRest(ctx context.Context, r RestLookRequest) (RestLook, error) {
	row, err := a.Store.GetScheduleByID(ctx, r.ScheduleID)
	if err != nil {
		return RestLook{}, gone(err, r.ScheduleID)
	}
	return a.restLook(row, r.At), nil
}

// restLook is the look at row at now. A definition that no longer decodes shows no fire:
// the planner wakes the schedule, and its run reports it.
func (a *ScheduleActivities) restLook(row store.Schedule, now time.Time) RestLook {
	look := RestLook{
		Resident: a.Resident, Version: row.Version, Paused: row.Paused, Note: row.PauseNote, Completed: row.CompletedAt != nil,
		Decided: row.PlanAction != nil && *row.PlanAction == scheduleplan.Wake,
	}
	s, err := PlanOf(row)
	if err != nil {
		return look
	}
	look.OneTime, look.Watermark = s.Spec.OneTime(), s.Watermark
	if row.Paused || row.CompletedAt != nil {
		return look
	}
	var tick time.Time
	if s.Rescheduled != nil && s.Rescheduled.After(now) {
		tick = *s.Rescheduled
	} else {
		tick = s.Spec.Next(now)
	}
	if !tick.IsZero() {
		fire := tick.Add(s.Spec.JitterFor(row.Name, tick))
		look.NextTick, look.NextFire = &tick, &fire
	}
	return look
}
