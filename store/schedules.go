package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/scheduleplan"
	"github.com/tickgate/tickgate/store/dbgen"
)

// Schedule is a schedules row.
type Schedule = dbgen.Schedule

// ScheduleRun is a schedule_runs row.
type ScheduleRun = dbgen.ScheduleRun

// NewSchedule is what CreateSchedule inserts.
type NewSchedule = dbgen.InsertScheduleParams

// CreateSchedule inserts a schedule; a taken name is ErrConflict. The calendars its spec
// excludes (ExcludingCalendars) must each exist (an *UnknownCalendarsError otherwise), and
// are read FOR SHARE in the insert's transaction so that none is deleted meanwhile. Created
// paused by someone (CreatedBy), its pause is the first entry of its history, in the same
// transaction.
func (s *Store) CreateSchedule(ctx context.Context, p NewSchedule, opts ...CreateOption) (Schedule, error) {
	if p.AfterCompletion == "" {
		p.AfterCompletion = AfterCompletionKeep
	}
	o := createOptionsOf(opts)
	if len(o.calendars) == 0 && !p.Paused {
		// Nothing to check, nothing for the history: one statement, as cheap as a create gets.
		row, err := s.Q.InsertSchedule(ctx, p)
		if err != nil {
			return Schedule{}, fmt.Errorf("insert schedule %q: %w", p.Name, mapErr(err))
		}
		return row, nil
	}
	var row Schedule
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		if err := requireCalendars(ctx, q, o.calendars); err != nil {
			return err
		}
		var err error
		if row, err = q.InsertSchedule(ctx, p); err != nil {
			return fmt.Errorf("insert schedule %q: %w", p.Name, mapErr(err))
		}
		return recordCreatedPaused(ctx, q, []Schedule{row}, o)
	})
	if err != nil {
		return Schedule{}, err
	}
	return row, nil
}

// What a one-time schedule does once its run has ended (schedules.after_completion): the
// values of internal/scheduleplan's one-time rule.
const (
	AfterCompletionKeep   = scheduleplan.AfterCompletionKeep
	AfterCompletionDelete = scheduleplan.AfterCompletionDelete
)

// CreateOption adds to a create.
type CreateOption func(*createOptions)

type createOptions struct {
	by        string
	calendars []string
}

func createOptionsOf(opts []CreateOption) createOptions {
	var o createOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// CreatedBy names who creates the schedules: one created paused has that pause, by them, as
// the first entry of its history.
func CreatedBy(actor string) CreateOption {
	return func(o *createOptions) { o.by = actor }
}

// ExcludingCalendars names the calendars the new schedules' specs exclude: each must exist,
// checked in the create's transaction.
func ExcludingCalendars(names ...string) CreateOption {
	return func(o *createOptions) { o.calendars = append(o.calendars, names...) }
}

// recordCreatedPaused writes, with q, the pause of each schedule created paused into its
// history, when the create names who made it.
func recordCreatedPaused(ctx context.Context, q *dbgen.Queries, created []Schedule, o createOptions) error {
	if o.by == "" {
		return nil
	}
	for _, row := range created {
		if !row.Paused {
			continue
		}
		if err := insertHistory(ctx, q, row.ID, HistoryEntry{Kind: domain.HistoryPause, Actor: o.by, Door: domain.DoorAPI, Note: row.PauseNote}); err != nil {
			return err
		}
	}
	return nil
}

// GetSchedule reads a schedule by name.
func (s *Store) GetSchedule(ctx context.Context, name string) (Schedule, error) {
	row, err := s.Q.GetScheduleByName(ctx, name)
	if err != nil {
		return Schedule{}, fmt.Errorf("get schedule %q: %w", name, mapErr(err))
	}
	return row, nil
}

// GetScheduleByID reads a schedule by id.
func (s *Store) GetScheduleByID(ctx context.Context, id int64) (Schedule, error) {
	row, err := s.Q.GetScheduleByID(ctx, id)
	if err != nil {
		return Schedule{}, fmt.Errorf("get schedule %d: %w", id, mapErr(err))
	}
	return row, nil
}

// ListSchedules pages through schedules by name.
func (s *Store) ListSchedules(ctx context.Context, afterName string, limit int) ([]Schedule, error) {
	rows, err := s.Q.ListSchedules(ctx, dbgen.ListSchedulesParams{AfterName: afterName, MaxRows: int4(limit)})
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", mapErr(err))
	}
	return rows, nil
}

