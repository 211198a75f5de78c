package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tickgate/tickgate/store/dbgen"
)

// Per-schedule Prometheus series (store/queries/schedule_metrics.sql).

// ErrMetricsFull is returned when a schedule asks for series of its own while the cap of
// schedules that have them is reached.
var ErrMetricsFull = errors.New("the number of schedules with series of their own is at its cap")

// CreateScheduleWithMetrics inserts a schedule that has series of its own, in one
// transaction with the opt-in: at the cap (maxSchedules) nothing is created (ErrMetricsFull).
func (s *Store) CreateScheduleWithMetrics(ctx context.Context, p NewSchedule, maxSchedules int, opts ...CreateOption) (Schedule, error) {
	var row Schedule
	if p.AfterCompletion == "" {
		p.AfterCompletion = AfterCompletionKeep
	}
	o := createOptionsOf(opts)
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		if err := requireCalendars(ctx, q, o.calendars); err != nil {
			return err
		}
		var err error
		if row, err = q.InsertSchedule(ctx, p); err != nil {
			return fmt.Errorf("insert schedule %q: %w", p.Name, mapErr(err))
		}
		if err := setScheduleMetrics(ctx, q, p.Name, true, maxSchedules); err != nil {
			return err
		}
		row.Metrics = true
		return recordCreatedPaused(ctx, q, []Schedule{row}, o)
	})
	return row, err
}

// SetScheduleMetrics opts a schedule in or out of series of its own; opting in at the cap
// is ErrMetricsFull and an unknown name ErrNotFound.
func (s *Store) SetScheduleMetrics(ctx context.Context, name string, on bool, maxSchedules int) error {
	return setScheduleMetrics(ctx, s.Q, name, on, maxSchedules)
}

func setScheduleMetrics(ctx context.Context, q *dbgen.Queries, name string, on bool, maxSchedules int) error {
	_, err := q.SetScheduleMetrics(ctx, dbgen.SetScheduleMetricsParams{Metrics: on, Name: name, MaxSchedules: int64(maxSchedules)})
	if errors.Is(err, pgx.ErrNoRows) {
		if _, getErr := q.GetScheduleByName(ctx, name); getErr != nil {
			return fmt.Errorf("schedule %q: %w", name, mapErr(getErr))
		}
		return fmt.Errorf("schedule %q: %w (%d)", name, ErrMetricsFull, maxSchedules)
	}
	if err != nil {
		return fmt.Errorf("set metrics of schedule %q: %w", name, mapErr(err))
	}
	return nil
}

// CountSchedulesWithMetrics counts the schedules that have series of their own.
func (s *Store) CountSchedulesWithMetrics(ctx context.Context) (int64, error) {
	n, err := s.Q.CountSchedulesWithMetrics(ctx)
	if err != nil {
		return 0, fmt.Errorf("count schedules with metrics: %w", mapErr(err))
	}
	return n, nil
}

// ScheduleSeriesCounts are the counters of the first limit schedules (by name) that have
// series of their own.
type ScheduleSeriesCounts = dbgen.ScheduleSeriesCountsRow

// ScheduleLatenessBucket counts the fires of one schedule in one histogram bucket.
type ScheduleLatenessBucket = dbgen.ScheduleSeriesLatenessRow

// ScheduleSeries reads what the per-schedule series report: each opted-in schedule's
// counters and the lateness of its last perSchedule fires per bucket of bounds (seconds,
// ascending).
func (s *Store) ScheduleSeries(ctx context.Context, limit, perSchedule int, bounds []float64) ([]ScheduleSeriesCounts, []ScheduleLatenessBucket, error) {
	counts, err := s.Q.ScheduleSeriesCounts(ctx, int4(limit))
	if err != nil {
		return nil, nil, fmt.Errorf("per-schedule counters: %w", mapErr(err))
	}
	if len(counts) == 0 {
		return nil, nil, nil
	}
	buckets, err := s.Q.ScheduleSeriesLateness(ctx, dbgen.ScheduleSeriesLatenessParams{MaxRows: int4(limit), PerSchedule: int4(perSchedule), Bounds: bounds})
	if err != nil {
		return nil, nil, fmt.Errorf("per-schedule lateness: %w", mapErr(err))
	}
	return counts, buckets, nil
}
