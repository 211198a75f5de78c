package api

import (
	"time"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/store"
)

// One-time schedules (docs/schedules.md "One-time schedules"): spec {at}, fired once, then
// completed — or deleted, with after_completion "delete".

// validateOneTime checks what a one-time spec asks. after_completion is a one-time
// schedule's only. An at in the past is taken only when it is recent — no older than the
// catch-up window, and never refused for less than domain.OnTimeTolerance, so a client whose
// clock is a little behind is not refused — and the schedule then fires at once, late, as
// any tick processed late does. An older at is refused: it would fire long after its time,
// which a user creating a reminder did not mean. (A tick never fires before its at.) An
// update that gives the stored at again changes something else: its at is not judged.
func (req *CreateScheduleRequest) validateOneTime(spec *schedulespec.Compiled, pol SchedulePolicies, now time.Time) error {
	switch req.AfterCompletion {
	case "", store.AfterCompletionKeep, store.AfterCompletionDelete:
	default:
		return BadRequest("after_completion", "must be %q or %q, got %q", store.AfterCompletionKeep, store.AfterCompletionDelete, req.AfterCompletion)
	}
	if !spec.OneTime() {
		if req.AfterCompletion != "" {
			return BadRequest("after_completion", "only a one-time schedule (spec.at) completes: give spec.at, or no after_completion")
		}
		return nil
	}
	window := max(time.Duration(pol.CatchupWindow), domain.OnTimeTolerance)
	if req.storedAt != nil && req.storedAt.Equal(*spec.Spec.At) {
		return nil
	}
	if at := *spec.Spec.At; at.Before(now.Add(-window)) {
		return BadRequest("spec.at", "%s is %s in the past: a one-time schedule fires at once only when its at is at most "+
			"%s old (the catch-up window, at least %s); give a time to come, or a wider policies.catchup_window",
			at.Format(time.RFC3339Nano), now.Sub(at).Round(time.Second), window, domain.OnTimeTolerance)
	}
	return nil
}

// countFrom is where a new schedule counts its ticks from: its creation — but a one-time
// schedule whose at is a moment in the past (validateOneTime) from just before it, so that
// its one tick is still ahead of it and fires at once.
func countFrom(spec *schedulespec.Compiled, now time.Time) time.Time {
	if spec.OneTime() {
		if before := spec.Spec.At.Add(-time.Microsecond); before.Before(now) {
			return before
		}
	}
	return now
}

// afterCompletion is what a new or updated schedule's row keeps as its after_completion.
func afterCompletion(req CreateScheduleRequest, spec *schedulespec.Compiled) string {
	if spec.OneTime() && req.AfterCompletion != "" {
		return req.AfterCompletion
	}
	return store.AfterCompletionKeep
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
