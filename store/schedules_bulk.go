package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tickgate/tickgate/store/dbgen"
)

// BulkCreated is what CreateSchedules did: the rows it inserted, and the rows that held a
// name asked for already, by name.
type BulkCreated struct {
	Created  []Schedule
	Existing map[string]Schedule
}

// CreateSchedules inserts many schedules in one statement; a name taken already inserts
// nothing and its row is answered in Existing. When keep says an existing row is not the
// one asked for, nothing at all is inserted (the transaction rolls back) and keep's error is
// returned. Their specs' calendars (ExcludingCalendars) must each exist (an
// *UnknownCalendarsError otherwise, and nothing is inserted).
func (s *Store) CreateSchedules(ctx context.Context, rows []NewSchedule, keep func(existing Schedule) error, opts ...CreateOption) (BulkCreated, error) {
	o := createOptionsOf(opts)
	out := BulkCreated{Existing: map[string]Schedule{}}
	var p dbgen.InsertSchedulesParams
	for _, r := range rows {
		p.Names = append(p.Names, r.Name)
		p.Specs = append(p.Specs, string(r.Spec))
		p.Actions = append(p.Actions, string(r.Action))
		p.OverlapPolicies = append(p.OverlapPolicies, string(r.Overlap))
		p.CatchupWindowMs = append(p.CatchupWindowMs, r.CatchupWindowMs)
		p.SkipIfSuccessful = append(p.SkipIfSuccessful, r.SkipIfSuccessful)
		p.Paused = append(p.Paused, r.Paused)
		p.PauseNotes = append(p.PauseNotes, r.PauseNote)
		p.NextRunAt = append(p.NextRunAt, zeroIfNil(r.NextRunAt))
		p.Watermarks = append(p.Watermarks, zeroIfNil(r.Watermark))
		p.PlanAts = append(p.PlanAts, zeroIfNil(r.PlanAt))
		action := ""
		if r.PlanAction != nil {
			action = *r.PlanAction
		}
		p.PlanActions = append(p.PlanActions, action)
		p.SigningSecrets = append(p.SigningSecrets, r.SigningSecret)
		p.HeaderValues = append(p.HeaderValues, string(r.HeaderValues))
		p.Retries = append(p.Retries, string(r.Retry))
		after := r.AfterCompletion
		if after == "" {
			after = AfterCompletionKeep
		}
		p.AfterCompletions = append(p.AfterCompletions, after)
		var maxConcurrent int32
		var whenFull string
		if r.MaxConcurrent != nil && r.OverlapWhenFull != nil {
			maxConcurrent, whenFull = *r.MaxConcurrent, *r.OverlapWhenFull
		}
		p.MaxConcurrents = append(p.MaxConcurrents, maxConcurrent)
		p.WhenFulls = append(p.WhenFulls, whenFull)
		labels := "{}"
		if len(r.Labels) > 0 {
			labels = string(r.Labels)
		}
		p.Labels = append(p.Labels, labels)
	}
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		if err := requireCalendars(ctx, q, o.calendars); err != nil {
			return err
		}
		created, err := q.InsertSchedules(ctx, p)
		if err != nil {
			return fmt.Errorf("insert %d schedules: %w", len(rows), mapErr(err))
		}
		out.Created = created
		if err := recordCreatedPaused(ctx, q, created, o); err != nil {
			return err
		}
		if len(created) == len(rows) {
			return nil
		}
		inserted := make(map[string]bool, len(created))
		for _, c := range created {
			inserted[c.Name] = true
		}
		var taken []string
		for _, r := range rows {
			if !inserted[r.Name] {
				taken = append(taken, r.Name)
			}
		}
		existing, err := q.ListSchedulesByName(ctx, taken)
		if err != nil {
			return fmt.Errorf("read %d existing schedules: %w", len(taken), mapErr(err))
		}
		for _, e := range existing {
			if err := keep(e); err != nil {
				return err
			}
			out.Existing[e.Name] = e
		}
		return nil
	})
	if err != nil {
		return BulkCreated{}, err
	}
	return out, nil
}
