package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tickgate/tickgate/store/dbgen"
)

// ScheduleRefusal is a command a schedule refused where nobody could be answered (a signal).
type ScheduleRefusal = dbgen.ScheduleRefusal

// NewScheduleRefusal is what RecordScheduleRefusal records.
type NewScheduleRefusal = dbgen.InsertScheduleRefusalParams

// RecordScheduleRefusal records a refused command and keeps the schedule's newest 100. The
// schedule being gone is ErrNotFound.
func (s *Store) RecordScheduleRefusal(ctx context.Context, r NewScheduleRefusal) error {
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		if err := q.InsertScheduleRefusal(ctx, r); err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "23503" { // the schedule was deleted
				return ErrNotFound
			}
			return err
		}
		return q.TrimScheduleRefusals(ctx, r.ScheduleID)
	})
	if err != nil {
		return fmt.Errorf("record a refused %s of schedule %d: %w", r.Command, r.ScheduleID, mapErr(err))
	}
	return nil
}

// ScheduleRefusals lists a schedule's newest refused commands, newest first.
func (s *Store) ScheduleRefusals(ctx context.Context, scheduleID int64, limit int) ([]ScheduleRefusal, error) {
	rows, err := s.Q.ListScheduleRefusals(ctx, dbgen.ListScheduleRefusalsParams{ScheduleID: scheduleID, MaxRows: int4(limit)})
	if err != nil {
		return nil, fmt.Errorf("list refused commands of schedule %d: %w", scheduleID, mapErr(err))
	}
	return rows, nil
}
