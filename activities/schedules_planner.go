package activities

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/scheduleplan"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/internal/telemetry"
	"github.com/tickgate/tickgate/store"
)

// ScheduleStarter starts and stops schedule workflows with the ids and options every caller
// agrees on (the worker fills it with the starter).
type ScheduleStarter interface {
	// WakeSchedule starts the schedule's workflow, or leaves the running one.
	WakeSchedule(ctx context.Context, id int64, name string) error
	// StopSchedule terminates the schedule's workflow, if one runs.
	StopSchedule(ctx context.Context, name, reason string) error
}

// Planner round sizes.
const (
	// planBatch is how many schedules at rest one planner transaction looks at.
	planBatch = 1000
	// handoverBatch bounds the rests completed, owners checked and legacy schedules taken
	// over in one round: each asks Temporal about a workflow.
	handoverBatch = 200
	// plannerPoll is the longest a planner sleeps between two rounds.
	plannerPoll = time.Second
	// plannerHeartbeat is how often a planner activity heartbeats.
	plannerHeartbeat = 5 * time.Second
	// PlannerHeartbeatTimeout is how long a dead planner's shard goes unnoticed.
	PlannerHeartbeatTimeout = 20 * time.Second
	// wakeParallel bounds the workflow starts (wakes, delayed targets) a round has in flight.
	wakeParallel = 16
)

// RoundResult is what a planner round did.
type RoundResult struct {
	Looked  int // schedules at rest looked at
	Armed   int // fires armed
	Woken   int // workflows woken
	Rested  int // rests completed
	Adopted int // schedules taken over from an owner that ended without resting, or from the version before
	// Completed are one-time schedules marked completed, Deleted those deleted after their
	// completion (after_completion "delete").
	Completed int
	Deleted   int
}

// PlannerRun is the input of the planner activity.
type PlannerRun struct {
	Index int
}