// DeleteSchedule removes a schedule and (by cascade) its runs; it returns the schedule's id
// and the workflow ids of its armed workflow fires, whose delayed starts the caller stops.
// The events of its armed, unreleased fires go with it in the same transaction (they never
// happened); released events stay, as the feed's history.
func (s *Store) DeleteSchedule(ctx context.Context, name string) (id int64, delayedStarts []string, err error) {
	err = s.retractingTx(ctx, func(q *dbgen.Queries) error {
		var err error
		if id, err = q.LockScheduleByName(ctx, name); err != nil {
			return fmt.Errorf("lock schedule %q: %w", name, mapErr(err))
		}
		if delayedStarts, err = q.ListArmedWorkflowRuns(ctx, id); err != nil {
			return fmt.Errorf("armed workflow fires of schedule %q: %w", name, mapErr(err))
		}
		if _, err := retractArmed(ctx, q, id, false, "the schedule was deleted"); err != nil {
			return err
		}
		if _, err := q.DeleteSchedule(ctx, name); err != nil {
			return fmt.Errorf("delete schedule %q: %w", name, mapErr(err))
		}
		return nil
	})
	return id, delayedStarts, err
}

// Retraction is what a command retracted: the ticks of the armed fires it took back, and
// the workflow ids of those that were workflow fires (their delayed starts were stopped
// before, see RetractArmedWorkflowRuns).
type Retraction struct {
	Ticks       []time.Time
	WorkflowIDs []string
}

// PauseChange is a pause or resume decided by a schedule's workflow, and who asked for it
// (Actor, Door) and why (Note), for the schedule's history.
type PauseChange struct {
	ID     int64
	Paused bool
	Note   string
	Actor  string
	Door   domain.Door
}

// auto reports whether the change is the pause a schedule's auto_pause rule asked for.
func (c PauseChange) auto() bool { return c.Paused && c.Actor == domain.AutoPauseIdentity }

// SetPaused mirrors a pause or resume decided by the schedule's workflow and, when it changes
// the paused state, records it in the schedule's history in the same transaction: the
// history never tells of a pause that did not happen, nor misses one. Pausing a paused
// schedule (resuming an active one) changes nothing — the standing pause keeps its note and
// its entry — and answers changed false. A pause retracts the schedule's armed, unreleased
// fires in the same transaction and returns them.
func (s *Store) SetPaused(ctx context.Context, c PauseChange) (row Schedule, changed bool, retracted Retraction, err error) {
	err = s.retractingTx(ctx, func(q *dbgen.Queries) error {
		var err error
		if row, err = q.LockScheduleByID(ctx, c.ID); err != nil {
			return fmt.Errorf("lock schedule %d: %w", c.ID, mapErr(err))
		}
		if changed = row.Paused != c.Paused; changed {
			note := c.Note
			if !c.Paused {
				note = "" // a resume's note is the history's; the row's note is the standing pause's
			}
			row, err = q.SetSchedulePaused(ctx, dbgen.SetSchedulePausedParams{ID: c.ID, Paused: c.Paused, PauseNote: note})
			if err != nil {
				return fmt.Errorf("set schedule %d paused=%v: %w", c.ID, c.Paused, mapErr(err))
			}
			kind := domain.HistoryResume
			if c.Paused {
				kind = domain.HistoryPause
			}
			autoPause := c.auto() && row.AutoPauseDue != nil
			if autoPause {
				kind = domain.HistoryAutoPause
			}
			if err := insertHistory(ctx, q, c.ID, HistoryEntry{Kind: kind, Actor: c.Actor, Door: c.Door, Note: c.Note}); err != nil {
				return err
			}
			switch {
			case autoPause:
				if row, err = applyAutoPause(ctx, q, row); err != nil {
					return err
				}
			case !c.Paused:
				if err := q.ClearAutoPause(ctx, c.ID); err != nil {
					return fmt.Errorf("clear the auto-pause of schedule %d: %w", c.ID, mapErr(err))
				}
				row.AutoPausedAt, row.AutoPauseReason, row.AutoPauseDue, row.FailureStreak, row.FailingSince = nil, nil, nil, 0, nil
			}
		} else if c.auto() && row.AutoPauseDue != nil {
			// Paused already: the rule's pause has nothing to do.
			if err := q.ClearAutoPauseDue(ctx, c.ID); err != nil {
				return fmt.Errorf("clear the auto-pause due of schedule %d: %w", c.ID, mapErr(err))
			}
		}
		if c.Paused {
			retracted, err = retractArmed(ctx, q, c.ID, true, "the schedule was paused")
		}
		return err
	})
	return row, changed, retracted, err
}

