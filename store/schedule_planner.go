package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store/dbgen"
)

// Plan actions: what the planner does with a schedule at rest when its plan_at comes.
const (
	PlanArm  = "arm"  // commit its next fires ahead, hidden until their release
	PlanWake = "wake" // start its workflow, which takes the schedule over
)

// LegacyOwner marks a schedule held by a workflow of the version before the planner.
const LegacyOwner = "legacy"

// ScheduleTakeover is what a workflow run taking its schedule over reads in the same
// transaction: the row, and what is in flight or waiting.
type ScheduleTakeover struct {
	Schedule Schedule
	// Armed are its armed fires not yet released, earliest first.
	Armed []ScheduleRun
	// Running are its RUNNING runs (armed workflow fires among them), Buffered its BUFFERED
	// ticks, oldest first.
	Running  []ScheduleRun
	Buffered []ScheduleRun
}

// TakeScheduleOwnership makes run owner the single writer of the schedule's runtime state
// (by id, or by name when id is 0), waiting for a planner round that holds the row. A
// schedule that does not exist is ErrNotFound.
func (s *Store) TakeScheduleOwnership(ctx context.Context, id int64, name, owner string) (ScheduleTakeover, error) {
	var t ScheduleTakeover
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		var err error
		if t.Schedule, err = q.TakeScheduleOwnership(ctx, dbgen.TakeScheduleOwnershipParams{ID: id, Name: name, Owner: &owner}); err != nil {
			return err
		}
		if t.Armed, err = q.ListArmedRunsOfSchedule(ctx, t.Schedule.ID); err != nil {
			return err
		}
		if t.Running, err = q.ListRunningScheduleRuns(ctx, t.Schedule.ID); err != nil {
			return err
		}
		t.Buffered, err = q.ListBufferedRuns(ctx, t.Schedule.ID)
		return err
	})
	if err != nil {
		return ScheduleTakeover{}, fmt.Errorf("take schedule %d %q over: %w", id, name, mapErr(err))
	}
	return t, nil
}

// ScheduleRest is the state a workflow run leaves its schedule in when it asks to rest.
type ScheduleRest struct {
	ID            int64
	Owner         string
	Watermark     time.Time
	LastSuccessAt *time.Time
	RescheduledTo *time.Time
	NextRunAt     *time.Time
	// PlanAt and PlanAction: when the planner looks at it next and what it does (nil: never,
	// until a command).
	PlanAt     *time.Time
	PlanAction string
}

// RequestScheduleRest records the rest asked for by the owning run; false when that run no
// longer owns the schedule (ErrNotFound when it is gone).
func (s *Store) RequestScheduleRest(ctx context.Context, r ScheduleRest) (bool, error) {
	p := dbgen.RequestScheduleRestParams{
		ID: r.ID, Owner: &r.Owner, Watermark: &r.Watermark, LastSuccessAt: r.LastSuccessAt, RescheduledTo: r.RescheduledTo,
		NextRunAt: r.NextRunAt, PlanAt: r.PlanAt,
	}
	if r.PlanAt != nil {
		p.PlanAction = &r.PlanAction
	}
	n, err := s.Q.RequestScheduleRest(ctx, p)
	if err != nil {
		return false, fmt.Errorf("request rest of schedule %d: %w", r.ID, mapErr(err))
	}
	if n == 0 {
		if _, err := s.GetScheduleByID(ctx, r.ID); errors.Is(err, ErrNotFound) {
			return false, err
		}
	}
	return n == 1, nil
}

