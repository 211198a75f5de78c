package store

import (
	"context"
	"fmt"
	"time"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store/dbgen"
)

// The console's filtered lists (store/queries/lists.sql).

// ScheduleFilter narrows GET /schedules: State is "" (any), "active", "paused" or
// "completed" (active and paused are the schedules not completed); NamePart keeps names
// holding it (case-insensitive).
type ScheduleFilter struct {
	State    string
	NamePart string
	// Selector keeps the schedules whose labels match it (empty: all).
	Selector domain.Selector
}

// ListSchedulesFiltered pages through the schedules a filter keeps, by name.
func (s *Store) ListSchedulesFiltered(ctx context.Context, f ScheduleFilter, afterName string, limit int) ([]Schedule, error) {
	var rows []Schedule
	var err error
	match, exclude := f.Selector.Containment()
	switch f.State {
	case "":
		rows, err = s.Q.ListSchedulesMatching(ctx, dbgen.ListSchedulesMatchingParams{
			AfterName: afterName, NamePart: f.NamePart, LabelsMatch: match, LabelsExclude: exclude, MaxRows: int4(limit),
		})
	case "completed":
		rows, err = s.Q.ListCompletedSchedules(ctx, dbgen.ListCompletedSchedulesParams{
			AfterName: afterName, NamePart: f.NamePart, LabelsMatch: match, LabelsExclude: exclude, MaxRows: int4(limit),
		})
	default:
		rows, err = s.Q.ListSchedulesInState(ctx, dbgen.ListSchedulesInStateParams{
			Paused: f.State == "paused", AfterName: afterName, NamePart: f.NamePart, LabelsMatch: match, LabelsExclude: exclude, MaxRows: int4(limit),
		})
	}
	if err != nil {
		return nil, fmt.Errorf("list schedules (state %q, name %q, selector %q): %w", f.State, f.NamePart, f.Selector.String(), mapErr(err))
	}
	return rows, nil
}

// RunFilter narrows a runs list: statuses and triggers (empty: any).
type RunFilter struct {
	Statuses []string
	Triggers []string
}

func orEmpty[T any](vs []T) []T {
	if vs == nil {
		return []T{}
	}
	return vs
}

// ListScheduleRunsFiltered pages through one schedule's runs, newest first.
func (s *Store) ListScheduleRunsFiltered(ctx context.Context, scheduleID int64, f RunFilter, beforeID int64, limit int) ([]ScheduleRun, error) {
	rows, err := s.Q.ListScheduleRunsFiltered(ctx, dbgen.ListScheduleRunsFilteredParams{
		ScheduleID: scheduleID, BeforeID: beforeID, Statuses: orEmpty(f.Statuses), Triggers: orEmpty(f.Triggers), MaxRows: int4(limit),
	})
	if err != nil {
		return nil, fmt.Errorf("list runs of schedule %d: %w", scheduleID, mapErr(err))
	}
	return rows, nil
}

// WindowRunFilter narrows the runs of every schedule to the ticks of [Since, Until);
// LateOver > 0 keeps only scheduled and catch-up fires later than it.
type WindowRunFilter struct {
	RunFilter
	Since, Until time.Time
	LateOver     time.Duration
}

// ScheduleRunOf is a run with its schedule's name.
type ScheduleRunOf = dbgen.ListRunsInWindowRow

// ListRunsInWindow pages through every schedule's runs in a window, newest first.
func (s *Store) ListRunsInWindow(ctx context.Context, f WindowRunFilter, beforeID int64, limit int) ([]ScheduleRunOf, error) {
	late := -1.0
	if f.LateOver > 0 {
		late = f.LateOver.Seconds()
	}
	rows, err := s.Q.ListRunsInWindow(ctx, dbgen.ListRunsInWindowParams{
		Since: f.Since, Until: f.Until, BeforeID: beforeID, Statuses: orEmpty(f.Statuses), Triggers: orEmpty(f.Triggers),
		LateOverS: late, MaxRows: int4(limit),
	})
	if err != nil {
		return nil, fmt.Errorf("list runs from %s to %s: %w", f.Since, f.Until, mapErr(err))
	}
	return rows, nil
}

// ListRolloutSummariesInStatus pages through the rollouts whose derived status is one of
// statuses, by id.
func (s *Store) ListRolloutSummariesInStatus(ctx context.Context, statuses []string, afterID int64, limit int) ([]RolloutSummary, error) {
	rows, err := s.Q.ListRolloutSummariesInStatus(ctx, dbgen.ListRolloutSummariesInStatusParams{AfterID: afterID, Statuses: statuses, MaxRows: int4(limit)})
	if err != nil {
		return nil, fmt.Errorf("list rollouts in %v: %w", statuses, mapErr(err))
	}
	out := make([]RolloutSummary, len(rows))
	for i, r := range rows {
		out[i] = summaryFrom(r)
	}
	return out, nil
}