// Reschedule mirrors a reschedule's next fire and retracts the schedule's armed, unreleased
// fires in the same transaction, returning them.
func (s *Store) Reschedule(ctx context.Context, id int64, next *time.Time) (retracted Retraction, err error) {
	err = s.retractingTx(ctx, func(q *dbgen.Queries) error {
		if err := q.SetScheduleNextRunAt(ctx, dbgen.SetScheduleNextRunAtParams{ID: id, NextRunAt: next}); err != nil {
			return fmt.Errorf("set next_run_at of schedule %d: %w", id, mapErr(err))
		}
		var err error
		retracted, err = retractArmed(ctx, q, id, true, "the schedule was rescheduled")
		return err
	})
	return retracted, err
}

// RetractArmed retracts the schedule's armed fires not yet due, under its row lock, and
// returns them: its workflow took a new definition, which decides those ticks anew, or a
// command that changes what the armed tick depended on came first (why says which).
func (s *Store) RetractArmed(ctx context.Context, scheduleID int64, why string) (retracted Retraction, err error) {
	err = s.retractingTx(ctx, func(q *dbgen.Queries) error {
		if _, err := q.LockScheduleByID(ctx, scheduleID); err != nil {
			return fmt.Errorf("lock schedule %d: %w", scheduleID, mapErr(err))
		}
		retracted, err = retractArmed(ctx, q, scheduleID, true, why)
		return err
	})
	return retracted, err
}

// retractingTx runs fn in a transaction that may retract armed fires: it holds the release
// lock shared (taken first, before any row lock, so that it never waits for a release
// while holding a row the release waits for), so no release runs meanwhile and a fire a
// release made true is never taken back.
func (s *Store) retractingTx(ctx context.Context, fn func(q *dbgen.Queries) error) error {
	return s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		if err := q.ShareReleaseLock(ctx, releaseLock); err != nil {
			return fmt.Errorf("release lock (shared): %w", mapErr(err))
		}
		return fn(q)
	})
}

