// Package activities holds one activities struct per engine (ScheduleActivities,
// RolloutActivities, DeviceActivities); each struct's fields are the activity's
// dependencies, and every method is one activity. It also holds the loops a worker process
// runs beside its workflows, which use the same parts (RunWatcher, HTTPSender with
// HTTPDeliveries and its HostLimiter, ResidentKeeper), and the activities' input and
// result types, whose JSON is recorded in workflow histories.
package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/internal/telemetry"
	"github.com/tickgate/tickgate/metrics"
	"github.com/tickgate/tickgate/store"
)

// ErrScheduleGone is the application error type an activity returns when the schedule's row
// no longer exists: the workflow stops instead of retrying.
const ErrScheduleGone = "ScheduleGone"

// ScheduleActivities are the schedule engine's side effects: Postgres writes and starting or
// watching the runs of a workflow action.
type ScheduleActivities struct {
	Store    *store.Store
	Temporal client.Client
	// Schedules starts and stops schedule workflows (the planner's wakes).
	Schedules ScheduleStarter
	// Tracer records each fire's trace (schedules_trace.go); nil when tracing is off.
	Tracer trace.Tracer
	// TaskQueue is tickgate's own task queue, where the delivery workflows of http actions
	// run.
	TaskQueue string
	// Targets is the rule of the workflows a workflow action may start (users', never
	// tickgate's own: workflows.OwnTargets), judged again at each start: a schedule stored
	// before the rule, or under another TICKGATE_WORKFLOW_TASK_QUEUES, starts nothing it
	// refuses.
	Targets domain.WorkflowTargets
	// Resident (TICKGATE_SCHEDULES_RESIDENT) keeps a schedule's workflow open when it rests
	// (schedules_resident.go).
	Resident bool
}

// ScheduleDefinition is a schedule as its workflow needs it.
type ScheduleDefinition struct {
	ID               int64
	Name             string
	Spec             schedulespec.Spec
	Action           domain.Action
	Overlap          domain.Overlap
	CatchupWindow    time.Duration
	SkipIfSuccessful bool
	Paused           bool
	PauseNote        string
	Version          int64
	CreatedAt        time.Time
	LastRunAt        *time.Time
	// Retry is the retry policy of an http or workflow action (nil: none).
	Retry *domain.Retry `json:",omitempty"`
	// MaxConcurrent caps the runs in flight under overlap allow_all (0: no cap); a tick
	// beyond it waits, or is skipped when WhenFull is skip (scheduleplan.Schedule.Room).
	MaxConcurrent int             `json:",omitempty"`
	WhenFull      domain.WhenFull `json:",omitempty"`
}

// DefinitionFromRow decodes a schedules row.
func DefinitionFromRow(row store.Schedule) (ScheduleDefinition, error) {
	d := ScheduleDefinition{
		ID: row.ID, Name: row.Name, Overlap: row.Overlap, CatchupWindow: time.Duration(row.CatchupWindowMs) * time.Millisecond,
		SkipIfSuccessful: row.SkipIfSuccessful, Paused: row.Paused, PauseNote: row.PauseNote, Version: row.Version,
		CreatedAt: row.CreatedAt.UTC(), LastRunAt: row.LastRunAt,
	}
	if row.MaxConcurrent != nil && row.OverlapWhenFull != nil {
		d.MaxConcurrent, d.WhenFull = int(*row.MaxConcurrent), domain.WhenFull(*row.OverlapWhenFull)
	}
	if err := json.Unmarshal(row.Spec, &d.Spec); err != nil {
		return d, fmt.Errorf("decode spec of schedule %q: %w", row.Name, err)
	}
	if err := json.Unmarshal(row.Action, &d.Action); err != nil {
		return d, fmt.Errorf("decode action of schedule %q: %w", row.Name, err)
	}
	if len(row.Retry) > 0 {
		if err := json.Unmarshal(row.Retry, &d.Retry); err != nil {
			return d, fmt.Errorf("decode retry of schedule %q: %w", row.Name, err)
		}
	}
	return d, nil
}

