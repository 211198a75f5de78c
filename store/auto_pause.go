package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store/dbgen"
)

// Schedules that pause themselves after sustained failure (store/queries/auto_pause.sql;
// docs/schedules.md "Endpoints that fail"). Every transaction that ends runs counts their
// outcomes into their schedules' failure streaks; one that meets a schedule's auto_pause rule
// marks its pause due, with the reason. A worker then sends the schedule's workflow the pause
// command (AutoPausesDue), whose mirror write (SetPaused) records the pause in the history
// as the schedule's own (auto_pause), writes the outbox event schedule.auto_paused, and
// keeps the reason until a resume clears it — all in one transaction.

// AutoPausedEventType is the type of the event a schedule's own pause writes, on the
// schedules topic (domain.DefaultEventTopic).
const AutoPausedEventType = "schedule.auto_paused"

// runEnd is a run's end, for its schedule's failure streak.
type runEnd struct {
	ScheduleID  int64
	ScheduledAt time.Time
	Status      domain.RunStatus
	FinishedAt  time.Time
	Error       string
}

// noteStreaks counts the ends of runs (in the order they ended) into their schedules'
// failure streaks, and marks due the pause of each schedule whose rule they meet, at now.
// The caller holds the schedules' rows (or takes them here, in id order, by updating).
func noteStreaks(ctx context.Context, q *dbgen.Queries, ends []runEnd, now time.Time) error {
	type streak struct {
		reset    bool
		failures int32
		first    time.Time
		lastErr  string
	}
	var ids []int64
	for _, e := range ends {
		ids = append(ids, e.ScheduleID)
	}
	since, err := q.StreaksSince(ctx, ids)
	if err != nil {
		return fmt.Errorf("the failure streaks of %d schedules: %w", len(ids), mapErr(err))
	}
	if len(since) == 0 {
		return nil // none has auto_pause
	}
	counts := make(map[int64]time.Time, len(since))
	for _, s := range since {
		counts[s.ID] = s.Since
	}
	per := map[int64]*streak{}
	var order []int64
	for _, e := range ends {
		from, ok := counts[e.ScheduleID]
		if !ok || (e.Status != domain.RunSucceeded && e.Status != domain.RunFailed) || e.ScheduledAt.Before(from) {
			// No auto_pause, not a delivery's end, or a run fired before a resume.
			continue
		}
		s := per[e.ScheduleID]
		if s == nil {
			s = &streak{}
			per[e.ScheduleID] = s
			order = append(order, e.ScheduleID)
		}
		if e.Status == domain.RunSucceeded {
			*s = streak{reset: true}
			continue
		}
		if s.failures == 0 {
			s.first = e.FinishedAt.UTC()
		}
		s.failures++
		s.lastErr = e.Error
	}
	if len(order) == 0 {
		return nil
	}
	var p dbgen.NoteRunStreaksParams
	for _, id := range order {
		s := per[id]
		p.ScheduleIds = append(p.ScheduleIds, id)
		p.Reset = append(p.Reset, s.reset)
		p.Failures = append(p.Failures, s.failures)
		p.FirstFailure = append(p.FirstFailure, s.first)
	}
	rows, err := q.NoteRunStreaks(ctx, p)
	if err != nil {
		return fmt.Errorf("note the failure streaks of %d schedules: %w", len(order), mapErr(err))
	}
	for _, r := range rows {
		if r.NewFailures == 0 || r.Paused || r.Due {
			continue
		}
		var act domain.Action
		if err := json.Unmarshal(r.Action, &act); err != nil || act.AutoPause == nil {
			continue
		}
		reason, due := act.AutoPause.Due(int(r.FailureStreak), r.FailingSince, now, per[r.ID].lastErr)
		if !due {
			continue
		}
		if err := q.SetAutoPauseDue(ctx, dbgen.SetAutoPauseDueParams{ID: r.ID, Reason: &reason}); err != nil {
			return fmt.Errorf("mark the auto-pause of schedule %q due: %w", r.Name, mapErr(err))
		}
	}
	return nil
}

// applyAutoPause records, in the transaction of the pause its workflow applied, that the
// schedule paused itself: the reason kept until a resume, and the outbox event.
func applyAutoPause(ctx context.Context, q *dbgen.Queries, row Schedule) (Schedule, error) {
	if err := q.ApplyAutoPause(ctx, row.ID); err != nil {
		return row, fmt.Errorf("apply the auto-pause of schedule %q: %w", row.Name, mapErr(err))
	}
	at := time.Now().UTC()
	reason := ""
	if row.AutoPauseDue != nil {
		reason = *row.AutoPauseDue
	}
	data, _ := json.Marshal(map[string]any{
		"schedule": row.Name, "reason": reason, "paused_at": at, "failed_runs": row.FailureStreak,
		"failing_since": row.FailingSince,
	})
	ev, err := q.InsertEvent(ctx, dbgen.InsertEventParams{Topic: domain.DefaultEventTopic, Type: AutoPausedEventType, AggregateID: row.Name, Data: data})
	if err != nil {
		return row, fmt.Errorf("the event of schedule %q pausing itself: %w", row.Name, mapErr(err))
	}
	if err := q.InsertOutboxMessage(ctx, dbgen.InsertOutboxMessageParams{EventID: ev.ID, Topic: ev.Topic}); err != nil {
		return row, fmt.Errorf("the event of schedule %q pausing itself: %w", row.Name, mapErr(err))
	}
	row.AutoPausedAt, row.AutoPauseReason, row.AutoPauseDue = &at, &reason, nil
	return row, nil
}

// AutoPauseDue is a schedule whose auto_pause rule was met, its pause not yet applied.
type AutoPauseDue struct {
	ID     int64
	Name   string
	Reason string
}

// AutoPausesDue lists up to max schedules whose pause is due.
func (s *Store) AutoPausesDue(ctx context.Context, max int) ([]AutoPauseDue, error) {
	rows, err := s.Q.ListAutoPausesDue(ctx, int4(max))
	if err != nil {
		return nil, fmt.Errorf("auto-pauses due: %w", mapErr(err))
	}
	out := make([]AutoPauseDue, len(rows))
	for i, r := range rows {
		out[i] = AutoPauseDue{ID: r.ID, Name: r.Name, Reason: r.Reason}
	}
	return out, nil
}
