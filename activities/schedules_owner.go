package activities

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/scheduleplan"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/store"
)

// OwnershipRequest asks for a schedule to be taken over by a workflow run: by id, or by name
// (ScheduleID 0) when another service started the run with signal-with-start.
type OwnershipRequest struct {
	ScheduleID int64
	Name       string
	RunID      string
}

// HeldRun is a run in flight when a workflow takes its schedule over.
type HeldRun struct {
	RunID       int64
	WorkflowID  string
	ScheduledAt time.Time
	// StartAt is when an armed workflow fire's target starts (nil: started).
	StartAt *time.Time `json:",omitempty"`
}

// HeldTick is a tick waiting under the overlap policy when a workflow takes its schedule over.
type HeldTick struct {
	Tick    time.Time
	Trigger domain.Trigger
	Key     string
}

// PendingFire is an armed fire not yet released.
type PendingFire struct {
	Tick       time.Time
	FireAt     time.Time
	WorkflowID string `json:",omitempty"`
	RunID      int64  `json:",omitempty"`
}

// Takeover is the schedule as its workflow takes it over: the definition and every piece of
// runtime state the row holds, so that a run woken from rest goes on exactly where the
// planner, or a run before it, left off.
type Takeover struct {
	Definition    ScheduleDefinition
	Watermark     time.Time
	LastSuccessAt time.Time
	Rescheduled   *time.Time      `json:",omitempty"`
	Backfills     []BackfillRange `json:",omitempty"`
	Running       []HeldRun       `json:",omitempty"`
	Buffered      []HeldTick      `json:",omitempty"`
	// Armed are the fires armed ahead and not yet released (by the planner), oldest first;
	// ArmedBefore is the spec's tick before the first of them, to which a retraction of them
	// all gives the watermark back.
	Armed       []PendingFire `json:",omitempty"`
	ArmedBefore time.Time
}