func gone(err error, id int64) error {
	if errors.Is(err, store.ErrNotFound) {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("schedule %d no longer exists", id), ErrScheduleGone, err)
	}
	return err
}

// LoadSchedule reads the schedule's current definition.
func (a *ScheduleActivities) LoadSchedule(ctx context.Context, id int64) (ScheduleDefinition, error) {
	row, err := a.Store.GetScheduleByID(ctx, id)
	if err != nil {
		return ScheduleDefinition{}, gone(err, id)
	}
	return DefinitionFromRow(row)
}

// TickRecord is one tick's outcome for RecordTick.
type TickRecord struct {
	ScheduleID     int64
	ScheduledAt    time.Time
	FiredAt        time.Time
	Trigger        domain.Trigger
	Status         domain.RunStatus
	Reason         string
	IdempotencyKey string
	WorkflowID     string
	Event          *domain.Event
	NextRunAt      *time.Time
	// ExcludeCalendars are the calendars the schedule's spec excludes: a fire (or a wait in
	// the buffer) of a scheduled, catch-up or backfill tick one of them excludes is recorded
	// SKIPPED with the reason naming it instead (nil in histories from before calendars).
	ExcludeCalendars []string `json:",omitempty"`
	// Premise, for a fire that starts a run, is the runs in flight the workflow decided it
	// on: when PostgreSQL holds others, nothing is recorded and the answer names them
	// (RunRecord.Unknown). Nil: no check (histories from before it, and fires whose decision
	// does not rest on what runs).
	Premise *FirePremise `json:",omitempty"`
}

// FirePremise is what a fire that starts a run was decided on (store.FirePremise).
type FirePremise struct {
	// Running are the ids of the runs the workflow holds in flight.
	Running []int64
}

// RunRecord is the recorded run.
type RunRecord struct {
	ID          int64
	Status      domain.RunStatus
	ScheduledAt time.Time
	WorkflowID  string
	Created     bool
	// NextRunAt is the record's NextRunAt, returned as it was asked for (nil: no further
	// tick). Returned, it is a result the workflow's history holds: the schedule loop plans
	// its next tick on it instead of recomputing the spec in a side effect of its own.
	NextRunAt *time.Time
	// CommittedAt is the worker's clock once the transaction committed; the schedule loop
	// measures from it how long it has worked without ending its workflow task.
	CommittedAt time.Time
	// StartAt is when an armed workflow fire's target starts (its visible time), for a run
	// found recorded before (nil: not armed, or released).
	StartAt *time.Time `json:",omitempty"`
	// Unknown are the runs in flight that PostgreSQL holds and the record's premise did not
	// (TickRecord.Premise): nothing was recorded — the workflow takes them in and decides the
	// tick again. Empty when the record went through.
	Unknown []RunRecord `json:",omitempty"`
}

