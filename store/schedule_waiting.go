package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store/dbgen"
)

// PendingBackfill is a backfill range a schedule's workflow has still to fire, as mirrored in
// schedules.backfills.
type PendingBackfill struct {
	Start     time.Time      `json:"start"`
	End       time.Time      `json:"end"`
	Overlap   domain.Overlap `json:"overlap,omitempty"`
	Remaining int            `json:"remaining"`
}

// SetBackfills mirrors the backfill ranges the schedule's workflow has still to fire.
func (s *Store) SetBackfills(ctx context.Context, scheduleID int64, pending []PendingBackfill) error {
	if pending == nil {
		pending = []PendingBackfill{}
	}
	b, err := json.Marshal(pending)
	if err != nil {
		return fmt.Errorf("encode backfills of schedule %d: %w", scheduleID, err)
	}
	if err := s.Q.SetScheduleBackfills(ctx, dbgen.SetScheduleBackfillsParams{ID: scheduleID, Backfills: b}); err != nil {
		return fmt.Errorf("set backfills of schedule %d: %w", scheduleID, mapErr(err))
	}
	return nil
}

// Backfills decodes a schedule row's pending backfill ranges.
func Backfills(row Schedule) ([]PendingBackfill, error) {
	var out []PendingBackfill
	if len(row.Backfills) == 0 {
		return out, nil
	}
	if err := json.Unmarshal(row.Backfills, &out); err != nil {
		return nil, fmt.Errorf("decode backfills of schedule %q: %w", row.Name, err)
	}
	return out, nil
}

// BufferedCounts counts the ticks waiting under each schedule's overlap policy; schedules
// with none are absent from the map.
func (s *Store) BufferedCounts(ctx context.Context, scheduleIDs []int64) (map[int64]int64, error) {
	rows, err := s.Q.CountBufferedRuns(ctx, scheduleIDs)
	if err != nil {
		return nil, fmt.Errorf("count buffered runs: %w", mapErr(err))
	}
	out := make(map[int64]int64, len(rows))
	for _, r := range rows {
		out[r.ScheduleID] = r.Buffered
	}
	return out, nil
}
