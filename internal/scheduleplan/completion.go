package scheduleplan

import (
	"time"

	"github.com/tickgate/tickgate/domain"
)

// One-time schedules end (docs/schedules.md "One-time schedules"). Once a one-time
// schedule's tick has been dealt with (fired, skipped or missed) it has nothing left to
// fire: its plan at rest becomes Complete, and the planner's completion step, when its
// plan comes, marks it completed — or deletes it, when it asked to be — as soon as nothing
// of it is in flight any more. Until then it looks again, sooner when the run that ends it
// records its outcome (that statement brings the plan forward).

// Completion bounds how often the completion step looks again at a schedule still in
// flight: a second after it while its fire is armed or not yet settled (the release is at
// most a second away); while its run runs, a quarter of the time since its fire, within
// these (the record of the run's outcome brings the look forward anyway).
const (
	CompletionRetryMin = time.Second
	CompletionRetryMax = time.Minute
)

// ticked reports whether a one-time schedule's tick is behind it: its watermark reached it.
func (s Schedule) ticked() bool {
	return s.Spec != nil && s.Spec.OneTime() && s.Rescheduled == nil && !s.Watermark.Before(*s.Spec.Spec.At)
}

// oneTimeFireAt is when a one-time schedule's tick fires (with its jitter).
func (s Schedule) oneTimeFireAt() time.Time {
	at := *s.Spec.Spec.At
	return at.Add(s.Spec.JitterFor(s.Name, at))
}

// CompletionFacts are what the completion step reads of a schedule: the outcome of its
// one-time tick ("" when never recorded, or not yet settled), whether a run of it runs or
// waits (InFlight), and whether a fire of it is armed or released but not yet settled.
type CompletionFacts struct {
	TickStatus domain.RunStatus
	InFlight   bool
	Armed      bool
}

// Completion is the completion step's decision at now: complete the schedule, or its plan
// (look again later; nothing, when its tick was never recorded — paused through it; or the
// schedule's own plan, when it has a tick to come after all).
func (s Schedule) Completion(now time.Time, f CompletionFacts) (complete bool, next Plan) {
	if !s.ticked() {
		return false, s.AtRest()
	}
	switch {
	case f.Armed:
		return false, plan(now.Add(CompletionRetryMin), Complete)
	case f.InFlight:
		wait := min(max(now.Sub(s.oneTimeFireAt())/4, CompletionRetryMin), CompletionRetryMax)
		return false, plan(now.Add(wait), Complete)
	case f.TickStatus == "":
		// Its tick was never recorded (the schedule was paused through it): it fires nothing
		// more, and is not completed — it did not run.
		return false, Plan{}
	}
	return f.TickStatus.Final(), Plan{}
}