// RecordTick commits the tick (run row, event, outbox message, schedule mirror) in one
// transaction. Retrying it after it committed returns the same run (S1).
func (a *ScheduleActivities) RecordTick(ctx context.Context, r TickRecord) (rec RunRecord, err error) {
	fire := store.Fire{
		ScheduleID: r.ScheduleID, ScheduledAt: r.ScheduledAt, FiredAt: r.FiredAt, Trigger: r.Trigger, Status: r.Status,
		Reason: r.Reason, IdempotencyKey: r.IdempotencyKey, WorkflowID: r.WorkflowID, Event: r.Event, NextRunAt: r.NextRunAt,
		Exclusion: exclusion(r.ExcludeCalendars),
	}
	if r.Premise != nil {
		fire.Premise = &store.FirePremise{Running: r.Premise.Running}
	}
	storeCtx := ctx
	if a.Tracer != nil {
		var tickCtx context.Context
		var tick, step trace.Span
		tickCtx, storeCtx, tick, step = a.traceTick(ctx, r)
		fire.TraceContext = telemetry.Traceparent(tickCtx)
		defer func() {
			if err == nil {
				tick.SetAttributes(AttrRunID.Int64(rec.ID), AttrStatus.String(string(rec.Status)), AttrCreated.Bool(rec.Created))
			}
			endWith(step, err)
			endWith(tick, err)
		}()
	}
	run, created, err := a.Store.RecordFire(storeCtx, fire)
	var stale *store.StalePremise
	if errors.As(err, &stale) {
		return unknownRuns(stale.Runs), nil
	}
	if err != nil {
		return RunRecord{}, gone(err, r.ScheduleID)
	}
	if created {
		observeTick(run.Status, r.Trigger, r.ScheduledAt, r.FiredAt)
	}
	rec = RunRecord{
		ID: run.ID, Status: run.Status, ScheduledAt: run.ScheduledAt.UTC(), WorkflowID: run.WorkflowID, Created: created,
		NextRunAt: r.NextRunAt, CommittedAt: time.Now().UTC(),
	}
	if run.Armed && run.WorkflowID != "" {
		rec.StartAt = run.VisibleAt
	}
	return rec, nil
}

// unknownRuns is RecordTick's answer to a fire whose premise missed runs in flight.
func unknownRuns(runs []store.ScheduleRun) RunRecord {
	rec := RunRecord{CommittedAt: time.Now().UTC()}
	for _, r := range runs {
		u := RunRecord{ID: r.ID, Status: r.Status, ScheduledAt: r.ScheduledAt.UTC(), WorkflowID: r.WorkflowID}
		if r.Armed {
			u.StartAt = r.VisibleAt
		}
		rec.Unknown = append(rec.Unknown, u)
	}
	return rec
}

// MissedTicks records ticks that fell outside the catch-up window, one MISSED row each.
type MissedTicks struct {
	ScheduleID int64
	Ticks      []time.Time
	Reason     string
	NextRunAt  *time.Time
	// ExcludeCalendars: a tick one of them excludes is recorded SKIPPED naming it, not MISSED.
	ExcludeCalendars []string `json:",omitempty"`
}

// MissedResult is what RecordMissed did: how many ticks it recorded MISSED, and the ticks
// among them that were recorded before as RUNNING runs (by a fire whose answer was lost),
// which the workflow must watch.
type MissedResult struct {
	Recorded int
	Running  []RunRecord
	// NextRunAt is the next_run_at it wrote, returned as it was asked for (see RunRecord).
	NextRunAt *time.Time `json:",omitempty"`
}

// RecordMissed records every missed tick, in one transaction (idempotently, like RecordTick).
func (a *ScheduleActivities) RecordMissed(ctx context.Context, m MissedTicks) (MissedResult, error) {
	n, running, err := a.Store.RecordMissed(ctx, m.ScheduleID, m.Ticks, m.Reason, m.NextRunAt, exclusion(m.ExcludeCalendars))
	if err != nil {
		return MissedResult{}, gone(err, m.ScheduleID)
	}
	metrics.ScheduleTicks.WithLabelValues("missed", string(domain.TriggerScheduled)).Add(float64(n))
	res := MissedResult{Recorded: n, NextRunAt: m.NextRunAt}
	for _, r := range running {
		res.Running = append(res.Running, RunRecord{ID: r.ID, Status: r.Status, ScheduledAt: r.ScheduledAt.UTC(), WorkflowID: r.WorkflowID})
	}
	return res, nil
}

// PausedState is a pause or resume to mirror in Postgres, with who asked (Actor), through
// which door and why (Note), for the schedule's history.
type PausedState struct {
	ScheduleID int64
	Paused     bool
	Note       string
	NextRunAt  *time.Time
	Actor      string      `json:",omitempty"`
	Door       domain.Door `json:",omitempty"`
}

