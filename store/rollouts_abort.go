package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store/dbgen"
)

// A rollout's abort threshold (strategy.abort, docs/progressive.md): checked right after
// task results are written (FinishTaskRuns, FinishTaskRun), before the runner that wrote
// them promotes the next tasks, and again by every full promotion round as a safety net.

// AbortTrip is a rollout stopped by its abort threshold.
type AbortTrip struct {
	RolloutID int64
	Status    domain.RolloutStatus // PAUSED or CANCELED
	Reason    string
}

// TripAbortThresholds pauses (or cancels, by the rule's action) each running rollout among
// ids whose threshold is crossed, recording the reason and emitting rollout.paused (or
// rollout.canceled) on the outbox, in one transaction that holds the rollouts' rows: a
// threshold trips once, whoever checks it. A canceled rollout's tasks not started are
// canceled too; running ones finish (its workflow then ends).
func (s *Store) TripAbortThresholds(ctx context.Context, ids []int64) ([]AbortTrip, error) {
	var trips []AbortTrip
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		var err error
		trips, err = tripAbortThresholds(ctx, q, ids)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("abort thresholds of rollouts %v: %w", ids, mapErr(err))
	}
	return trips, nil
}

func tripAbortThresholds(ctx context.Context, q *dbgen.Queries, ids []int64) ([]AbortTrip, error) {
	rows, err := q.RolloutsOverAbortThreshold(ctx, ids)
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	var trips []AbortTrip
	for _, r := range rows {
		status, typ := domain.RolloutPaused, "rollout.paused"
		if r.Action == domain.AbortCancel {
			status, typ = domain.RolloutCanceled, "rollout.canceled"
		}
		reason := fmt.Sprintf("abort threshold: %d of %d finished tasks failed (%.4g%%, more than %.4g%%, at least %d finished)",
			r.Failed, r.Finished, 100*float64(r.Failed)/float64(r.Finished), r.FailedPercent, r.MinFinished)
		if _, err := q.PauseRolloutFor(ctx, dbgen.PauseRolloutForParams{ID: r.ID, Status: status, Reason: reason}); err != nil {
			return nil, fmt.Errorf("stop rollout %d: %w", r.ID, err)
		}
		if status == domain.RolloutCanceled {
			if _, err := q.CancelRolloutTasks(ctx, r.ID); err != nil {
				return nil, fmt.Errorf("cancel the tasks of rollout %d: %w", r.ID, err)
			}
		}
		data := map[string]any{"rollout_id": r.ID, "status": status, "reason": reason, "cause": "abort",
			"finished": r.Finished, "failed": r.Failed}
		if err := emitRolloutEvent(ctx, q, r.ID, typ, data); err != nil {
			return nil, err
		}
		trips = append(trips, AbortTrip{RolloutID: r.ID, Status: status, Reason: reason})
	}
	return trips, nil
}
