package store

import (
	"context"
	"fmt"
	"time"

	"github.com/tickgate/tickgate/store/dbgen"
)

// Statistics computed in PostgreSQL over a window of ticks (store/queries/stats.sql).

// RunBucket counts the runs whose tick lies in one bucket of a window (or the whole of it),
// with the lateness quantiles of its scheduled and catch-up fires in seconds (0 when
// LatenessSamples is 0).
type RunBucket = dbgen.RunStatsByBucketRow

// RunWindow asks for the runs of [Since, Until) of one schedule (ScheduleID > 0) or all,
// in buckets of Bucket; a fire counts as late past Late.
type RunWindow struct {
	ScheduleID   int64
	Since, Until time.Time
	Bucket, Late time.Duration
}

// RunStats answers the window's total and its non-empty buckets in time order.
func (s *Store) RunStats(ctx context.Context, w RunWindow) (total RunBucket, buckets []RunBucket, err error) {
	rows, err := s.Q.RunStatsByBucket(ctx, dbgen.RunStatsByBucketParams{
		BucketS: w.Bucket.Seconds(), Since: w.Since, Until: w.Until, ScheduleID: w.ScheduleID, LateS: w.Late.Seconds(),
	})
	if err != nil {
		return total, nil, fmt.Errorf("run statistics from %s to %s: %w", w.Since, w.Until, mapErr(err))
	}
	total = RunBucket{Whole: true, Bucket: w.Since}
	for _, r := range rows {
		if r.Whole {
			total = r
			continue
		}
		buckets = append(buckets, r)
	}
	return total, buckets, nil
}

// ScheduleStates counts schedules: all of them, the paused ones and the completed ones
// (one-time schedules whose run ended; a completed schedule counts as completed only).
func (s *Store) ScheduleStates(ctx context.Context) (total, paused, completed int64, err error) {
	r, err := s.Q.ScheduleStateCounts(ctx)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("count schedules: %w", mapErr(err))
	}
	return r.Total, r.Paused, r.Completed, nil
}

// RolloutsInFlight answers how many rollouts have a task still active and the newest
// limit of them.
func (s *Store) RolloutsInFlight(ctx context.Context, limit int) (int64, []RolloutSummary, error) {
	n, err := s.Q.CountRolloutsInFlight(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("count rollouts in flight: %w", mapErr(err))
	}
	rows, err := s.Q.RolloutsInFlight(ctx, int4(limit))
	if err != nil {
		return 0, nil, fmt.Errorf("list rollouts in flight: %w", mapErr(err))
	}
	out := make([]RolloutSummary, len(rows))
	for i, r := range rows {
		out[i] = summaryFrom(r)
	}
	return n, out, nil
}

// ActiveDeviceTask is the active device task, if any (D1: at most one).
func (s *Store) ActiveDeviceTask(ctx context.Context) (*DeviceTask, error) {
	rows, err := s.Q.ActiveDeviceTask(ctx)
	if err != nil {
		return nil, fmt.Errorf("active device task: %w", mapErr(err))
	}
	if len(rows) == 0 {
		return nil, nil
	}
	return &rows[0], nil
}