// retractArmed takes back the schedule's armed fires that are not released yet: an event
// fire's run, event and outbox message are deleted; a workflow fire's run stays as the
// record of its retraction (RetractArmedWorkflowRuns: the caller stopped its delayed start
// before). It returns their ticks. The caller runs in a retractingTx: of a retraction and
// a release racing for one fire exactly one wins.
//
// A fire whose visible time has already come is kept unless the schedule itself goes
// (keepDue false): it was due before the command, and the releaser releases it even if late.
func retractArmed(ctx context.Context, q *dbgen.Queries, scheduleID int64, keepDue bool, why string) (Retraction, error) {
	if err := q.DeleteArmedEvents(ctx, dbgen.DeleteArmedEventsParams{ScheduleID: scheduleID, KeepDue: keepDue}); err != nil {
		return Retraction{}, fmt.Errorf("retract armed events of schedule %d: %w", scheduleID, mapErr(err))
	}
	ticks, err := q.DeleteArmedRuns(ctx, dbgen.DeleteArmedRunsParams{ScheduleID: scheduleID, KeepDue: keepDue})
	if err != nil {
		return Retraction{}, fmt.Errorf("retract armed runs of schedule %d: %w", scheduleID, mapErr(err))
	}
	r := Retraction{Ticks: ticks}
	kept, err := q.RetractArmedWorkflowRuns(ctx, dbgen.RetractArmedWorkflowRunsParams{
		ScheduleID: scheduleID, KeepDue: keepDue, Reason: "retracted before its tick: " + why + "; its delayed start was stopped and never ran",
	})
	if err != nil {
		return Retraction{}, fmt.Errorf("retract armed workflow fires of schedule %d: %w", scheduleID, mapErr(err))
	}
	for _, k := range kept {
		r.Ticks = append(r.Ticks, k.ScheduledAt)
		r.WorkflowIDs = append(r.WorkflowIDs, k.WorkflowID)
	}
	// Idempotent: the ticks an earlier retraction took back and nothing decided since are
	// returned again (their delayed starts were stopped then, so no workflow id).
	again, err := q.ListRetractedUndecidedTicks(ctx, dbgen.ListRetractedUndecidedTicksParams{ScheduleID: scheduleID, KeepDue: keepDue})
	if err != nil {
		return Retraction{}, fmt.Errorf("ticks retracted before of schedule %d: %w", scheduleID, mapErr(err))
	}
	for _, t := range again {
		if !slices.ContainsFunc(r.Ticks, t.Equal) {
			r.Ticks = append(r.Ticks, t)
		}
	}
	for i := range r.Ticks {
		r.Ticks[i] = r.Ticks[i].UTC()
	}
	return r, nil
}

// SetNextRunAt mirrors the workflow's next planned fire.
func (s *Store) SetNextRunAt(ctx context.Context, id int64, next *time.Time) error {
	if err := s.Q.SetScheduleNextRunAt(ctx, dbgen.SetScheduleNextRunAtParams{ID: id, NextRunAt: next}); err != nil {
		return fmt.Errorf("set next_run_at of schedule %d: %w", id, mapErr(err))
	}
	return nil
}

// Fire is one tick's outcome to record: a fired run (with its event) or a tick that was
// SKIPPED or MISSED with its reason.
type Fire struct {
	ScheduleID     int64
	ScheduledAt    time.Time
	FiredAt        time.Time // zero for SKIPPED / MISSED
	Trigger        domain.Trigger
	Status         domain.RunStatus
	Reason         string
	IdempotencyKey string
	WorkflowID     string
	Event          *domain.Event // appended with its outbox message when the run fired
	NextRunAt      *time.Time    // the schedule's next planned fire after this one
	// VisibleAt arms the fire: committed now, it stays hidden until the releaser releases it
	// at VisibleAt (see ReleaseDue). Until then the schedule's next_run_at stays on this tick
	// and its counters and last_run_at do not count it; the release applies NextRunAt.
	VisibleAt *time.Time
	// TraceContext is the fire's span context (a W3C traceparent; "" with tracing off, and
	// the column stays NULL): the release and a workflow action's start join its trace.
	TraceContext string
	// Exclusion, for a tick of the schedule's timing or a backfill whose spec excludes
	// calendars, judges the tick against them in this transaction: a fire (or a wait in the
	// buffer) of a tick one of them excludes is recorded SKIPPED with its reason instead. A
	// calendar edit racing the record either commits first and is obeyed, or waits for it.
	Exclusion *Exclusion
	// Premise, for a fire that starts a run, is the runs in flight it was decided on: the fire
	// is recorded only if PostgreSQL holds no other (see FirePremise; nil: no check).
	Premise *FirePremise
}

