package schedulespec

import (
	"fmt"
	"regexp"
	"slices"
	"time"
)

// Calendars (docs/schedules.md "Calendars"): a named set of days and time ranges, in a time
// zone, that schedules exclude by naming it in spec.exclude_calendars. A tick a calendar
// excludes is not silently absent: it is recorded SKIPPED with the reason naming the
// calendar (ExclusionReason). The rule of which times a calendar excludes lives here, once:
// the planner arming fires, a calendar edit judging the fires armed, the schedule workflow
// firing at the tick and the API's previews all ask Excludes.

// Calendar is a calendar as stored and sent over the API.
type Calendar struct {
	Name     string `json:"name"`
	Timezone string `json:"timezone,omitempty"`
	// Dates are whole days ("2026-12-25") in the calendar's time zone.
	Dates []string `json:"dates"`
	// Ranges are spans of time: start ≤ t < end.
	Ranges []CalendarRange `json:"ranges"`
}

// CalendarRange is a span a calendar excludes. Start and End are RFC 3339 times or dates
// ("2026-12-24"); a date is that day's midnight in the calendar's time zone, and an End date
// includes its whole day.
type CalendarRange struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

// Limits of one calendar and of one spec's exclusions.
const (
	MaxCalendarDates  = 5000
	MaxCalendarRanges = 1000
	MaxExcluded       = 10
)

// CalendarNameRE is what a calendar's name may be (as a schedule's).
var CalendarNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

const dateLayout = "2006-01-02"

// CompiledCalendar is a validated calendar ready to judge ticks.
type CompiledCalendar struct {
	Calendar
	location *time.Location
	dates    map[string]bool
	spans    []span
}

type span struct{ start, end time.Time }

// NormalizeCalendar validates c (name, time zone — UTC by default —, dates, ranges, each
// error a *FieldError naming the field: "dates[2]", "ranges[0].end") and returns it compiled,
// its dates sorted and without repeats.
func NormalizeCalendar(c Calendar) (*CompiledCalendar, error) {
	if !CalendarNameRE.MatchString(c.Name) {
		return nil, fieldErr("name", "must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	if c.Timezone == "" {
		c.Timezone = "UTC"
	}
	loc, err := time.LoadLocation(c.Timezone)
	if err != nil {
		return nil, fieldErr("timezone", "unknown time zone %q", c.Timezone)
	}
	if len(c.Dates) > MaxCalendarDates {
		return nil, fieldErr("dates", "at most %d dates, got %d", MaxCalendarDates, len(c.Dates))
	}
	if len(c.Ranges) > MaxCalendarRanges {
		return nil, fieldErr("ranges", "at most %d ranges, got %d", MaxCalendarRanges, len(c.Ranges))
	}
	out := &CompiledCalendar{location: loc, dates: make(map[string]bool, len(c.Dates))}
	for i, d := range c.Dates {
		day, err := time.ParseInLocation(dateLayout, d, loc)
		if err != nil || day.Format(dateLayout) != d {
			return nil, fieldErr(fmt.Sprintf("dates[%d]", i), "want a date such as \"2026-12-25\", got %q", d)
		}
		out.dates[d] = true
	}
	dates := make([]string, 0, len(out.dates))
	for d := range out.dates {
		dates = append(dates, d)
	}
	slices.Sort(dates)
	for i, r := range c.Ranges {
		field := fmt.Sprintf("ranges[%d]", i)
		start, err := rangeBound(r.Start, loc, false)
		if err != nil {
			return nil, fieldErr(field+".start", "%s", err)
		}
		end, err := rangeBound(r.End, loc, true)
		if err != nil {
			return nil, fieldErr(field+".end", "%s", err)
		}
		if !end.After(start) {
			return nil, fieldErr(field+".end", "must be after start")
		}
		out.spans = append(out.spans, span{start: start, end: end})
	}
	if c.Ranges == nil {
		c.Ranges = []CalendarRange{}
	}
	c.Dates = dates
	out.Calendar = c
	return out, nil
}

// rangeBound reads a range's start or end: an RFC 3339 time, or a date at midnight in loc
// (for an end, the midnight after it: the day is included).
func rangeBound(v string, loc *time.Location, end bool) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		if t.Before(minTime) || t.After(maxTime) {
			return time.Time{}, fmt.Errorf("must lie between %d and %d", minTime.Year(), maxTime.Year())
		}
		return t.UTC(), nil
	}
	day, err := time.ParseInLocation(dateLayout, v, loc)
	if err != nil || day.Format(dateLayout) != v {
		return time.Time{}, fmt.Errorf("want an RFC 3339 time or a date such as \"2026-12-24\", got %q", v)
	}
	if end {
		day = day.AddDate(0, 0, 1)
	}
	return day.UTC(), nil
}