// RestScheduleInPlace rests the schedule of a resident run that stays open
// (TICKGATE_SCHEDULES_RESIDENT): the same state and plan as RequestScheduleRest, and the
// handover completed in the same transaction. False when that run no longer owns the
// schedule (ErrNotFound when it is gone).
func (s *Store) RestScheduleInPlace(ctx context.Context, r ScheduleRest) (bool, error) {
	p := dbgen.RestScheduleInPlaceParams{
		ID: r.ID, Owner: &r.Owner, Watermark: &r.Watermark, LastSuccessAt: r.LastSuccessAt, RescheduledTo: r.RescheduledTo,
		NextRunAt: r.NextRunAt, PlanAt: r.PlanAt,
	}
	if r.PlanAt != nil {
		p.PlanAction = &r.PlanAction
	}
	n, err := s.Q.RestScheduleInPlace(ctx, p)
	if err != nil {
		return false, fmt.Errorf("rest schedule %d in place: %w", r.ID, mapErr(err))
	}
	if n == 0 {
		if _, err := s.GetScheduleByID(ctx, r.ID); errors.Is(err, ErrNotFound) {
			return false, err
		}
	}
	return n == 1, nil
}

// OwnedSchedule is a schedule held by a workflow run.
type OwnedSchedule struct {
	ID          int64
	Name        string
	Owner       string
	RequestedAt time.Time // when it asked to rest (zero: it did not)
}

// RestRequests lists the rests asked for that the planner is to complete.
func (s *Store) RestRequests(ctx context.Context, max int) ([]OwnedSchedule, error) {
	rows, err := s.Q.ListRestRequests(ctx, int4(max))
	if err != nil {
		return nil, fmt.Errorf("list rest requests: %w", mapErr(err))
	}
	out := make([]OwnedSchedule, len(rows))
	for i, r := range rows {
		out[i] = OwnedSchedule{ID: r.ID, Name: r.Name, Owner: r.Owner, RequestedAt: r.RestRequestedAt}
	}
	return out, nil
}

// CompleteScheduleRest puts the schedule at rest once its run has ended; false when the
// request was overtaken (another run took the schedule meanwhile).
func (s *Store) CompleteScheduleRest(ctx context.Context, id int64, owner string) (bool, error) {
	n, err := s.Q.CompleteScheduleRest(ctx, dbgen.CompleteScheduleRestParams{ID: id, Owner: &owner})
	if err != nil {
		return false, fmt.Errorf("complete rest of schedule %d: %w", id, mapErr(err))
	}
	return n == 1, nil
}

// MarkOwnerChecked records that the planner found the owner still running.
func (s *Store) MarkOwnerChecked(ctx context.Context, id int64, owner string) error {
	if err := s.Q.MarkOwnerChecked(ctx, dbgen.MarkOwnerCheckedParams{ID: id, Owner: &owner}); err != nil {
		return fmt.Errorf("mark owner of schedule %d checked: %w", id, mapErr(err))
	}
	return nil
}

// OverdueOwners lists schedules whose owner has let a fire go a minute overdue.
func (s *Store) OverdueOwners(ctx context.Context, max int) ([]OwnedSchedule, error) {
	rows, err := s.Q.ListOverdueOwners(ctx, int4(max))
	if err != nil {
		return nil, fmt.Errorf("list overdue owners: %w", mapErr(err))
	}
	out := make([]OwnedSchedule, len(rows))
	for i, r := range rows {
		out[i] = OwnedSchedule{ID: r.ID, Name: r.Name, Owner: r.Owner}
	}
	return out, nil
}

// TakeBackAbandonedSchedule takes back, at rest, a schedule whose owner ended without resting, to be
// woken at once; false when the owner changed meanwhile.
func (s *Store) TakeBackAbandonedSchedule(ctx context.Context, id int64, owner string) (bool, error) {
	n, err := s.Q.TakeBackAbandonedSchedule(ctx, dbgen.TakeBackAbandonedScheduleParams{ID: id, Owner: &owner})
	if err != nil {
		return false, fmt.Errorf("take back abandoned schedule %d: %w", id, mapErr(err))
	}
	return n == 1, nil
}