// PauseMirrored answers a pause or resume's mirror write: the armed fires a pause retracted,
// whether the paused state changed (a pause of a paused schedule changes nothing), and the
// note that stands. Answers recorded before Changed and Note existed hold neither (nil).
type PauseMirrored struct {
	Retracted
	Changed *bool   `json:",omitempty"`
	Note    *string `json:",omitempty"`
}

// Retracted are the ticks of armed fires a command retracted (taken back before their
// release) in the transaction of its mirror write, and the workflow ids of those that were
// workflow fires.
type Retracted struct {
	Ticks       []time.Time `json:",omitempty"`
	WorkflowIDs []string    `json:",omitempty"`
}

// Has reports whether tick is among the retracted ones.
func (r Retracted) Has(tick time.Time) bool {
	for _, t := range r.Ticks {
		if t.Equal(tick) {
			return true
		}
	}
	return false
}

// MirrorPaused writes the workflow's paused state (and next fire) to the schedule row and,
// when it changed, records who paused or resumed it in the schedule's history, in the same
// transaction; a pause retracts the schedule's armed fires not yet released, in it too.
func (a *ScheduleActivities) MirrorPaused(ctx context.Context, p PausedState) (PauseMirrored, error) {
	if p.Paused {
		if err := a.stopDelayedStarts(ctx, p.ScheduleID, "the schedule was paused"); err != nil {
			return PauseMirrored{}, err
		}
	}
	actor, door := p.Actor, p.Door
	if door == "" {
		door = domain.DoorUpdate
	}
	if actor == "" {
		actor = string(door)
	}
	row, changed, r, err := a.Store.SetPaused(ctx, store.PauseChange{ID: p.ScheduleID, Paused: p.Paused, Note: p.Note, Actor: actor, Door: door})
	if err != nil {
		return PauseMirrored{}, gone(err, p.ScheduleID)
	}
	if changed && p.Paused && row.AutoPausedAt != nil {
		metrics.ScheduleAutoPaused.Inc() // the schedule paused itself (its auto_pause rule)
	}
	out := PauseMirrored{Retracted: Retracted(r), Changed: &changed, Note: &row.PauseNote}
	if !p.Paused {
		return out, gone(a.Store.SetNextRunAt(ctx, p.ScheduleID, p.NextRunAt), p.ScheduleID)
	}
	return out, nil
}

// NextRun is the next planned fire to mirror.
type NextRun struct {
	ScheduleID int64
	NextRunAt  *time.Time
	// Retract (a reschedule) retracts the schedule's armed fires not yet released, in the
	// same transaction.
	Retract bool `json:",omitempty"`
}

// MirrorNextRun writes next_run_at (and, for a reschedule, retracts armed fires).
func (a *ScheduleActivities) MirrorNextRun(ctx context.Context, n NextRun) (Retracted, error) {
	if !n.Retract {
		return Retracted{}, gone(a.Store.SetNextRunAt(ctx, n.ScheduleID, n.NextRunAt), n.ScheduleID)
	}
	if err := a.stopDelayedStarts(ctx, n.ScheduleID, "the schedule was rescheduled"); err != nil {
		return Retracted{}, err
	}
	r, err := a.Store.Reschedule(ctx, n.ScheduleID, n.NextRunAt)
	return Retracted(r), gone(err, n.ScheduleID)
}

// RetractArmed retracts the schedule's armed fires not yet due, after its workflow took a
// new definition (which decides those ticks anew), and answers them.
func (a *ScheduleActivities) RetractArmed(ctx context.Context, scheduleID int64) (Retracted, error) {
	return a.RetractArmedBecause(ctx, Retraction{ScheduleID: scheduleID, Why: "the schedule's definition changed"})
}

// Retraction asks to retract a schedule's armed fires not yet due, saying why.
type Retraction struct {
	ScheduleID int64
	Why        string
}