// TakeOwnership makes the calling workflow run the single writer of its schedule (the
// planner leaves it from this transaction on) and answers everything it needs to go on.
func (a *ScheduleActivities) TakeOwnership(ctx context.Context, r OwnershipRequest) (Takeover, error) {
	t, err := a.Store.TakeScheduleOwnership(ctx, r.ScheduleID, r.Name, r.RunID)
	if err != nil {
		return Takeover{}, gone(err, r.ScheduleID)
	}
	row := t.Schedule
	def, err := DefinitionFromRow(row)
	if err != nil {
		return Takeover{}, temporal.NewNonRetryableApplicationError(err.Error(), "BadSpec", err)
	}
	out := Takeover{Definition: def, Watermark: row.CreatedAt.UTC(), Rescheduled: utc(row.RescheduledTo)}
	if row.Watermark != nil {
		out.Watermark = row.Watermark.UTC()
	}
	if row.LastSuccessAt != nil {
		out.LastSuccessAt = row.LastSuccessAt.UTC()
	}
	backfills, err := store.Backfills(row)
	if err != nil {
		return Takeover{}, err
	}
	for _, b := range backfills {
		out.Backfills = append(out.Backfills, BackfillRange{Done: b.Start.Add(-time.Nanosecond), End: b.End, Overlap: b.Overlap})
	}
	for _, r := range t.Running {
		if r.Redrives > 0 {
			// A redrive is outside the overlap policy: the run watchers watch it, whoever
			// holds the schedule, and the workflow neither waits for it nor counts it.
			continue
		}
		h := HeldRun{RunID: r.ID, WorkflowID: r.WorkflowID, ScheduledAt: r.ScheduledAt.UTC()}
		if r.Armed {
			h.StartAt = utc(r.VisibleAt)
		}
		out.Running = append(out.Running, h)
	}
	for _, r := range t.Buffered {
		out.Buffered = append(out.Buffered, HeldTick{Tick: r.ScheduledAt.UTC(), Trigger: r.Trigger, Key: r.IdempotencyKey})
	}
	for _, r := range t.Armed {
		f := PendingFire{Tick: r.ScheduledAt.UTC(), FireAt: r.ScheduledAt.UTC()}
		if r.VisibleAt != nil {
			f.FireAt = r.VisibleAt.UTC()
		}
		if r.WorkflowID != "" {
			f.WorkflowID, f.RunID = r.WorkflowID, r.ID
		}
		out.Armed = append(out.Armed, f)
	}
	if len(out.Armed) > 0 {
		spec, err := schedulespec.Normalize(def.Spec, def.CreatedAt)
		if err != nil {
			return Takeover{}, temporal.NewNonRetryableApplicationError("stored spec is invalid: "+err.Error(), "BadSpec", err)
		}
		out.ArmedBefore = spec.Prev(out.Armed[0].Tick)
		if out.ArmedBefore.IsZero() || out.ArmedBefore.Before(def.CreatedAt) {
			out.ArmedBefore = def.CreatedAt
		}
	}
	return out, nil
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// RestRequest is the state a workflow run leaves its schedule in, asking to rest.
type RestRequest struct {
	ScheduleID    int64
	RunID         string
	Watermark     time.Time
	LastSuccessAt time.Time
	Rescheduled   *time.Time `json:",omitempty"`
	// StayOpen: the run stays open at rest when the worker keeps schedules resident
	// (TICKGATE_SCHEDULES_RESIDENT); it then rests in place (Rested.InPlace).
	StayOpen bool `json:",omitempty"`
	// At is the run's clock when it asks: its first look at rest is at it.
	At time.Time `json:",omitempty"`
}

// Rested answers a rest request: whether the run still owned the schedule (when it did not,
// another run took it meanwhile and the asking run simply ends).
type Rested struct {
	Recorded  bool
	NextRunAt *time.Time `json:",omitempty"`
	// InPlace: the run asked to stay open and the worker keeps schedules resident: the
	// handover is complete, the planner's from now on, and the run stays open at rest
	// showing Look until something reaches it.
	InPlace bool      `json:",omitempty"`
	Look    *RestLook `json:",omitempty"`
}

// RequestRest records the run's request to rest with the plan the planner goes on from
// (scheduleplan: armed by the planner, or woken before its next fire). The run ends after
// it; the planner completes the handover once Temporal says it has.
func (a *ScheduleActivities) RequestRest(ctx context.Context, r RestRequest) (Rested, error) {
	row, err := a.Store.GetScheduleByID(ctx, r.ScheduleID)
	if err != nil {
		return Rested{}, gone(err, r.ScheduleID)
	}
	s, err := PlanOf(row)
	if err != nil {
		return Rested{}, err
	}
	s.Watermark, s.Rescheduled = r.Watermark, r.Rescheduled
	p := s.AtRest()
	rest := store.ScheduleRest{
		ID: r.ScheduleID, Owner: r.RunID, Watermark: r.Watermark, RescheduledTo: r.Rescheduled,
		PlanAt: p.At, PlanAction: p.Action,
	}
	if !r.LastSuccessAt.IsZero() {
		rest.LastSuccessAt = &r.LastSuccessAt
	}
	if tick, _, ok := s.Next(); ok {
		rest.NextRunAt = &tick
	}
	// An armed fire not yet released stays the next fire (the release moves next_run_at on).
	if row.NextRunAt != nil && rest.NextRunAt != nil && row.NextRunAt.Before(*rest.NextRunAt) && !row.Paused {
		rest.NextRunAt = row.NextRunAt
	}
	if r.StayOpen && a.Resident {
		return a.restInPlace(ctx, row, rest, r.At)
	}
	ok, err := a.Store.RequestScheduleRest(ctx, rest)
	if err != nil {
		return Rested{}, gone(err, r.ScheduleID)
	}
	return Rested{Recorded: ok, NextRunAt: rest.NextRunAt}, nil
}

// restInPlace rests the schedule of a resident run that stays open, and answers its first
// look at rest.
func (a *ScheduleActivities) restInPlace(ctx context.Context, row store.Schedule, rest store.ScheduleRest, at time.Time) (Rested, error) {
	ok, err := a.Store.RestScheduleInPlace(ctx, rest)
	if err != nil {
		return Rested{}, gone(err, rest.ID)
	}
	if !ok {
		return Rested{NextRunAt: rest.NextRunAt}, nil
	}
	row.Watermark, row.RescheduledTo, row.PlanAt = &rest.Watermark, rest.RescheduledTo, rest.PlanAt
	row.PlanAction = nil
	if rest.PlanAt != nil {
		row.PlanAction = &rest.PlanAction
	}
	look := a.restLook(row, at)
	return Rested{Recorded: true, NextRunAt: rest.NextRunAt, InPlace: true, Look: &look}, nil
}

// PlanOf reads a schedules row as the plan's decisions see it (watermark, pending
// reschedule, whether backfills wait).
func PlanOf(row store.Schedule) (scheduleplan.Schedule, error) {
	def, err := DefinitionFromRow(row)
	if err != nil {
		return scheduleplan.Schedule{}, err
	}
	spec, err := schedulespec.Normalize(def.Spec, def.CreatedAt)
	if err != nil {
		return scheduleplan.Schedule{}, fmt.Errorf("stored spec of schedule %q: %w", row.Name, err)
	}
	backfills, err := store.Backfills(row)
	if err != nil {
		return scheduleplan.Schedule{}, err
	}
	s := scheduleplan.Schedule{
		Name: row.Name, Spec: spec, Action: def.Action, Overlap: row.Overlap, SkipIfSuccessful: row.SkipIfSuccessful, Paused: row.Paused,
		Watermark: row.CreatedAt.UTC(), Rescheduled: utc(row.RescheduledTo), Backfilling: len(backfills) > 0,
		MaxConcurrent: def.MaxConcurrent,
	}
	if row.Watermark != nil {
		s.Watermark = row.Watermark.UTC()
	}
	return s, nil
}

// LateTicks asks how ticks a schedule's workflow handles late fare, at its clock's JudgedAt.
type LateTicks struct {
	FireAt        []time.Time
	JudgedAt      time.Time
	CatchupWindow time.Duration
}

// TickFate is one late tick's fate: its trigger when it fires, or the reason it is MISSED.
type TickFate struct {
	Trigger domain.Trigger `json:",omitempty"`
	Missed  string         `json:",omitempty"`
}

// JudgeLateTicks judges late ticks by tick_fate, the one rule of a late tick (store.JudgeTicks).
func (a *ScheduleActivities) JudgeLateTicks(ctx context.Context, r LateTicks) ([]TickFate, error) {
	fates, err := a.Store.JudgeTicks(ctx, r.FireAt, r.JudgedAt, r.CatchupWindow)
	if err != nil {
		return nil, err
	}
	out := make([]TickFate, len(fates))
	for i, f := range fates {
		switch f.Fate {
		case "catchup":
			out[i] = TickFate{Trigger: domain.TriggerCatchup}
		case "missed":
			out[i] = TickFate{Missed: f.Reason}
		default:
			out[i] = TickFate{Trigger: domain.TriggerScheduled}
		}
	}
	return out, nil
}