// RecordFire commits a tick in one transaction: the schedule_runs row, its event and outbox
// message, and the schedule's next_run_at, last_run_at and counters (an armed fire, with
// VisibleAt, leaves those to its release and its outbox message without a feed position
// until then). The idempotency key
// makes it safe to retry: a key already recorded changes nothing and returns the existing
// run with created=false (invariant S1). A deleted schedule is ErrNotFound. A fire whose
// premise missed runs in flight records nothing and is a *StalePremise (FirePremise).
//
// An armed fire near or behind the release frontier is armed holding the release lock, and
// released at once if a release already passed its time (see releaseStragglers).
func (s *Store) RecordFire(ctx context.Context, f Fire) (run ScheduleRun, created bool, err error) {
	straggling := false
	if f.VisibleAt != nil && f.Status.Fired() {
		if straggling, err = nearFrontier(ctx, s.Q, []time.Time{*f.VisibleAt}); err != nil {
			return ScheduleRun{}, false, err
		}
	}
	err = s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		if straggling {
			if err := q.ShareReleaseLock(ctx, releaseLock); err != nil {
				return fmt.Errorf("release lock (shared): %w", mapErr(err))
			}
		}
		sched, err := q.LockScheduleByID(ctx, f.ScheduleID)
		if err != nil {
			return fmt.Errorf("lock schedule %d: %w", f.ScheduleID, mapErr(err))
		}
		if err := f.judgeExclusion(ctx, q); err != nil {
			return err
		}
		if err := f.checkPremise(ctx, q); err != nil {
			return err // a *StalePremise when runs in flight were not counted: nothing recorded
		}
		params := dbgen.InsertScheduleRunParams{
			ScheduleID: f.ScheduleID, ScheduledAt: f.ScheduledAt.UTC(), Trigger: f.Trigger,
			Status: f.Status, Reason: f.Reason, IdempotencyKey: f.IdempotencyKey, WorkflowID: f.WorkflowID,
			TraceContext: nullable(f.TraceContext),
		}
		fired := f.Status.Fired()
		armed := fired && f.VisibleAt != nil
		eventFire := f.Status == domain.RunSucceeded && f.WorkflowID == ""
		workflowFire := f.Status == domain.RunRunning && f.WorkflowID != ""
		if armed && (f.Event == nil || !(eventFire || workflowFire)) {
			return fmt.Errorf("arm run %s: only an event fire or a workflow start can be armed", f.IdempotencyKey)
		}
		if fired {
			firedAt := f.FiredAt.UTC()
			if armed {
				firedAt = f.VisibleAt.UTC() // until the release sets when it became true
			}
			params.FiredAt = &firedAt
		}
		if f.Status.Final() {
			now := time.Now().UTC()
			if fired {
				now = *params.FiredAt
			}
			params.FinishedAt = &now
		}
		if armed {
			params.Armed, params.VisibleAt, params.ReleaseNextRunAt = true, params.FiredAt, f.NextRunAt
		}
		if run, created, err = insertRunOnce(ctx, q, params); err != nil || !created {
			return err // recorded before (a retried activity, a duplicate signal): that run
		}
		upd := dbgen.UpdateScheduleAfterFireParams{ID: f.ScheduleID, NextRunAt: f.NextRunAt}
		switch {
		case armed:
			// Nothing is true yet: the armed tick stays the next fire until the release.
			tick := f.ScheduledAt.UTC()
			upd.NextRunAt = &tick
		case fired:
			upd.LastRunAt, upd.Fired = params.FiredAt, 1
		case f.Status == domain.RunSkipped:
			upd.Skipped = 1
		case f.Status == domain.RunMissed:
			upd.Missed = 1
		}
		if fired && f.Event != nil {
			data := f.Event.Data
			if len(data) == 0 {
				data = json.RawMessage(`{}`)
			}
			ev, err := q.InsertEvent(ctx, dbgen.InsertEventParams{
				Topic: f.Event.Topic, Type: f.Event.Type, AggregateID: sched.Name, Data: data, ScheduleRunID: &run.ID,
				CreatedAt: params.VisibleAt,
			})
			if err != nil {
				return fmt.Errorf("insert event of run %d: %w", run.ID, mapErr(err))
			}
			if armed {
				err = q.InsertArmedOutboxMessage(ctx, dbgen.InsertArmedOutboxMessageParams{EventID: ev.ID, Topic: ev.Topic, VisibleAt: params.VisibleAt})
			} else {
				err = q.InsertOutboxMessage(ctx, dbgen.InsertOutboxMessageParams{EventID: ev.ID, Topic: ev.Topic})
			}
			if err != nil {
				return fmt.Errorf("insert outbox message of event %d: %w", ev.ID, mapErr(err))
			}
		}
		if err := q.UpdateScheduleAfterFire(ctx, upd); err != nil {
			return fmt.Errorf("update schedule %d after fire: %w", f.ScheduleID, mapErr(err))
		}
		if armed && straggling {
			released, err := releaseStragglers(ctx, q, nil, []armedRef{{RunID: run.ID, VisibleAt: *params.VisibleAt, StartsWorkflow: workflowFire}})
			if err != nil {
				return err
			}
			for _, r := range released {
				run.Armed, run.Status, run.Trigger = false, domain.RunStatus(r.Status), domain.Trigger(r.Trigger)
			}
		}
		return nil
	})
	return run, created, err
}

