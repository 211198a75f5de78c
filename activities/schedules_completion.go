package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/tickgate/tickgate/internal/scheduleplan"
	"github.com/tickgate/tickgate/store"
)

// completeSchedules is a planner round's completion step (docs/schedules.md "One-time
// schedules"): the one-time schedules at rest with no tick left whose look has come are
// completed once nothing of them is in flight — marked completed, or deleted when they
// asked to be (store.CompleteSchedules) — by scheduleplan's rule.
func (a *ScheduleActivities) completeSchedules(ctx context.Context, now time.Time) (store.CompletionResult, error) {
	var total store.CompletionResult
	for {
		res, err := a.Store.CompleteSchedules(ctx, now, planBatch, func(cs []store.CompletionCandidate) []store.CompletionDecision {
			return decideCompletions(cs, now)
		})
		if err != nil {
			return total, err
		}
		total.Completed += res.Completed
		total.Deleted = append(total.Deleted, res.Deleted...)
		total.Looked += res.Looked
		if len(res.Deleted) > 0 && activity.IsActivity(ctx) {
			activity.GetLogger(ctx).Info("planner: deleted completed schedules", "schedules", res.Deleted)
		}
		if res.Looked < planBatch || ctx.Err() != nil {
			return total, ctx.Err()
		}
	}
}

// decideCompletions is the completion step's decision for the schedules it locked: pure.
func decideCompletions(cs []store.CompletionCandidate, now time.Time) []store.CompletionDecision {
	out := make([]store.CompletionDecision, 0, len(cs))
	for _, c := range cs {
		d := store.CompletionDecision{ScheduleID: c.Schedule.ID}
		s, err := PlanOf(c.Schedule)
		if err != nil {
			// A definition that does not decode is its workflow's to report: wake it.
			d.PlanAt, d.PlanAction = &now, scheduleplan.Wake
			out = append(out, d)
			continue
		}
		complete, next := s.Completion(now, scheduleplan.CompletionFacts{TickStatus: c.TickStatus, InFlight: c.InFlight, Armed: c.Armed})
		d.Complete, d.PlanAt, d.PlanAction = complete, next.At, next.Action
		out = append(out, d)
	}
	return out
}