// LegacySchedules lists schedules still held by a workflow of the version before the planner.
func (s *Store) LegacySchedules(ctx context.Context, max int) ([]OwnedSchedule, error) {
	rows, err := s.Q.ListLegacySchedules(ctx, int4(max))
	if err != nil {
		return nil, fmt.Errorf("list legacy schedules: %w", mapErr(err))
	}
	out := make([]OwnedSchedule, len(rows))
	for i, r := range rows {
		out[i] = OwnedSchedule{ID: r.ID, Name: r.Name, Owner: LegacyOwner}
	}
	return out, nil
}

// AdoptLegacySchedule takes over a schedule whose old workflow was terminated: at rest, to
// be woken at once.
func (s *Store) AdoptLegacySchedule(ctx context.Context, id int64) error {
	if _, err := s.Q.AdoptLegacySchedule(ctx, id); err != nil {
		return fmt.Errorf("adopt legacy schedule %d: %w", id, mapErr(err))
	}
	return nil
}

// NextPlanAt is when the next schedule at rest is due for the planner (nil: none).
func (s *Store) NextPlanAt(ctx context.Context) (*time.Time, error) {
	at, err := s.Q.NextPlanAt(ctx)
	if err != nil {
		return nil, fmt.Errorf("next plan: %w", mapErr(err))
	}
	if at.IsZero() {
		return nil, nil
	}
	return &at, nil
}

// PlannedFire is one fire a planner round arms: a tick of a schedule, visible (released) at
// VisibleAt, with its event. WorkflowID is set for a workflow action's fire, whose target
// the planner starts with a start delay once the round has committed.
type PlannedFire struct {
	Tick      time.Time
	VisibleAt time.Time
	// ReleaseNext is the schedule's tick after this one (nil: none): its next_run_at once
	// this fire is released.
	ReleaseNext *time.Time
	WorkflowID  string
	Event       domain.Event
	// TraceContext is the fire's trace (W3C traceparent; empty with tracing off), written
	// on its run for its release to join.
	TraceContext string
	// SkipReason, for a tick a calendar excludes, arms the SKIPPED row it is (no event, no
	// workflow), shown at its release with the reason.
	SkipReason string
	// Direct, for an http action's fire, queues its first attempt (http_first_attempts): the
	// worker that releases it sends it, and no delivery workflow is started ahead.
	Direct bool
}

// RoundDecision is what a planner round decided for one schedule it locked: the fires it
// arms, how far that moves its watermark, and when it looks again and what it does then.
type RoundDecision struct {
	ScheduleID int64
	Fires      []PlannedFire
	Watermark  *time.Time // nil: unchanged
	PlanAt     *time.Time // nil: nothing to do until a command
	PlanAction string
	// FirstFire is its next fire, for a schedule whose next_run_at is not set.
	FirstFire *time.Time
}

// ArmedFire is a fire a planner round committed.
type ArmedFire struct {
	RunID      int64
	ScheduleID int64
	Tick       time.Time
	VisibleAt  time.Time
	WorkflowID string
	// TraceContext is the fire's trace (empty with tracing off).
	TraceContext string
	// Status is SUCCEEDED for an event fire, RUNNING for a workflow fire, SKIPPED for a tick a
	// calendar excludes (each as it shows at its release).
	Status domain.RunStatus
}

// InFlight is what a schedule has in flight: its runs RUNNING (armed ones among them) and
// its ticks BUFFERED.
type InFlight struct {
	Running, Buffered int
}