// judgeExclusion turns a fire (or a wait in the buffer) of a periodic or backfill tick
// that one of the schedule's calendars excludes into the SKIPPED tick it is.
func (f *Fire) judgeExclusion(ctx context.Context, q *dbgen.Queries) error {
	if f.Exclusion == nil || f.Trigger == domain.TriggerManual ||
		(f.Status != domain.RunSucceeded && f.Status != domain.RunRunning && f.Status != domain.RunBuffered) {
		return nil
	}
	excluded, err := f.Exclusion.judge(ctx, q)
	if err != nil || excluded == nil {
		return err
	}
	if reason := excluded(f.ScheduledAt); reason != "" {
		f.Status, f.Reason, f.WorkflowID, f.Event, f.VisibleAt = domain.RunSkipped, reason, "", nil, nil
	}
	return nil
}

// RecordMissed records ticks that fell outside the catch-up window as MISSED, one row each,
// in one transaction with the schedule's counters and next_run_at — but a tick one of the
// schedule's calendars excludes (ex, nil: none) is recorded SKIPPED with that reason: it
// would not have fired anyway. Ticks recorded before are left as they are; it returns how
// many rows it created. A deleted schedule is ErrNotFound.
func (s *Store) RecordMissed(ctx context.Context, scheduleID int64, ticks []time.Time, reason string, next *time.Time, ex *Exclusion) (created int, running []ScheduleRun, err error) {
	err = s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		created, running = 0, nil
		if _, err := q.LockScheduleByID(ctx, scheduleID); err != nil {
			return fmt.Errorf("lock schedule %d: %w", scheduleID, mapErr(err))
		}
		excluded, err := ex.judge(ctx, q)
		if err != nil {
			return err
		}
		now := time.Now().UTC()
		var skipped int64
		for _, tick := range ticks {
			p := dbgen.InsertScheduleRunParams{
				ScheduleID: scheduleID, ScheduledAt: tick.UTC(), Trigger: domain.TriggerScheduled, Status: domain.RunMissed,
				Reason: reason, IdempotencyKey: domain.TickKey(scheduleID, tick), FinishedAt: &now,
			}
			if excluded != nil {
				if why := excluded(tick); why != "" {
					p.Status, p.Reason = domain.RunSkipped, why
				}
			}
			run, isNew, err := insertRunOnce(ctx, q, p)
			switch {
			case err != nil:
				return err
			case isNew && p.Status == domain.RunSkipped:
				skipped++
			case isNew:
				created++
			case run.Status == domain.RunRunning: // recorded before by a fire whose answer was lost
				running = append(running, run)
			}
		}
		if err := q.UpdateScheduleAfterFire(ctx, dbgen.UpdateScheduleAfterFireParams{
			ID: scheduleID, NextRunAt: next, Missed: int64(created), Skipped: skipped,
		}); err != nil {
			return fmt.Errorf("update schedule %d after missed ticks: %w", scheduleID, mapErr(err))
		}
		return nil
	})
	return created, running, err
}

// insertRunOnce inserts a schedule run unless its idempotency key is recorded already, in
// which case it returns that run with created=false.
func insertRunOnce(ctx context.Context, q *dbgen.Queries, params dbgen.InsertScheduleRunParams) (run ScheduleRun, created bool, err error) {
	run, err = q.InsertScheduleRun(ctx, params)
	if err == nil {
		return run, true, nil
	}
	if mapErr(err) != ErrNotFound {
		return run, false, fmt.Errorf("insert run %s: %w", params.IdempotencyKey, mapErr(err))
	}
	if run, err = q.GetScheduleRunByKey(ctx, params.IdempotencyKey); err != nil {
		return run, false, fmt.Errorf("read run %s: %w", params.IdempotencyKey, mapErr(err))
	}
	return run, false, nil
}

