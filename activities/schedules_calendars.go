package activities

import (
	"context"
	"time"

	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/store"
)

// Calendars a schedule excludes (docs/schedules.md "Calendars"): every path that decides a
// tick judges it against them — the planner arming fires (decidePlans), the schedule's
// workflow firing at the tick (ExcludedBy before it decides, and RecordTick again in the
// transaction that records it), the ticks it records MISSED. Which times a calendar
// excludes is schedulespec's rule.

// CompileCalendars compiles calendars rows, by name (schedulespec.CompileStored).
func CompileCalendars(rows []store.Calendar) (map[string]*schedulespec.CompiledCalendar, error) {
	return schedulespec.CompileStored(rows, func(r store.Calendar) schedulespec.StoredCalendar {
		return schedulespec.StoredCalendar{Name: r.Name, Timezone: r.Timezone, Dates: r.Dates, Ranges: r.Ranges}
	})
}

// judgeAgainst compiles the calendars named (from rows) into the reason a tick is
// excluded with ("" when none excludes it). A calendar named that is not among the rows
// (deleted in a race with the schedule's creation: a delete refuses a calendar in use)
// excludes nothing.
func judgeAgainst(rows []store.Calendar, names []string) (func(time.Time) string, error) {
	all, err := CompileCalendars(rows)
	if err != nil {
		return nil, err
	}
	cals, _ := schedulespec.Pick(all, names)
	return func(tick time.Time) string {
		if name := cals.ExcludedBy(tick); name != "" {
			return schedulespec.ExclusionReason(name)
		}
		return ""
	}, nil
}

// exclusion is the store's judge of a record's ticks against the calendars named (nil when
// none).
func exclusion(names []string) *store.Exclusion {
	if len(names) == 0 {
		return nil
	}
	return &store.Exclusion{Calendars: names, Judge: func(rows []store.Calendar) (func(time.Time) string, error) {
		return judgeAgainst(rows, names)
	}}
}

// ExclusionCheck asks whether one of the calendars a schedule excludes excludes a tick.
type ExclusionCheck struct {
	Calendars []string
	Tick      time.Time
}

// ExcludedBy answers the reason a tick is excluded by one of the calendars named ("" when
// none excludes it): the schedule workflow asks before it decides a tick under its overlap
// policy, so that an excluded tick neither waits nor stops the run in flight; the record of
// the tick judges it again, in its own transaction.
func (a *ScheduleActivities) ExcludedBy(ctx context.Context, c ExclusionCheck) (string, error) {
	rows, err := a.Store.CalendarsNamed(ctx, c.Calendars)
	if err != nil {
		return "", err
	}
	judge, err := judgeAgainst(rows, c.Calendars)
	if err != nil {
		return "", err
	}
	return judge(c.Tick), nil
}

// compileEach compiles each calendars row that compiles (one that does not is left out: the
// schedules excluding it are not armed, see decidePlans).
func compileEach(rows []store.Calendar) map[string]*schedulespec.CompiledCalendar {
	out := make(map[string]*schedulespec.CompiledCalendar, len(rows))
	for _, r := range rows {
		if c, err := CompileCalendars([]store.Calendar{r}); err == nil {
			out[r.Name] = c[r.Name]
		}
	}
	return out
}
