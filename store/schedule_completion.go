package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store/dbgen"
)

// CompletionCandidate is a schedule at rest whose completion is due for a look (plan
// 'complete': a one-time schedule with no tick left), with what the decision reads.
type CompletionCandidate struct {
	Schedule Schedule
	// TickStatus is the outcome of its one-time tick ("" when never recorded, or not settled
	// yet); InFlight whether a run of it runs or waits; Armed whether a fire of it is armed,
	// or released and not yet settled.
	TickStatus domain.RunStatus
	InFlight   bool
	Armed      bool
}

// CompletionDecision is what the completion step does with a candidate: Complete it (mark
// it completed, or delete it when it asked to be), or plan it anew (PlanAt nil: nothing
// until a command).
type CompletionDecision struct {
	ScheduleID int64
	Complete   bool
	PlanAt     *time.Time
	PlanAction string
}

// CompletionResult is what a completion step did.
type CompletionResult struct {
	Completed int      // schedules marked completed
	Deleted   []string // schedules deleted after their completion
	Looked    int
}

// CompleteSchedules is the planner's completion step at now: it locks up to max schedules
// at rest whose completion is due (skipping those another planner or a settling release
// holds), asks decide what to do with each, and in the same transaction marks the completed
// ones completed — deleting those whose after_completion is 'delete', with their runs (the
// events their fires appended stay in the feed) — and plans the others.
func (s *Store) CompleteSchedules(ctx context.Context, now time.Time, max int, decide func([]CompletionCandidate) []CompletionDecision) (CompletionResult, error) {
	var res CompletionResult
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		res = CompletionResult{}
		rows, err := q.LockSchedulesToComplete(ctx, dbgen.LockSchedulesToCompleteParams{Now: now, MaxRows: int4(max)})
		if err != nil {
			return fmt.Errorf("lock schedules to complete: %w", mapErr(err))
		}
		res.Looked = len(rows)
		if len(rows) == 0 {
			return nil
		}
		candidates := make([]CompletionCandidate, len(rows))
		for i, r := range rows {
			candidates[i] = CompletionCandidate{Schedule: r.Schedule, TickStatus: domain.RunStatus(r.TickStatus), InFlight: r.InFlight, Armed: r.Armed}
		}
		var complete []int64
		var replan dbgen.ReplanSchedulesParams
		for _, d := range decide(candidates) {
			if d.Complete {
				complete = append(complete, d.ScheduleID)
				continue
			}
			action := d.PlanAction
			if d.PlanAt == nil {
				action = ""
			}
			replan.Ids = append(replan.Ids, d.ScheduleID)
			replan.PlanAts = append(replan.PlanAts, zeroIfNil(d.PlanAt))
			replan.PlanActions = append(replan.PlanActions, action)
		}
		if len(complete) > 0 {
			deleted, err := q.DeleteCompletedSchedules(ctx, complete)
			if err != nil {
				return fmt.Errorf("delete %d completed schedules: %w", len(complete), mapErr(err))
			}
			gone := make(map[int64]bool, len(deleted))
			for _, d := range deleted {
				gone[d.ID] = true
				res.Deleted = append(res.Deleted, d.Name)
			}
			var kept []int64
			for _, id := range complete {
				if !gone[id] {
					kept = append(kept, id)
				}
			}
			if err := q.MarkSchedulesCompleted(ctx, orEmpty(kept)); err != nil {
				return fmt.Errorf("mark %d schedules completed: %w", len(kept), mapErr(err))
			}
			res.Completed = len(kept)
		}
		if len(replan.Ids) > 0 {
			if err := q.ReplanSchedules(ctx, replan); err != nil {
				return fmt.Errorf("plan %d schedules: %w", len(replan.Ids), mapErr(err))
			}
		}
		return nil
	})
	return res, err
}
