package store

import (
	"context"
	"fmt"

	"github.com/tickgate/tickgate/domain"
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
	rows, err := s.Q.RecentFireLateness(ctx, dbgen.RecentFireLatenessParams{MaxRows: int4(max), Bounds: bounds})
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
	rows, err := s.Q.RecentRefillLatency(ctx, dbgen.RecentRefillLatencyParams{MaxRows: int4(max), Bounds: bounds})
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

// The statuses StatusCounts lists for each table even when no row has them (0): a series
// that exists before its first count lets an alert see it rise (the first MISSED tick).
var (
	scheduleRunStatuses = []domain.RunStatus{domain.RunBuffered, domain.RunRunning, domain.RunSucceeded, domain.RunFailed,
		domain.RunCanceled, domain.RunTerminated, domain.RunSkipped, domain.RunMissed}
	deviceTaskStatuses = []domain.DeviceTaskStatus{domain.DeviceTaskPending, domain.DeviceTaskRunning, domain.DeviceTaskSuccess,
		domain.DeviceTaskFailed, domain.DeviceTaskCanceled}
)

// StatusCounts counts the rows of one of the Count* tables by status: every status the table
// may hold, 0 when no row has it.
func (s *Store) StatusCounts(ctx context.Context, table string) ([]StatusCount, error) {
	switch table {
	case CountScheduleRuns:
		rows, err := s.Q.ScheduleRunStatusCounts(ctx)
		if err != nil {
			return nil, fmt.Errorf("schedule runs by status: %w", mapErr(err))
		}
		return zeroFilled(scheduleRunStatuses, rows, func(r dbgen.ScheduleRunStatusCountsRow) (string, int64) { return r.Status, r.N }), nil
	case CountTaskRuns:
		rows, err := s.Q.TaskRunStatusCounts(ctx)
		if err != nil {
			return nil, fmt.Errorf("task runs by status: %w", mapErr(err))
		}
		return zeroFilled(domain.TaskRunStatuses, rows, func(r dbgen.TaskRunStatusCountsRow) (string, int64) { return r.Status, r.N }), nil
	case CountDeviceTasks:
		rows, err := s.Q.DeviceTaskStatusCounts(ctx)
		if err != nil {
			return nil, fmt.Errorf("device tasks by status: %w", mapErr(err))
		}
		return zeroFilled(deviceTaskStatuses, rows, func(r dbgen.DeviceTaskStatusCountsRow) (string, int64) { return r.Status, r.N }), nil
	}
	return nil, fmt.Errorf("status counts: no table %q", table)
}

// zeroFilled lists the count of every key of all, in its order (0 when no row has it), then
// of any key the rows hold that all does not name.
func zeroFilled[K ~string, R any](all []K, rows []R, kv func(R) (string, int64)) []StatusCount {
	out := make([]StatusCount, 0, len(all))
	index := make(map[string]int, len(all))
	for _, k := range all {
		index[string(k)] = len(out)
		out = append(out, StatusCount{Status: string(k)})
	}
	for _, r := range rows {
		k, n := kv(r)
		if i, ok := index[k]; ok {
			out[i].N = n
		} else {
			out = append(out, StatusCount{Status: k, N: n})
		}
	}
	return out
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
