package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store/dbgen"
)

// ScheduleHistoryEntry is a schedule_history row: who paused, resumed or edited a schedule,
// when and why.
type ScheduleHistoryEntry = dbgen.ScheduleHistory

// HistoryEntry is what a change records in its schedule's history, in the change's own
// transaction.
type HistoryEntry struct {
	Kind  domain.HistoryKind
	Actor string
	Door  domain.Door
	Note  string
	// Changes are the fields an update changed (none for a pause or resume).
	Changes []FieldChange
}

// FieldChange is one field an update changed, with its value before and after.
type FieldChange struct {
	Field string          `json:"field"`
	From  json.RawMessage `json:"from"`
	To    json.RawMessage `json:"to"`
}

// insertHistory writes an entry of the schedule's history with q, inside the transaction of
// the change it tells of.
func insertHistory(ctx context.Context, q *dbgen.Queries, scheduleID int64, e HistoryEntry) error {
	changes := e.Changes
	if changes == nil {
		changes = []FieldChange{}
	}
	raw, err := json.Marshal(changes)
	if err != nil {
		return fmt.Errorf("history of schedule %d: %w", scheduleID, err)
	}
	err = q.InsertScheduleHistory(ctx, dbgen.InsertScheduleHistoryParams{
		ScheduleID: scheduleID, Kind: string(e.Kind), Actor: e.Actor, Door: string(e.Door), Note: e.Note, Changes: raw,
	})
	if err != nil {
		return fmt.Errorf("record the %s of schedule %d in its history: %w", e.Kind, scheduleID, mapErr(err))
	}
	return nil
}

// ScheduleHistory pages through a schedule's history, newest first; beforeID 0 starts at
// the newest.
func (s *Store) ScheduleHistory(ctx context.Context, scheduleID, beforeID int64, limit int) ([]ScheduleHistoryEntry, error) {
	rows, err := s.Q.ListScheduleHistory(ctx, dbgen.ListScheduleHistoryParams{ScheduleID: scheduleID, BeforeID: beforeID, MaxRows: int4(limit)})
	if err != nil {
		return nil, fmt.Errorf("history of schedule %d: %w", scheduleID, mapErr(err))
	}
	return rows, nil
}
