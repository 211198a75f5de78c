package store

import (
	"context"
	"fmt"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store/dbgen"
)

// FirePremise is what a fire that starts a run was decided on: the runs of its schedule in
// flight that its decider (the schedule's workflow) counted. RecordFire records the fire only
// when PostgreSQL holds no other run in flight; otherwise it records nothing and answers
// StalePremise.
//
// The premise can be wrong because a workflow task can be lost after its side effects
// committed: a fire recorded RUNNING and its target started by a task that Temporal never
// completed (a restart of the server between the two), whose retry decides without that run
// — and, trusting its own count, would start beside it past the overlap policy or the cap
// (found by the chaos run with network faults). Every writer of a run takes the schedule's
// row lock, so the check and the insert that follows see the same runs.
type FirePremise struct {
	// Running are the ids of the runs the decider holds in flight.
	Running []int64
}

// StalePremise is RecordFire's answer to a fire whose premise missed runs in flight: nothing
// was recorded, and Runs are the runs the decider did not count, for it to take in (watch)
// before it decides the fire again.
type StalePremise struct {
	Runs []ScheduleRun
}

func (e *StalePremise) Error() string {
	ids := make([]int64, len(e.Runs))
	for i, r := range e.Runs {
		ids[i] = r.ID
	}
	return fmt.Sprintf("the fire's decider did not count runs %v in flight: nothing recorded", ids)
}

// checkPremise returns a *StalePremise when the schedule has runs in flight that the premise
// of the fire f does not hold (nil when f carries no premise, or starts nothing). It runs
// under the schedule's row lock, in the transaction that would record f.
func (f *Fire) checkPremise(ctx context.Context, q *dbgen.Queries) error {
	if f.Premise == nil || !f.startsRun() {
		return nil
	}
	known := f.Premise.Running
	if known == nil {
		known = []int64{} // NOT (id = ANY(NULL)) would match nothing
	}
	beyond, err := q.RunsInFlightBeyond(ctx, dbgen.RunsInFlightBeyondParams{
		ScheduleID: f.ScheduleID, IdempotencyKey: f.IdempotencyKey, Known: known,
	})
	if err != nil {
		return fmt.Errorf("runs in flight of schedule %d beyond the fire's premise: %w", f.ScheduleID, mapErr(err))
	}
	if len(beyond) > 0 {
		return &StalePremise{Runs: beyond}
	}
	return nil
}

// startsRun reports whether f starts a run of a workflow (or http) action: the fires whose
// decision rests on the runs in flight.
func (f *Fire) startsRun() bool {
	return f.Status == domain.RunRunning && f.WorkflowID != ""
}
