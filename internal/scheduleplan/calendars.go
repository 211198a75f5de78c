package scheduleplan

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
)

// ArmedTick is a fire the planner armed and no release has made true yet, as a calendar
// edit judges it again: an event fire (SUCCEEDED at its release), or a tick armed SKIPPED
// because a calendar excluded it.
type ArmedTick struct {
	Tick   time.Time
	Status domain.RunStatus
	Reason string
}

// Rejudge is what an armed tick is under its schedule's calendars as they now stand:
// skipReason is the reason it is SKIPPED with ("" when it fires), and changed whether that
// differs from what it was armed as. An edit of a calendar makes every armed tick what the
// calendars now say before any is released (store.EditCalendar).
func Rejudge(t ArmedTick, cals schedulespec.Calendars) (skipReason string, changed bool) {
	if name := cals.ExcludedBy(t.Tick); name != "" {
		skipReason = schedulespec.ExclusionReason(name)
	}
	if t.Status == domain.RunSkipped {
		return skipReason, skipReason != t.Reason
	}
	return skipReason, skipReason != ""
}

// ArmedFire is an armed fire no release has made true yet, of a schedule that excludes an
// edited calendar, with what the edit needs to judge it again: its schedule's spec (which
// calendars it excludes) and action (the event it appends when it fires after all), as
// stored.
type ArmedFire struct {
	RunID     int64
	Schedule  string
	Spec      json.RawMessage
	Action    json.RawMessage
	Tick      time.Time
	VisibleAt time.Time
	Status    domain.RunStatus
	Reason    string
}

// FireVerdict is what a calendar edit makes of an armed fire whose outcome changes:
// SKIPPED with SkipReason, or (SkipReason "") the event fire it is, appending Event.
type FireVerdict struct {
	RunID      int64
	Schedule   string
	SkipReason string
	Event      domain.Event
}

// RejudgeArmed is a calendar edit's judgement of the armed fires of the schedules excluding
// the calendar (Rejudge, fire by fire), under calendars — every calendar those schedules
// exclude, as the edit leaves them: the fires whose outcome changes, each with the event it
// appends when it fires after all. The store applies it in the edit's transaction
// (store.EditCalendar), so every armed fire is what the calendars now say before any is
// released.
func RejudgeArmed(calendars []schedulespec.StoredCalendar, fires []ArmedFire) ([]FireVerdict, error) {
	all, err := schedulespec.CompileStored(calendars, func(c schedulespec.StoredCalendar) schedulespec.StoredCalendar { return c })
	if err != nil {
		return nil, err
	}
	var out []FireVerdict
	for _, f := range fires {
		var spec schedulespec.Spec
		var act domain.Action
		if err := json.Unmarshal(f.Spec, &spec); err != nil {
			return nil, fmt.Errorf("spec of schedule %q: %w", f.Schedule, err)
		}
		if err := json.Unmarshal(f.Action, &act); err != nil {
			return nil, fmt.Errorf("action of schedule %q: %w", f.Schedule, err)
		}
		picked, _ := schedulespec.Pick(all, spec.ExcludeCalendars)
		skip, changed := Rejudge(ArmedTick{Tick: f.Tick.UTC(), Status: f.Status, Reason: f.Reason}, picked)
		if !changed {
			continue
		}
		v := FireVerdict{RunID: f.RunID, Schedule: f.Schedule, SkipReason: skip}
		if skip == "" {
			v.Event = domain.FireEvent(f.Schedule, act, f.Tick, domain.TriggerScheduled, f.VisibleAt)
		}
		out = append(out, v)
	}
	return out, nil
}