// RetractArmedBecause retracts the schedule's armed fires not yet due (a trigger or a
// backfill is about to start a run the armed tick's overlap decision did not count on).
func (a *ScheduleActivities) RetractArmedBecause(ctx context.Context, r Retraction) (Retracted, error) {
	if err := a.stopDelayedStarts(ctx, r.ScheduleID, r.Why); err != nil {
		return Retracted{}, err
	}
	got, err := a.Store.RetractArmed(ctx, r.ScheduleID, r.Why)
	if err != nil {
		return Retracted{}, gone(err, r.ScheduleID)
	}
	return Retracted(got), nil
}

// stopDelayedStarts terminates the delayed starts of every armed workflow or http fire of
// the schedule not yet due, before a command's transaction retracts them: that transaction
// retracts only the fires still not due then, all of them stopped here, so a retracted fire
// never runs. (The workflow stops the start of the last armed fire itself, stopArmedStart;
// under allow_all the planner arms several, and an http delivery acts the moment it
// starts: the chaos run's receiver caught deliveries of retracted ticks.) A fire that
// comes due meanwhile is stopped and kept: its run records that it was terminated.
func (a *ScheduleActivities) stopDelayedStarts(ctx context.Context, scheduleID int64, why string) error {
	ids, err := a.Store.ArmedStartsNotDue(ctx, scheduleID)
	if err != nil {
		return gone(err, scheduleID)
	}
	for _, id := range ids {
		if err := a.StopRunWorkflow(ctx, StopRun{WorkflowID: id, Terminate: true, Reason: "retracted before its tick: " + why}); err != nil {
			return err
		}
	}
	return nil
}

// ObserveReleased counts released armed fires in the metrics, with their lateness from
// the nominal tick to the release (a fire released MISSED counts as missed).
func ObserveReleased(fires []store.ReleasedFire) {
	for _, f := range fires {
		observeTick(f.Status, f.Trigger, f.ScheduledAt, f.ReleasedAt)
	}
}

// StartRun is a run of a workflow action to start.
type StartRun struct {
	WorkflowID   string
	WorkflowType string
	TaskQueue    string
	Input        json.RawMessage
	Schedule     string
	// StartAt, for an armed fire, is when the target starts: it is started now with
	// Temporal's start delay (nil: at once).
	StartAt *time.Time `json:",omitempty"`
	// RunID is the run whose fire starts it: with tracing on, the start joins that fire's
	// trace (0 in histories recorded before it was passed: the start stays in the
	// schedule workflow's trace). An http action's start needs it (its delivery reads the
	// run's tick key).
	RunID int64 `json:",omitempty"`
	// HTTP is an http action's request: the run's target is then tickgate's own delivery
	// workflow (HTTPDeliveryWorkflowType, on TaskQueue of ScheduleActivities), and
	// WorkflowType, TaskQueue and Input are unused (see RunStart).
	HTTP *domain.Action `json:",omitempty"`
	// Retry is the schedule's retry policy: a workflow action's target is started with it
	// (Temporal's workflow retry policy, max_age bounding the whole series); an http
	// action's delivery retries its request under it (nil: the defaults).
	Retry *domain.Retry `json:",omitempty"`

	// handedOver: the sender holding the run's first attempt starts its delivery workflow
	// to retry it (HTTPSender), so the run's queued first attempt is no reason to wait.
	handedOver bool
}

