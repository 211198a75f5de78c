// Package scheduleplan decides what a schedule at rest does next: which of its fires the
// planner arms ahead and how far, when the planner looks at it again, and whether its
// workflow may rest (plan.go); when a one-time schedule is complete (completion.go); what a
// one-time spec may ask and where a new schedule counts its ticks from (one_time.go); and
// what a calendar edit makes of the fires already armed (calendars.go). It is pure — a
// spec, a definition and a watermark in, decisions out — so the planner, the schedule
// workflow, the store's transactions and the API reach the same answer from the same facts
// (docs/schedules.md "How schedules fire").
package scheduleplan

import (
	"time"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
)

// The timing of schedules at rest.
const (
	// ArmLead is how long before its time the planner arms a schedule's next fire. Cron
	// ticks cluster on minute boundaries, and an every-minute burst's round — its runs
	// written, its thousand delayed starts sent to Temporal — would land on the tick before
	// at a lead of one minute, competing with that tick's releases and starts; at 90 s it
	// lands mid-minute, between bursts.
	ArmLead = 90 * time.Second
	// ArmSpan is how far beyond ArmLead a planner round arms a schedule's fires: a schedule
	// firing every second costs one round per ArmSpan, not one per fire.
	ArmSpan = time.Minute
	// WakeLead is how long before its fire a schedule whose fire its workflow must decide at
	// the tick (an overlap policy with a run in flight to come, skip_if_successful, a
	// reschedule) is woken.
	// Mid-minute, as ArmLead, for the same reason.
	WakeLead = 90 * time.Second
	// RestAfter: a workflow with nothing in flight rests when the planner arms its next
	// fire, or when that fire is further ahead than this.
	RestAfter = 3 * time.Minute
	// MaxFires is the most fires one round arms for one schedule (a schedule far behind,
	// after an outage, is armed a slice at a time).
	MaxFires = 1000
)

// Plan actions.
const (
	Arm  = "arm"
	Wake = "wake"
	// Complete: a one-time schedule with no tick left is completed once its runs have ended
	// (completion.go).
	Complete = "complete"
)

// Schedule is what the decisions read of a schedule.
type Schedule struct {
	Name             string
	Spec             *schedulespec.Compiled
	Action           domain.Action
	Overlap          domain.Overlap
	SkipIfSuccessful bool
	Paused           bool
	// Watermark is the newest tick dealt with (or the creation, or the resume).
	Watermark time.Time
	// Rescheduled is a pending reschedule: the next fire, replacing the spec's ticks before it.
	Rescheduled *time.Time
	// Backfilling: backfill ranges wait to be fired.
	Backfilling bool
	// InFlight: a run of the schedule is in flight, or a tick waits under its overlap policy.
	InFlight bool
	// Calendars are the calendars the spec excludes, as they stand (the planner reads them
	// when it arms: Arm marks the ticks they exclude).
	Calendars schedulespec.Calendars
	// MaxConcurrent is the schedule's concurrency cap (0: none; see Room).
	MaxConcurrent int
	// Running counts the schedule's runs in flight — RUNNING, armed ones among them, whose
	// targets start at their ticks — and Waiting the ticks waiting to start before the one
	// decided (BUFFERED). Only the cap reads them.
	Running, Waiting int
}

// Room is the concurrency cap's rule, the one every door applies: how many more runs of the
// schedule may start now, and whether it has a cap at all (max_concurrent, under overlap
// allow_all, for an action that starts a workflow: workflow or http). A run in flight holds
// its place from the moment it is committed — armed ahead or started — until its outcome is
// recorded, and a tick waiting starts before any later one, so the room is max_concurrent
// less both. The planner arms only while there is room (PlannerArms, Arm), and the
// schedule's workflow starts a tick only while there is room, buffering or skipping it
// otherwise.
func (s Schedule) Room() (room int, capped bool) {
	if s.MaxConcurrent <= 0 || s.Overlap != domain.OverlapAllowAll || !s.Action.StartsWorkflow() {
		return 0, false
	}
	return max(s.MaxConcurrent-s.Running-s.Waiting, 0), true
}

// Plan is when the planner looks at a schedule at rest next, and what it does then.
type Plan struct {
	At     *time.Time // nil: nothing until a command
	Action string
}

// Fire is one fire the planner arms: its tick, when it fires (the tick with its jitter), and
// the schedule's tick after it (nil: none).
type Fire struct {
	Tick, FireAt time.Time
	ReleaseNext  *time.Time
	// ExcludedBy names the calendar that excludes the tick ("" when none does): the fire is
	// armed as the SKIPPED tick it is (schedulespec.ExclusionReason).
	ExcludedBy string
}

// Next is the schedule's next tick after the watermark (or its pending reschedule) and when
// it fires; ok is false when there is none (the spec ended, or paused).
func (s Schedule) Next() (tick, fireAt time.Time, ok bool) {
	if s.Paused {
		return time.Time{}, time.Time{}, false
	}
	if s.Rescheduled != nil {
		return *s.Rescheduled, *s.Rescheduled, true
	}
	tick = s.Spec.Next(s.Watermark)
	if tick.IsZero() {
		return time.Time{}, time.Time{}, false
	}
	return tick, tick.Add(s.Spec.JitterFor(s.Name, tick)), true
}

