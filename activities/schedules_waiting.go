package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/store"
)

// BackfillRange is a backfill the workflow has still to fire: the ticks after Done up to End.
type BackfillRange struct {
	Done    time.Time
	End     time.Time
	Overlap domain.Overlap
}

// WaitingBackfills is what MirrorBackfills writes: the schedule's pending backfill ranges,
// under the definition (spec, creation) the workflow runs.
type WaitingBackfills struct {
	ScheduleID int64
	Spec       schedulespec.Spec
	CreatedAt  time.Time
	Ranges     []BackfillRange
}

// maxCountedBackfillTicks bounds the count of one range's remaining ticks (a request holds
// at most 10,000).
const maxCountedBackfillTicks = 100000

// MirrorBackfills writes the schedule's pending backfill ranges, each with the ticks it has
// still to fire, to its row (schedules.backfills): what the schedule's view shows waiting.
func (a *ScheduleActivities) MirrorBackfills(ctx context.Context, w WaitingBackfills) error {
	spec, err := schedulespec.Normalize(w.Spec, w.CreatedAt)
	if err != nil {
		return temporal.NewNonRetryableApplicationError("stored spec is invalid: "+err.Error(), "BadSpec", err)
	}
	pending := make([]store.PendingBackfill, 0, len(w.Ranges))
	for _, r := range w.Ranges {
		from := r.Done.Add(time.Nanosecond)
		bspec := spec.ForBackfill(w.CreatedAt, from)
		first := bspec.Next(r.Done)
		if first.IsZero() || first.After(r.End) {
			continue // fired to its end; the workflow drops it on its next round
		}
		pending = append(pending, store.PendingBackfill{
			Start: first.UTC(), End: r.End.UTC(), Overlap: r.Overlap,
			Remaining: bspec.CountTicks(first, r.End, maxCountedBackfillTicks),
		})
	}
	return gone(a.Store.SetBackfills(ctx, w.ScheduleID, pending), w.ScheduleID)
}