// StartRunWorkflow starts the target workflow of a run. The id is derived from the tick, and
// an already running or finished execution with that id is reused, never started twice.
//
// An http action's delivery is not started for a run whose first attempt is the sender's (a
// run a schedule's workflow took over while its fire was being sent: the sender starts the
// delivery if the attempt fails), nor for a run that is no longer RUNNING: it answers "".
func (a *ScheduleActivities) StartRunWorkflow(ctx context.Context, r StartRun) (string, error) {
	var args []any
	if r.HTTP != nil {
		delivery, err := a.httpDelivery(ctx, r)
		if errors.Is(err, errNothingToStart) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		if a.TaskQueue == "" {
			return "", temporal.NewNonRetryableApplicationError("no task queue for http deliveries (ScheduleActivities.TaskQueue)", "NoTaskQueue", nil)
		}
		r.WorkflowType, r.TaskQueue, r.Input = HTTPDeliveryWorkflowType, a.TaskQueue, nil
		args = append(args, delivery)
	} else if fe := a.Targets.Check(r.WorkflowType, r.TaskQueue); fe != nil {
		return "", temporal.NewNonRetryableApplicationError("action."+fe.Field+": "+fe.Msg, "RefusedTarget", nil)
	} else if len(r.Input) > 0 && string(r.Input) != "null" {
		var input any
		if err := json.Unmarshal(r.Input, &input); err != nil {
			return "", temporal.NewNonRetryableApplicationError("input is not JSON", "BadInput", err)
		}
		args = append(args, input)
	}
	opts := client.StartWorkflowOptions{
		ID: r.WorkflowID, TaskQueue: r.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		StaticSummary:            "run of schedule " + r.Schedule,
	}
	if r.StartAt != nil {
		// Armed: Temporal starts it at its tick (a retry after the tick starts it at once).
		opts.StartDelay = max(time.Until(*r.StartAt), 0)
		opts.StaticSummary += " at " + r.StartAt.UTC().Format(time.RFC3339)
	}
	if r.Retry != nil && r.HTTP == nil {
		// A workflow action's target retried by Temporal; max_age bounds the whole series,
		// counted from the start (the execution timeout runs through the start delay too).
		opts.RetryPolicy = WorkflowRetryPolicy(*r.Retry)
		opts.WorkflowExecutionTimeout = time.Duration(r.Retry.MaxAge) + opts.StartDelay
	}
	if a.Tracer != nil && r.RunID != 0 {
		// The target's start (and, through its headers, its first workflow task) belongs to
		// the fire's trace, not to the schedule workflow's.
		tc, err := a.Store.RunTraceContext(ctx, r.RunID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return "", err
		}
		ctx = telemetry.Resume(ctx, tc)
	}
	run, err := a.Temporal.ExecuteWorkflow(ctx, opts, r.WorkflowType, args...)
	if err != nil {
		var already *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &already) {
			return already.RunId, nil // it ran before this retry: the run exists, do not start it again
		}
		return "", fmt.Errorf("start %s as %s: %w", r.WorkflowType, r.WorkflowID, err)
	}
	return run.GetRunID(), nil
}

// AwaitRunHeartbeatTimeout is how long a dead worker's wait for a run goes unnoticed: until
// then the run's outcome is not recorded and, under buffer or skip policies, the schedule's
// next run waits. The chaos run's worker kills showed 30 s holding buffered schedules back.
const AwaitRunHeartbeatTimeout = 8 * time.Second

// AwaitRunWorkflow waits for a run's workflow to close and returns the run's final status
// (SUCCEEDED, FAILED, CANCELED, TERMINATED), as its target ended (targetEnd). A wait that
// fails without Temporal's word that the target closed — a poll cut by a deadline, a server
// unavailable — fails the activity, which is retried. It heartbeats, so a worker crash hands
// the wait to another worker within the workflow's heartbeat timeout
// (AwaitRunHeartbeatTimeout).
func (a *ScheduleActivities) AwaitRunWorkflow(ctx context.Context, workflowID string) (RunOutcome, error) {
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(AwaitRunHeartbeatTimeout / 4)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	if out, decided, err := a.awaitFirstAttempt(ctx, workflowID); err != nil || decided {
		return out, err
	}
	err := a.Temporal.GetWorkflow(ctx, workflowID, "").Get(ctx, nil)
	if ctx.Err() != nil {
		return RunOutcome{}, ctx.Err()
	}
	out, closed := targetEnd(err)
	if !closed {
		// The wait failed, and says nothing of the target: the activity fails and is
		// retried, and the run stays RUNNING until Temporal says the target closed.
		return RunOutcome{}, fmt.Errorf("wait for %s to close: %w", workflowID, err)
	}
	return out, nil
}