// PlannerArms reports whether the planner arms the schedule's next fire itself: nothing
// about it is to be decided at its tick. An event action's fire never is, unless
// skip_if_successful (which reads the runs up to the tick) or a reschedule or backfill
// waits. A workflow (or http) action's fire, armed with a start delay, is when its overlap
// decision cannot change before the tick: under allow_all always, but with a concurrency cap
// only while it has room (an armed fire holds its place from its arming, so what is armed
// never goes past the cap); under another policy when nothing of the schedule runs or waits
// as it is armed. A schedule excluding calendars has only its event fires armed: an edit of
// a calendar judges armed event fires anew in its transaction (store.EditCalendar), but
// could not take back a target Temporal starts by itself, so the fires of other actions are
// decided by the schedule's workflow at their tick.
func (s Schedule) PlannerArms() bool {
	if s.Paused || s.Rescheduled != nil || s.Backfilling || s.SkipIfSuccessful {
		return false
	}
	if s.Spec.Excluding() && s.Action.Kind != domain.ActionEvent {
		return false
	}
	switch s.Action.Kind {
	case domain.ActionEvent:
		return true
	case domain.ActionWorkflow, domain.ActionHTTP:
		if room, capped := s.Room(); capped {
			return room > 0
		}
		return s.Overlap == domain.OverlapAllowAll || !s.InFlight
	}
	return false
}

// AtRest is the plan of the schedule at rest: armed ahead by the planner, or its workflow
// woken before its fire; nothing when it has no next fire.
func (s Schedule) AtRest() Plan {
	_, fireAt, ok := s.Next()
	switch {
	case !ok && s.ticked():
		return plan(s.oneTimeFireAt(), Complete)
	case !ok:
		return Plan{}
	case s.PlannerArms():
		return plan(fireAt.Add(-ArmLead), Arm)
	}
	return plan(fireAt.Add(-WakeLead), Wake)
}

// MayRest reports whether the schedule's workflow, with nothing in flight at now, hands the
// schedule to the planner, given its next fire (nil: none): paused, no further fire, an
// event action's fire (the planner arms those), or one further ahead than RestAfter. A
// workflow action whose next fire is near keeps its workflow, which decides that fire at
// its tick. (It reads no spec: the workflow, replayed, must reach the same answer from what
// its history holds.)
func (s Schedule) MayRest(now time.Time, nextFire *time.Time) bool {
	switch {
	case s.Backfilling || s.InFlight:
		return false
	case s.Paused || nextFire == nil:
		return true
	case s.Action.Kind == domain.ActionEvent && s.PlannerArms():
		return true
	}
	return nextFire.Sub(now) > RestAfter
}

// Arm is what a planner round at now arms for the schedule at rest: its fires due up to
// ArmLead+ArmSpan ahead (at most MaxFires; a fire whose time has passed, after an outage, is
// armed all the same and judged at its release), the watermark they move it to, and its
// plan after them. A workflow action's fire is armed alone but under allow_all: once it is
// armed a run is in flight, and the next round decides the next fire from what then runs.
// Under allow_all with a concurrency cap, at most the cap's room is armed: the round after
// arms more if runs have ended by then, and wakes the workflow (which buffers or skips the
// tick at its time) if none has. No fire is returned when the schedule is not one the
// planner arms now (its plan then wakes its workflow before its fire, or is nothing).
func (s Schedule) Arm(now time.Time) (fires []Fire, watermark time.Time, next Plan) {
	watermark = s.Watermark
	if !s.PlannerArms() {
		return nil, watermark, s.AtRest()
	}
	// The fires that start something: one alone but under allow_all, and no more than a
	// cap's room. (A tick a calendar excludes starts nothing: the next one is decided alike.)
	limit := MaxFires
	if s.Action.StartsWorkflow() && s.Overlap != domain.OverlapAllowAll {
		limit = 1
	}
	if room, capped := s.Room(); capped {
		limit = min(limit, room)
	}
	starts := 0
	until := now.Add(ArmLead + ArmSpan)
	for tick := s.Spec.Next(s.Watermark); !tick.IsZero() && len(fires) < MaxFires; {
		fireAt := tick.Add(s.Spec.JitterFor(s.Name, tick))
		if fireAt.After(until) {
			break
		}
		f := Fire{Tick: tick, FireAt: fireAt, ExcludedBy: s.Calendars.ExcludedBy(tick)}
		after := s.Spec.Next(tick)
		if !after.IsZero() {
			f.ReleaseNext = &after
		}
		fires = append(fires, f)
		watermark = tick
		tick = after
		if f.ExcludedBy == "" {
			if starts++; starts >= limit {
				break
			}
		}
	}
	rest := s
	rest.Watermark = watermark
	rest.InFlight, rest.Running, rest.Waiting = false, 0, 0 // the next round looks at what runs then
	next = rest.AtRest()
	if next.At != nil && next.At.Before(now) {
		next = plan(now, next.Action) // more due than one round arms: the next round goes on at once
	}
	return fires, watermark, next
}

func plan(at time.Time, action string) Plan { return Plan{At: &at, Action: action} }