// PlanSchedules is the planner: it runs rounds (PlanRound) for as long as the activity
// lives, sleeping until the next schedule at rest is due (at most a second), and heartbeats.
// Several planners share the work through the rows' locks. It returns only when cancelled or
// when a round fails, and its workflow starts it again.
func (a *ScheduleActivities) PlanSchedules(ctx context.Context, in PlannerRun) error {
	logger := activity.GetLogger(ctx)
	lastBeat := time.Time{}
	for {
		res, err := a.PlanRound(ctx, time.Now())
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("planner %d: %w", in.Index, err)
		}
		if time.Since(lastBeat) >= plannerHeartbeat {
			activity.RecordHeartbeat(ctx, res)
			lastBeat = time.Now()
		}
		if res.Looked >= planBatch {
			continue // more are due: no sleep
		}
		wait := plannerPoll
		if next, err := a.Store.NextPlanAt(ctx); err == nil && next != nil {
			wait = min(max(time.Until(*next), 0), plannerPoll)
		} else if err != nil {
			logger.Warn("planner: next plan", "error", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// PlanRound is one round of the planner at now: it takes over schedules the version before
// the planner left behind, completes rests whose runs have ended, takes back schedules whose
// owner ended without resting, and then, for every schedule at rest whose plan has come,
// arms its fires (scheduleplan.Schedule.Arm: committed ahead, released at their time) or
// wakes its workflow. The targets of armed workflow fires are started with a start delay
// after the commit.
func (a *ScheduleActivities) PlanRound(ctx context.Context, now time.Time) (RoundResult, error) {
	var res RoundResult
	var err error
	if res.Adopted, err = a.adoptLegacy(ctx); err != nil {
		return res, err
	}
	if res.Rested, err = a.completeRests(ctx); err != nil {
		return res, err
	}
	abandoned, err := a.takeBackAbandoned(ctx)
	if err != nil {
		return res, err
	}
	res.Adopted += abandoned
	completed, err := a.completeSchedules(ctx, now)
	if err != nil {
		return res, err
	}
	res.Completed, res.Deleted = completed.Completed, len(completed.Deleted)
	for {
		var wakes []store.Schedule
		var plans map[int64]scheduleplan.Schedule
		var retries map[int64]*domain.Retry
		traced := &roundTrace{tracer: a.Tracer, ctx: ctx}
		looked, armed, err := a.Store.PlanRound(ctx, now, planBatch, func(rows []store.Schedule, inFlight map[int64]store.InFlight, cals []store.Calendar) []store.RoundDecision {
			var out []store.RoundDecision
			out, wakes, plans = decidePlans(rows, inFlight, cals, now)
			retries = retriesOf(rows)
			traced.arm(out, namesOf(rows))
			return out
		})
		traced.end(armed, err)
		if err != nil {
			return res, err
		}
		res.Looked += looked
		res.Armed += len(armed)
		a.startArmedTargets(ctx, armed, plans, retries)
		res.Woken += a.wake(ctx, wakes)
		if looked < planBatch || ctx.Err() != nil {
			return res, ctx.Err()
		}
	}
}

// retriesOf maps the schedules' ids to their retry policies (those that have one).
func retriesOf(rows []store.Schedule) map[int64]*domain.Retry {
	out := map[int64]*domain.Retry{}
	for _, row := range rows {
		if def, err := DefinitionFromRow(row); err == nil && def.Retry != nil {
			out[row.ID] = def.Retry
		}
	}
	return out
}

// namesOf maps the schedules' ids to their names.
func namesOf(rows []store.Schedule) map[int64]string {
	names := make(map[int64]string, len(rows))
	for _, r := range rows {
		names[r.ID] = r.Name
	}
	return names
}

// decidePlans is a round's decision for the schedules it locked: pure, inside the round's
// transaction. It answers their plans, the schedules to wake, and each one's plan view. cals
// are the calendars they exclude, as the round read them: a tick one excludes is armed as
// the SKIPPED tick it is.
func decidePlans(rows []store.Schedule, inFlight map[int64]store.InFlight, cals []store.Calendar, now time.Time) ([]store.RoundDecision, []store.Schedule, map[int64]scheduleplan.Schedule) {
	plans := make([]store.RoundDecision, 0, len(rows))
	views := make(map[int64]scheduleplan.Schedule, len(rows))
	var wakes []store.Schedule
	calendars := compileEach(cals)
	for _, row := range rows {
		p := store.RoundDecision{ScheduleID: row.ID}
		s, err := PlanOf(row)
		var missing []string
		if err == nil {
			s.Calendars, missing = schedulespec.Pick(calendars, s.Spec.Spec.ExcludeCalendars)
		}
		if err != nil || len(missing) > 0 {
			// A row whose definition does not decode is its workflow's to report, and so is a
			// calendar it excludes that cannot be read: wake it.
			retry := now.Add(time.Minute)
			p.PlanAt, p.PlanAction = &retry, scheduleplan.Wake
			wakes = append(wakes, row)
			plans = append(plans, p)
			continue
		}
		busy := inFlight[row.ID]
		s.InFlight, s.Running, s.Waiting = busy.Running+busy.Buffered > 0, busy.Running, busy.Buffered
		views[row.ID] = s
		if row.PlanAction != nil && *row.PlanAction == scheduleplan.Wake {
			// Looked at again in a minute if the wake does not take (the run's takeover
			// clears the plan).
			retry := now.Add(time.Minute)
			p.PlanAt, p.PlanAction = &retry, scheduleplan.Wake
			wakes = append(wakes, row)
			plans = append(plans, p)
			continue
		}
		fires, watermark, next := s.Arm(now)
		for _, f := range fires {
			pf := store.PlannedFire{Tick: f.Tick, VisibleAt: f.FireAt, ReleaseNext: f.ReleaseNext,
				Event: domain.FireEvent(row.Name, s.Action, f.Tick, domain.TriggerScheduled, f.FireAt)}
			if f.ExcludedBy != "" {
				// The SKIPPED tick it is: no event, nothing to start.
				pf.SkipReason, pf.Event = schedulespec.ExclusionReason(f.ExcludedBy), domain.Event{}
			} else if s.Action.StartsWorkflow() {
				pf.WorkflowID = domain.RunWorkflowID(row.Name, domain.TickKey(row.ID, f.Tick))
				// An http fire's first attempt is sent by the worker that releases it: its
				// delivery workflow (under WorkflowID) starts only to retry it.
				pf.Direct = s.Action.Kind == domain.ActionHTTP
			}
			p.Fires = append(p.Fires, pf)
		}
		if len(fires) > 0 {
			p.Watermark = &watermark
			first := fires[0].Tick
			p.FirstFire = &first
		}
		p.PlanAt, p.PlanAction = next.At, next.Action
		if next.At != nil && next.Action == scheduleplan.Wake && !next.At.After(now) {
			wakes = append(wakes, row) // due now: woken in this round
			retry := now.Add(time.Minute)
			p.PlanAt = &retry
		}
		plans = append(plans, p)
	}
	return plans, wakes, views
}

// startArmedTargets starts the target of each armed workflow fire with a start delay ending
// at its fire time, so that Temporal starts it then whatever tickgate is doing. A start that
// fails leaves the run RUNNING with no target: the run watcher that leases it finds none and
// starts it (RunWatcher), late. A fire armed behind the release frontier was judged at its
// arming (store.PlanRound): one recorded MISSED starts nothing. An http fire starts nothing
// here: the worker that releases it sends its first attempt (HTTPSender).
func (a *ScheduleActivities) startArmedTargets(ctx context.Context, armed []store.ArmedFire, plans map[int64]scheduleplan.Schedule, retries map[int64]*domain.Retry) {
	var starts []func()
	for _, f := range armed {
		if f.WorkflowID == "" || f.Status == domain.RunSkipped || f.Status == domain.RunMissed {
			continue
		}
		s, ok := plans[f.ScheduleID]
		if !ok || s.Action.Kind == domain.ActionHTTP {
			continue
		}
		f := f
		starts = append(starts, func() {
			at := f.VisibleAt
			// The target's start (and its first workflow task) belongs to the fire's trace.
			ctx := telemetry.Resume(ctx, f.TraceContext)
			start := RunStart(s.Name, s.Action, retries[f.ScheduleID])
			start.WorkflowID, start.StartAt = f.WorkflowID, &at
			_, err := a.StartRunWorkflow(ctx, start)
			if err != nil {
				activity.GetLogger(ctx).Warn("planner: start an armed target", "workflow_id", f.WorkflowID, "error", err)
			}
		})
	}
	runParallel(ctx, starts)
}

// wake starts the workflows of the schedules given; it answers how many it started.
func (a *ScheduleActivities) wake(ctx context.Context, rows []store.Schedule) int {
	var mu sync.Mutex
	woken := 0
	calls := make([]func(), 0, len(rows))
	for _, row := range rows {
		row := row
		calls = append(calls, func() {
			if err := a.Schedules.WakeSchedule(ctx, row.ID, row.Name); err != nil {
				activity.GetLogger(ctx).Warn("planner: wake a schedule", "schedule", row.Name, "error", err)
				return
			}
			mu.Lock()
			woken++
			mu.Unlock()
		})
	}
	runParallel(ctx, calls)
	return woken
}

// runParallel runs calls, at most wakeParallel at a time. In the planner's activity it
// heartbeats as they go: a round's thousand wakes or starts on a busy Temporal server (a
// bulk create of resident schedules wakes them all) may take longer than
// PlannerHeartbeatTimeout, and the planner would be cancelled mid-round.
func runParallel(ctx context.Context, calls []func()) {
	sem := make(chan struct{}, wakeParallel)
	var wg sync.WaitGroup
	beat := activity.IsActivity(ctx)
	for _, call := range calls {
		sem <- struct{}{}
		if beat {
			activity.RecordHeartbeat(ctx) // throttled by the SDK
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			call()
		}()
	}
	wg.Wait()
}

// completeRests completes the rests asked for whose runs have ended.
func (a *ScheduleActivities) completeRests(ctx context.Context) (int, error) {
	asked, err := a.Store.RestRequests(ctx, handoverBatch)
	if err != nil {
		return 0, err
	}
	done := 0
	for _, o := range asked {
		open, err := a.runOpen(ctx, o)
		if err != nil {
			return done, err
		}
		if open {
			if err := a.Store.MarkOwnerChecked(ctx, o.ID, o.Owner); err != nil {
				return done, err
			}
			continue
		}
		ok, err := a.Store.CompleteScheduleRest(ctx, o.ID, o.Owner)
		if err != nil {
			return done, err
		}
		if ok {
			done++
		}
	}
	return done, nil
}

// takeBackAbandoned puts at rest, to be woken at once, schedules whose owner ended without
// resting (terminated by hand, say) and let a fire go overdue.
func (a *ScheduleActivities) takeBackAbandoned(ctx context.Context) (int, error) {
	owned, err := a.Store.OverdueOwners(ctx, handoverBatch)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, o := range owned {
		open, err := a.runOpen(ctx, o)
		if err != nil {
			return n, err
		}
		if open {
			if err := a.Store.MarkOwnerChecked(ctx, o.ID, o.Owner); err != nil {
				return n, err
			}
			continue
		}
		ok, err := a.Store.TakeBackAbandonedSchedule(ctx, o.ID, o.Owner)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// adoptLegacy takes over schedules of the version before the planner: their old workflow is
// terminated (the row holds their state), and they are woken at once.
func (a *ScheduleActivities) adoptLegacy(ctx context.Context) (int, error) {
	legacy, err := a.Store.LegacySchedules(ctx, handoverBatch)
	if err != nil {
		return 0, err
	}
	for _, o := range legacy {
		if err := a.Schedules.StopSchedule(ctx, o.Name, "taken over by the schedule planner (upgrade)"); err != nil {
			return 0, err
		}
		if err := a.Store.AdoptLegacySchedule(ctx, o.ID); err != nil {
			return 0, err
		}
	}
	return len(legacy), nil
}

// runOpen reports whether the owning run of a schedule still runs.
func (a *ScheduleActivities) runOpen(ctx context.Context, o store.OwnedSchedule) (bool, error) {
	d, err := a.Temporal.DescribeWorkflowExecution(ctx, domain.ScheduleWorkflowID(o.Name), o.Owner)
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("describe the workflow of schedule %q: %w", o.Name, err)
	}
	return d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil
}