// firstAttemptPoll is how often a wait for a run whose first attempt the sender holds looks
// at it again.
const firstAttemptPoll = 250 * time.Millisecond

// awaitFirstAttempt waits, for a run of an http action whose first attempt the worker that
// released its fire sends (no delivery workflow exists yet), until that attempt decided it
// — decided, with the run's outcome as recorded — or handed it to its delivery workflow,
// which the caller then waits for. A run already recorded final is decided too.
func (a *ScheduleActivities) awaitFirstAttempt(ctx context.Context, workflowID string) (RunOutcome, bool, error) {
	if a.Store == nil {
		return RunOutcome{}, false, nil // no runs to read (a wait on Temporal alone)
	}
	for {
		s, err := a.Store.FirstAttemptRunState(ctx, workflowID)
		if errors.Is(err, store.ErrNotFound) {
			return RunOutcome{}, false, nil
		}
		if err != nil {
			return RunOutcome{}, false, fmt.Errorf("wait for %s: %w", workflowID, err)
		}
		switch {
		case s.Queued:
		case s.Status.Final():
			// Recorded final: by its first attempt, by a stop before its delivery started, or
			// after its target closed. PostgreSQL is the truth of the run either way.
			return RunOutcome{Status: s.Status, Error: s.Error}, true, nil
		default:
			return RunOutcome{}, false, nil
		}
		if err := sleepCtx(ctx, firstAttemptPoll); err != nil {
			return RunOutcome{}, false, err
		}
	}
}

// RunOutcome is how a run's workflow ended.
type RunOutcome struct {
	Status domain.RunStatus
	Error  string
}

// FinishedRun is a run's final status to record.
type FinishedRun struct {
	RunID  int64
	Status domain.RunStatus
	Error  string
}

// FinishRun records a run's final status (a no-op when already final).
func (a *ScheduleActivities) FinishRun(ctx context.Context, f FinishedRun) error {
	return a.Store.FinishRun(ctx, f.RunID, f.Status, f.Error)
}

// StopRun cancels or terminates a running run's workflow (overlap cancel_other /
// terminate_other).
type StopRun struct {
	WorkflowID string
	Terminate  bool
	Reason     string
}

// StopRunWorkflow cancels or terminates the run's workflow; one already closed is fine.
func (a *ScheduleActivities) StopRunWorkflow(ctx context.Context, s StopRun) error {
	var err error
	if s.Terminate {
		err = a.Temporal.TerminateWorkflow(ctx, s.WorkflowID, "", s.Reason)
	} else {
		err = a.Temporal.CancelWorkflow(ctx, s.WorkflowID, "")
	}
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		// An http run whose first attempt is still the sender's has no workflow yet: it is
		// stopped in PostgreSQL, and nothing more is sent for it.
		status, why := domain.RunCanceled, "canceled"
		if s.Terminate {
			status, why = domain.RunTerminated, "terminated"
		}
		if s.Reason != "" {
			why += ": " + s.Reason
		}
		if _, err := a.Store.StopFirstAttemptRun(ctx, s.WorkflowID, status, why); err != nil {
			return err
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("stop run workflow %s: %w", s.WorkflowID, err)
	}
	return nil
}

func observeTick(status domain.RunStatus, trigger domain.Trigger, scheduledAt, firedAt time.Time) {
	switch status {
	case domain.RunSkipped:
		metrics.ScheduleTicks.WithLabelValues("skipped", string(trigger)).Inc()
	case domain.RunMissed:
		metrics.ScheduleTicks.WithLabelValues("missed", string(trigger)).Inc()
	default:
		metrics.ScheduleTicks.WithLabelValues("fired", string(trigger)).Inc()
		metrics.FireLatenessObserved.WithLabelValues(string(trigger)).Observe(firedAt.Sub(scheduledAt).Seconds())
	}
}