// CountDuplicateTicks counts the (schedule, nominal tick) pairs recorded more than once by
// the scheduler (S1; manual and backfill runs have keys of their own; the record of a
// retracted armed fire is not a run). Tests, benchmarks and the chaos run check it is zero.
func (s *Store) CountDuplicateTicks(ctx context.Context) (int64, error) {
	var n int64
	err := s.Pool.QueryRow(ctx, `SELECT count(*) FROM (
		SELECT 1 FROM schedule_runs WHERE trigger IN ('scheduled', 'catchup') AND retracted_at IS NULL
		GROUP BY schedule_id, scheduled_at HAVING count(*) > 1) d`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count duplicate ticks: %w", err)
	}
	return n, nil
}

// FinishRun sets a RUNNING run's final status; finishing a run twice changes nothing. Its
// end counts into its schedule's failure streak in the same transaction (an http action's
// auto_pause).
func (s *Store) FinishRun(ctx context.Context, runID int64, status domain.RunStatus, errText string) error {
	err := s.inTxRetried(ctx, func(q *dbgen.Queries) error {
		run, err := q.FinishScheduleRun(ctx, dbgen.FinishScheduleRunParams{ID: runID, Status: status, Error: errText})
		if err != nil {
			return err
		}
		finished := time.Now()
		if run.FinishedAt != nil {
			finished = *run.FinishedAt
		}
		return noteStreaks(ctx, q, []runEnd{{ScheduleID: run.ScheduleID, ScheduledAt: run.ScheduledAt, Status: domain.RunStatus(run.Status), FinishedAt: finished, Error: run.Error}}, time.Now())
	})
	if err != nil && mapErr(err) != ErrNotFound {
		return fmt.Errorf("finish run %d: %w", runID, mapErr(err))
	}
	return nil
}

// ListRuns pages through a schedule's runs, newest first; beforeID 0 starts at the newest.
func (s *Store) ListRuns(ctx context.Context, scheduleID, beforeID int64, limit int) ([]ScheduleRun, error) {
	rows, err := s.Q.ListScheduleRuns(ctx, dbgen.ListScheduleRunsParams{ScheduleID: scheduleID, BeforeID: beforeID, MaxRows: int4(limit)})
	if err != nil {
		return nil, fmt.Errorf("list runs of schedule %d: %w", scheduleID, mapErr(err))
	}
	return rows, nil
}

// BufferedRuns lists a schedule's ticks waiting under its overlap policy, oldest first.
func (s *Store) BufferedRuns(ctx context.Context, scheduleID int64) ([]ScheduleRun, error) {
	rows, err := s.Q.ListBufferedRuns(ctx, scheduleID)
	if err != nil {
		return nil, fmt.Errorf("list buffered runs of schedule %d: %w", scheduleID, mapErr(err))
	}
	return rows, nil
}

// RunningRuns lists a schedule's runs still RUNNING.
func (s *Store) RunningRuns(ctx context.Context, scheduleID int64) ([]ScheduleRun, error) {
	rows, err := s.Q.ListRunningScheduleRuns(ctx, scheduleID)
	if err != nil {
		return nil, fmt.Errorf("list running runs of schedule %d: %w", scheduleID, mapErr(err))
	}
	return rows, nil
}

// ScheduleChange is a new definition for UpdateSchedule.
type ScheduleChange struct {
	Name             string
	ExpectedVersion  int64 // 0: no check
	Spec             json.RawMessage
	Action           json.RawMessage
	Overlap          domain.Overlap
	CatchupWindowMs  int64
	SkipIfSuccessful bool
	// Retry is the retry policy (nil: none).
	Retry json.RawMessage
	// SigningSecret, when set, replaces the schedule's signing secret in the same
	// transaction (a schedule that becomes an http one gets its first).
	SigningSecret string
	// SetHeaderValues replaces the values of the action's own headers with HeaderValues (a
	// JSON object; none: the values are deleted), in the same transaction.
	SetHeaderValues bool
	HeaderValues    json.RawMessage
	AfterCompletion string // "" keeps AfterCompletionKeep
	// Calendars are the calendars the new spec excludes: each must exist (see CreateSchedule).
	Calendars []string
	// MaxConcurrent and OverlapWhenFull are the concurrency cap (both nil: none).
	MaxConcurrent   *int32
	OverlapWhenFull *string
	// Labels replace the schedule's (nil: kept).
	Labels json.RawMessage
	// History is recorded in the update's transaction when it lists changes (nil: none).
	History *HistoryEntry
}