// PlanRound runs one planner round at now: it locks up to max schedules at rest due for a
// look (skipping those another planner, a releaser or a command holds), asks plan what to
// do with them, telling it what each has in flight (schedules with nothing are absent from
// the map) and giving it the calendars they exclude (read FOR SHARE: an edit of one waits
// for the round, or the round for the edit) — plan computes, it does no I/O — and commits the
// fires it arms and every schedule's new plan in one transaction. It returns how many
// schedules it looked at and the fires it created (a tick recorded before creates none, S1).
// The counts are read under the rows' locks, which every writer of a run of a schedule takes
// (RecordFire, a workflow's takeover), so no run starts between the count and the arming.
//
// A round that arms a fire near or behind the release frontier (after an outage, the ticks
// the planner missed) runs again holding the release lock, and releases at once the fires
// a release already passed (see releaseStragglers).
func (s *Store) PlanRound(ctx context.Context, now time.Time, max int, plan func(rows []Schedule, inFlight map[int64]InFlight, cals []Calendar) []RoundDecision) (looked int, armed []ArmedFire, err error) {
	looked, armed, err = s.planRound(ctx, now, max, plan, false)
	if errors.Is(err, errNeedsReleaseLock) {
		looked, armed, err = s.planRound(ctx, now, max, plan, true)
	}
	return looked, armed, err
}

// planRound is one attempt at PlanRound, holding the release lock shared or not.
func (s *Store) planRound(ctx context.Context, now time.Time, max int, plan func(rows []Schedule, inFlight map[int64]InFlight, cals []Calendar) []RoundDecision, releaseLocked bool) (looked int, armed []ArmedFire, err error) {
	err = s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		armed = nil
		if releaseLocked {
			if err := q.ShareReleaseLock(ctx, releaseLock); err != nil {
				return fmt.Errorf("release lock (shared): %w", mapErr(err))
			}
		}
		rows, err := q.LockSchedulesToPlan(ctx, dbgen.LockSchedulesToPlanParams{Now: now, MaxRows: int4(max)})
		if err != nil {
			return fmt.Errorf("lock schedules to plan: %w", mapErr(err))
		}
		looked = len(rows)
		if looked == 0 {
			return nil
		}
		ids := make([]int64, len(rows))
		for i, r := range rows {
			ids[i] = r.ID
		}
		busy, err := q.SchedulesInFlight(ctx, ids)
		if err != nil {
			return fmt.Errorf("schedules in flight: %w", mapErr(err))
		}
		inFlight := make(map[int64]InFlight, len(busy))
		for _, b := range busy {
			inFlight[b.ScheduleID] = InFlight{Running: int(b.Running), Buffered: int(b.Buffered)}
		}
		cals, err := q.LockCalendarsOfSchedules(ctx, ids)
		if err != nil {
			return fmt.Errorf("calendars of the schedules to plan: %w", mapErr(err))
		}
		plans := plan(rows, inFlight, cals)
		var fires dbgen.ArmPlannedFiresParams
		names := make(map[int64]string, len(rows))
		for _, r := range rows {
			names[r.ID] = r.Name
		}
		var upd dbgen.SetSchedulePlansParams
		for _, p := range plans {
			for _, f := range p.Fires {
				data := string(f.Event.Data)
				if data == "" {
					data = "{}"
				}
				fires.ScheduleIds = append(fires.ScheduleIds, p.ScheduleID)
				fires.ScheduledAt = append(fires.ScheduledAt, f.Tick.UTC())
				fires.VisibleAt = append(fires.VisibleAt, f.VisibleAt.UTC())
				fires.IdempotencyKeys = append(fires.IdempotencyKeys, domain.TickKey(p.ScheduleID, f.Tick))
				fires.WorkflowIds = append(fires.WorkflowIds, f.WorkflowID)
				fires.ReleaseNextRunAt = append(fires.ReleaseNextRunAt, zeroIfNil(f.ReleaseNext))
				fires.Topics = append(fires.Topics, f.Event.Topic)
				fires.Types = append(fires.Types, f.Event.Type)
				fires.AggregateIds = append(fires.AggregateIds, names[p.ScheduleID])
				fires.Data = append(fires.Data, data)
				fires.TraceContexts = append(fires.TraceContexts, f.TraceContext)
				fires.SkipReasons = append(fires.SkipReasons, f.SkipReason)
				fires.Direct = append(fires.Direct, f.Direct && f.SkipReason == "")
			}
			upd.Ids = append(upd.Ids, p.ScheduleID)
			upd.Watermarks = append(upd.Watermarks, zeroIfNil(p.Watermark))
			upd.PlanAts = append(upd.PlanAts, zeroIfNil(p.PlanAt))
			action := p.PlanAction
			if p.PlanAt == nil {
				action = ""
			}
			upd.PlanActions = append(upd.PlanActions, action)
			upd.FirstFires = append(upd.FirstFires, zeroIfNil(p.FirstFire))
		}
		if len(fires.ScheduleIds) > 0 {
			if !releaseLocked {
				near, err := nearFrontier(ctx, q, fires.VisibleAt)
				if err != nil {
					return err
				}
				if near {
					return errNeedsReleaseLock
				}
			}
			created, err := q.ArmPlannedFires(ctx, fires)
			if err != nil {
				return fmt.Errorf("arm %d fires of %d schedules: %w", len(fires.ScheduleIds), len(plans), mapErr(err))
			}
			refs := make([]armedRef, 0, len(created))
			for _, c := range created {
				armed = append(armed, ArmedFire{RunID: c.ID, ScheduleID: c.ScheduleID, Tick: c.ScheduledAt.UTC(), VisibleAt: c.VisibleAt.UTC(),
					WorkflowID: c.WorkflowID, TraceContext: c.TraceContext, Status: domain.RunStatus(c.Status)})
				refs = append(refs, armedRef{RunID: c.ID, VisibleAt: c.VisibleAt, StartsWorkflow: c.WorkflowID != ""})
			}
			if releaseLocked {
				released, err := releaseStragglers(ctx, q, &now, refs)
				if err != nil {
					return err
				}
				fates := make(map[int64]domain.RunStatus, len(released))
				for _, r := range released {
					fates[r.ID] = domain.RunStatus(r.Status)
				}
				for i := range armed {
					if st, ok := fates[armed[i].RunID]; ok {
						armed[i].Status = st
					}
				}
			}
		}
		if err := q.SetSchedulePlans(ctx, upd); err != nil {
			return fmt.Errorf("set the plans of %d schedules: %w", len(plans), mapErr(err))
		}
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return looked, armed, nil
}

