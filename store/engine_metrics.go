package store

import (
	"context"
	"fmt"

	"github.com/tickgate/tickgate/store/dbgen"
)

// The engines' figures a metrics scrape reads, the same on every API replica.

// LatencyBucket counts the values of one histogram bucket: those exceeding exactly Above of
// the ascending bounds (0: at most the first bound), with their sum in seconds.
type LatencyBucket struct {
	Above int
	Count int64
	Sum   float64
}

// StatusCount is how many rows have one status.
type StatusCount struct {
	Status string
	N      int64
}

// PCSlots are a PC's slots in use and the slots it should keep busy (min(capacity,
// eligible devices)).
type PCSlots struct {
	PC      string
	Running int64
	Target  int64
}

// RecentFireLateness buckets the lateness (fired_at − tick) of the last max scheduled and
// catch-up fires that are true.
func (s *Store) RecentFireLateness(ctx context.Context, max int, bounds []float64) ([]LatencyBucket, error) {
	rows, err := s.Q.RecentFireLateness(ctx, dbgen.RecentFireLatenessParams{MaxRows: int32(max), Bounds: bounds})
	if err != nil {
		return nil, fmt.Errorf("recent fire lateness: %w", mapErr(err))
	}
	out := make([]LatencyBucket, len(rows))
	for i, r := range rows {
		out[i] = LatencyBucket{Above: int(r.Bucket), Count: r.N, Sum: r.SumS}
	}
	return out, nil
}

// RecentRefillLatency buckets, for the last max device executions, the time from their PC's
// slot freeing to their creation.
func (s *Store) RecentRefillLatency(ctx context.Context, max int, bounds []float64) ([]LatencyBucket, error) {
	rows, err := s.Q.RecentRefillLatency(ctx, dbgen.RecentRefillLatencyParams{MaxRows: int32(max), Bounds: bounds})
	if err != nil {
		return nil, fmt.Errorf("recent refill latency: %w", mapErr(err))
	}
	out := make([]LatencyBucket, len(rows))
	for i, r := range rows {
		out[i] = LatencyBucket{Above: int(r.Bucket), Count: r.N, Sum: r.SumS}
	}
	return out, nil
}

// Counted tables of StatusCounts.
const (
	CountScheduleRuns = "schedule_runs" // the runs that are true
	CountTaskRuns     = "task_runs"
	CountDeviceTasks  = "tasks"
)

// StatusCounts counts the rows of one of the Count* tables by status.
func (s *Store) StatusCounts(ctx context.Context, table string) ([]StatusCount, error) {
	var out []StatusCount
	switch table {
	case CountScheduleRuns:
		rows, err := s.Q.ScheduleRunStatusCounts(ctx)
		if err != nil {
			return nil, fmt.Errorf("schedule runs by status: %w", mapErr(err))
		}
		for _, r := range rows {
			out = append(out, StatusCount{Status: r.Status, N: r.N})
		}
	case CountTaskRuns:
		rows, err := s.Q.TaskRunStatusCounts(ctx)
		if err != nil {
			return nil, fmt.Errorf("task runs by status: %w", mapErr(err))
		}
		for _, r := range rows {
			out = append(out, StatusCount{Status: r.Status, N: r.N})
		}
	case CountDeviceTasks:
		rows, err := s.Q.DeviceTaskStatusCounts(ctx)
		if err != nil {
			return nil, fmt.Errorf("device tasks by status: %w", mapErr(err))
		}
		for _, r := range rows {
			out = append(out, StatusCount{Status: r.Status, N: r.N})
		}
	default:
		return nil, fmt.Errorf("status counts: no table %q", table)
	}
	return out, nil
}

// PCSlotCounts are every PC's slots in use and its target.
func (s *Store) PCSlotCounts(ctx context.Context) ([]PCSlots, error) {
	rows, err := s.Q.PCSlotCounts(ctx)
	if err != nil {
		return nil, fmt.Errorf("pc slots: %w", mapErr(err))
	}
	out := make([]PCSlots, len(rows))
	for i, r := range rows {
		out[i] = PCSlots{PC: r.PcName, Running: r.Running, Target: r.Target}
	}
	return out, nil
}