// UpdateSchedule replaces a schedule's definition if its version still is the expected
// one: ErrStale when another change came first, ErrNotFound when there is no such schedule.
// An armed fire is retracted by the schedule's workflow when it reloads the definition
// (RetractArmed), not here: until the workflow has the new definition it fires under the
// old one, armed or not, so a refresh that never arrives can delay an update but never
// lose a tick.
func (s *Store) UpdateSchedule(ctx context.Context, c ScheduleChange) (Schedule, error) {
	var row Schedule
	if c.AfterCompletion == "" {
		c.AfterCompletion = AfterCompletionKeep
	}
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		if err := requireCalendars(ctx, q, c.Calendars); err != nil {
			return err
		}
		var err error
		row, err = q.UpdateScheduleDefinition(ctx, dbgen.UpdateScheduleDefinitionParams{
			Name: c.Name, ExpectedVersion: c.ExpectedVersion, Spec: c.Spec, Action: c.Action, Overlap: c.Overlap,
			CatchupWindowMs: c.CatchupWindowMs, SkipIfSuccessful: c.SkipIfSuccessful, Retry: c.Retry, AfterCompletion: c.AfterCompletion,
			MaxConcurrent: c.MaxConcurrent, OverlapWhenFull: c.OverlapWhenFull, Labels: c.Labels,
		})
		if err != nil {
			return err
		}
		if c.SigningSecret != "" {
			if err := q.SetScheduleSecret(ctx, dbgen.SetScheduleSecretParams{ScheduleName: c.Name, Secret: c.SigningSecret}); err != nil {
				return err
			}
		}
		if c.SetHeaderValues {
			if err := setHeaderValues(ctx, q, c.Name, c.HeaderValues); err != nil {
				return err
			}
		}
		if c.History == nil || len(c.History.Changes) == 0 {
			return nil
		}
		return insertHistory(ctx, q, row.ID, *c.History)
	})
	if err == nil {
		return row, nil
	}
	var unknown *UnknownCalendarsError
	if errors.As(err, &unknown) {
		return Schedule{}, unknown
	}
	if mapErr(err) != ErrNotFound {
		return Schedule{}, fmt.Errorf("update schedule %q: %w", c.Name, mapErr(err))
	}
	current, getErr := s.GetSchedule(ctx, c.Name)
	if getErr != nil {
		return Schedule{}, getErr
	}
	return Schedule{}, fmt.Errorf("update schedule %q: version %d expected, %d current: %w", c.Name, c.ExpectedVersion, current.Version, ErrStale)
}

// GetRun reads one run of a schedule.
func (s *Store) GetRun(ctx context.Context, scheduleID, runID int64) (ScheduleRun, error) {
	row, err := s.Q.GetScheduleRun(ctx, dbgen.GetScheduleRunParams{ID: runID, ScheduleID: scheduleID})
	if err != nil {
		return ScheduleRun{}, fmt.Errorf("get run %d of schedule %d: %w", runID, scheduleID, mapErr(err))
	}
	return row, nil
}

// RunTraceContext is the span context a run's fire recorded ("" when it was recorded with
// tracing off).
func (s *Store) RunTraceContext(ctx context.Context, runID int64) (string, error) {
	tc, err := s.Q.RunTraceContext(ctx, runID)
	if err != nil {
		return "", fmt.Errorf("trace context of run %d: %w", runID, mapErr(err))
	}
	if tc == nil {
		return "", nil
	}
	return *tc, nil
}

// nullable is s as a nullable text value: NULL for "".
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
