package store

import (
	"context"
	"fmt"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store/dbgen"
)

// ScheduleRef names a schedule a selector reached.
type ScheduleRef = dbgen.ListSchedulesBySelectorRow

// SchedulesBySelector lists, in name order, at most limit schedules whose labels match sel.
func (s *Store) SchedulesBySelector(ctx context.Context, sel domain.Selector, limit int) ([]ScheduleRef, error) {
	match, exclude := sel.Containment()
	rows, err := s.Q.ListSchedulesBySelector(ctx, dbgen.ListSchedulesBySelectorParams{LabelsMatch: match, LabelsExclude: exclude, MaxRows: int4(limit)})
	if err != nil {
		return nil, fmt.Errorf("schedules matching %q: %w", sel.String(), mapErr(err))
	}
	return rows, nil
}
