package scheduleplan

import (
	"fmt"
	"time"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
)

// One-time schedules as they are created or changed (docs/schedules.md "One-time
// schedules"): what a one-time spec may ask, where its ticks are counted from, and what its
// row keeps as after_completion. The API applies these to a request; how a one-time
// schedule ends is completion.go's.

// After completion: what a one-time schedule becomes once its run ended
// (schedules.after_completion).
const (
	AfterCompletionKeep   = "keep"   // it stays, completed
	AfterCompletionDelete = "delete" // it is deleted, with its runs
)

// CheckOneTime is what a new or changed schedule may ask of one-time-ness: afterCompletion
// ("" for none) is a one-time schedule's only, keep or delete. An at in the past is taken
// only when it is recent — no older than the catch-up window, and never refused for less
// than domain.OnTimeTolerance, so a client whose clock is a little behind is not refused —
// and the schedule then fires at once, late, as any tick processed late does (CountFrom).
// An older at is refused: it would fire long after its time, which a user creating a
// reminder did not mean. (A tick never fires before its at.) storedAt, for a change, is
// the schedule's at as stored: a change that gives it again changes something else, and
// its at is not judged. The error is a *domain.FieldError naming the field.
func CheckOneTime(spec *schedulespec.Compiled, afterCompletion string, catchupWindow time.Duration, storedAt *time.Time, now time.Time) error {
	switch afterCompletion {
	case "", AfterCompletionKeep, AfterCompletionDelete:
	default:
		return fieldErr("after_completion", "must be %q or %q, got %q", AfterCompletionKeep, AfterCompletionDelete, afterCompletion)
	}
	if !spec.OneTime() {
		if afterCompletion != "" {
			return fieldErr("after_completion", "only a one-time schedule (spec.at) completes: give spec.at, or no after_completion")
		}
		return nil
	}
	window := max(catchupWindow, domain.OnTimeTolerance)
	if storedAt != nil && storedAt.Equal(*spec.Spec.At) {
		return nil
	}
	if at := *spec.Spec.At; at.Before(now.Add(-window)) {
		return fieldErr("spec.at", "%s is %s in the past: a one-time schedule fires at once only when its at is at most "+
			"%s old (the catch-up window, at least %s); give a time to come, or a wider policies.catchup_window",
			at.Format(time.RFC3339Nano), now.Sub(at).Round(time.Second), window, domain.OnTimeTolerance)
	}
	return nil
}

// CountFrom is where a new schedule counts its ticks from: its creation, now — but a
// one-time schedule whose at is a moment in the past (CheckOneTime) from just before it, so
// that its one tick is still ahead of it and fires at once.
func CountFrom(spec *schedulespec.Compiled, now time.Time) time.Time {
	if spec.OneTime() {
		if before := spec.Spec.At.Add(-time.Microsecond); before.Before(now) {
			return before
		}
	}
	return now
}

// AfterCompletion is what a new or changed schedule's row keeps as its after_completion: what
// a one-time schedule asked, keep otherwise.
func AfterCompletion(spec *schedulespec.Compiled, asked string) string {
	if spec.OneTime() && asked != "" {
		return asked
	}
	return AfterCompletionKeep
}

func fieldErr(field, format string, args ...any) error {
	return &domain.FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}
