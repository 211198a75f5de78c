package api

import (
	"time"

	"github.com/tickgate/tickgate/internal/scheduleplan"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/store"
)

// One-time schedules (docs/schedules.md "One-time schedules"): spec {at}, fired once, then
// completed — or deleted, with after_completion "delete". What a one-time spec may ask, and
// where its ticks count from, are internal/scheduleplan's rules (one_time.go).

// validateOneTime answers what a one-time spec may not ask (scheduleplan.CheckOneTime) as
// a 400 naming the field.
func (req *CreateScheduleRequest) validateOneTime(spec *schedulespec.Compiled, pol SchedulePolicies, now time.Time) error {
	if err := scheduleplan.CheckOneTime(spec, req.AfterCompletion, time.Duration(pol.CatchupWindow), req.storedAt, now); err != nil {
		return fieldProblem("", err)
	}
	return nil
}

// countFrom is where a new schedule counts its ticks from (scheduleplan.CountFrom).
func countFrom(spec *schedulespec.Compiled, now time.Time) time.Time {
	return scheduleplan.CountFrom(spec, now)
}

// afterCompletion is what a new or updated schedule's row keeps as its after_completion
// (scheduleplan.AfterCompletion).
func afterCompletion(req CreateScheduleRequest, spec *schedulespec.Compiled) string {
	return scheduleplan.AfterCompletion(spec, req.AfterCompletion)
}

// Schedule states, as the views and the list's ?state= say them.
const (
	StateActive    = "active"
	StatePaused    = "paused"
	StateCompleted = "completed"
)

// scheduleState is a schedule's state: completed once its one-time run has ended (the
// planner sets it), else paused or active.
func scheduleState(row store.Schedule) string {
	switch {
	case row.CompletedAt != nil:
		return StateCompleted
	case row.Paused:
		return StatePaused
	}
	return StateActive
}