// zeroIfNil is a nullable time as the planner's arrays carry it: the zero time for NULL.
func zeroIfNil(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// RunToWatch is a run in flight of a schedule at rest, leased to a run watcher.
type RunToWatch struct {
	ID         int64
	WorkflowID string
	ScheduleID int64
}

// ClaimRunsToWatch leases, until until, at most max runs in flight that no one watches and
// whose fire time is at least settle ago.
func (s *Store) ClaimRunsToWatch(ctx context.Context, until time.Time, settle time.Duration, max int) ([]RunToWatch, error) {
	rows, err := s.Q.ClaimRunsToWatch(ctx, dbgen.ClaimRunsToWatchParams{Until: until.UTC(), SettleSeconds: settle.Seconds(), MaxRows: int4(max)})
	if err != nil {
		return nil, fmt.Errorf("claim runs to watch: %w", mapErr(err))
	}
	out := make([]RunToWatch, len(rows))
	for i, r := range rows {
		out[i] = RunToWatch{ID: r.ID, WorkflowID: r.WorkflowID, ScheduleID: r.ScheduleID}
	}
	return out, nil
}

// WakeSchedulesWithoutWorkflow has the planner wake, at once, the schedules at rest (not
// completed, created before createdBefore) whose names are not among open: resident
// schedules whose workflow is missing. It answers how many.
func (s *Store) WakeSchedulesWithoutWorkflow(ctx context.Context, open []string, createdBefore time.Time) (int64, error) {
	if open == nil {
		open = []string{}
	}
	n, err := s.Q.WakeSchedulesWithoutWorkflow(ctx, dbgen.WakeSchedulesWithoutWorkflowParams{CreatedBefore: createdBefore, Open: open})
	if err != nil {
		return 0, fmt.Errorf("wake schedules without a workflow: %w", mapErr(err))
	}
	return n, nil
}