// Excludes reports whether the calendar excludes the time t: t's day in the calendar's time
// zone is one of its dates, or t lies in one of its ranges.
func (c *CompiledCalendar) Excludes(t time.Time) bool {
	if c.dates[t.In(c.location).Format(dateLayout)] {
		return true
	}
	for _, s := range c.spans {
		if !t.Before(s.start) && t.Before(s.end) {
			return true
		}
	}
	return false
}

// Calendars are the calendars a schedule excludes.
type Calendars []*CompiledCalendar

// ExcludedBy names the first of the calendars that excludes t ("" when none does).
func (cs Calendars) ExcludedBy(t time.Time) string {
	for _, c := range cs {
		if c.Excludes(t) {
			return c.Name
		}
	}
	return ""
}

// Pick returns the calendars named, in the order named, from those given; missing names
// the ones not among them.
func Pick(all map[string]*CompiledCalendar, names []string) (picked Calendars, missing []string) {
	for _, n := range names {
		if c, ok := all[n]; ok {
			picked = append(picked, c)
		} else {
			missing = append(missing, n)
		}
	}
	return picked, missing
}

// ExclusionReason is the reason a tick a calendar excludes is recorded SKIPPED with.
func ExclusionReason(calendar string) string {
	return "excluded by calendar " + calendar
}

// maxLookahead bounds how many ticks NextNOutside reads past excluded ones (a calendar may
// exclude months of a dense spec's ticks).
const maxLookahead = 100000

// NextNOutside lists up to n ticks after t that none of cals excludes: what a schedule will
// fire, as its preview and its page show it.
func (c *Compiled) NextNOutside(t time.Time, n int, cals Calendars) []time.Time {
	out := make([]time.Time, 0, n)
	for read := 0; len(out) < n && read < maxLookahead; read++ {
		t = c.Next(t)
		if t.IsZero() {
			break
		}
		if cals.ExcludedBy(t) == "" {
			out = append(out, t)
		}
	}
	return out
}

// normalizeExcludeCalendars checks the names a spec excludes: calendar names, no repeats,
// at most MaxExcluded (whether each exists is the API's to check, against the store).
func normalizeExcludeCalendars(s *Spec) error {
	if len(s.ExcludeCalendars) == 0 {
		s.ExcludeCalendars = nil
		return nil
	}
	if len(s.ExcludeCalendars) > MaxExcluded {
		return fieldErr("spec.exclude_calendars", "at most %d calendars, got %d", MaxExcluded, len(s.ExcludeCalendars))
	}
	seen := map[string]bool{}
	for _, n := range s.ExcludeCalendars {
		if !CalendarNameRE.MatchString(n) {
			return fieldErr("spec.exclude_calendars", "%q is not a calendar name", n)
		}
		if seen[n] {
			return fieldErr("spec.exclude_calendars", "%q is named twice", n)
		}
		seen[n] = true
	}
	return nil
}

// Excluding reports whether the spec names calendars to exclude.
func (c *Compiled) Excluding() bool { return len(c.Spec.ExcludeCalendars) > 0 }
