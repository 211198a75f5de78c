// Package schedulespec parses schedule specs — cron with a time zone, an anchored interval,
// or a one-time at — and computes their fire times: the DST rule, deterministic jitter,
// backfill ranges. It also holds calendars (named days and ranges a spec excludes) and
// which times they exclude. It is pure: the API validates with it, the planner, the
// schedule workflow and the store's calendar judgements compute ticks with it, and all
// agree.
package schedulespec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// FieldError names the offending field of a bad spec, for a problem+json answer.
type FieldError struct {
	Field  string
	Detail string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Detail }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Detail: fmt.Sprintf(format, args...)}
}

// Spec is a schedule's timing, as stored and as sent over the API: a cron, an interval or
// a one-time at, and the calendars whose days it skips.
type Spec struct {
	Cron     string    `json:"cron,omitempty"`
	Interval *Interval `json:"interval,omitempty"`
	// At makes a one-time schedule: its only tick (see one_time.go).
	At       *time.Time `json:"at,omitempty"`
	Timezone string     `json:"timezone,omitempty"`
	StartAt  *time.Time `json:"start_at,omitempty"`
	EndAt    *time.Time `json:"end_at,omitempty"`
	Jitter   Duration   `json:"jitter,omitempty"`
	// ExcludeCalendars names the calendars whose times the schedule skips: a tick they
	// exclude is recorded SKIPPED, naming the calendar (calendar.go).
	ExcludeCalendars []string `json:"exclude_calendars,omitempty"`
	// DST is a cron's policy for the wall times a clock change repeats or skips (dst.go);
	// absent, they fire once and shift.
	DST *DST `json:"dst,omitempty"`
}

// Interval is `{"every": 5, "unit": "MINUTES"}` or a Go duration string ("90s").
type Interval struct {
	Every int64  `json:"every"`
	Unit  string `json:"unit"`
}

var unitDurations = map[string]time.Duration{
	"SECONDS": time.Second, "MINUTES": time.Minute, "HOURS": time.Hour, "DAYS": 24 * time.Hour,
}

// Duration is the interval's length.
func (i Interval) Duration() time.Duration {
	return time.Duration(i.Every) * unitDurations[i.Unit]
}

// UnmarshalJSON accepts both the object form and a Go duration string.
func (i *Interval) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		d, err := time.ParseDuration(s)
		if err != nil {
			return fieldErr("spec.interval", "not a duration: %q", s)
		}
		if d <= 0 {
			return fieldErr("spec.interval", "must be positive, got %s", s)
		}
		if d%time.Second != 0 {
			return fieldErr("spec.interval", "must be a whole number of seconds, got %s", s)
		}
		*i = Interval{Every: int64(d / time.Second), Unit: "SECONDS"}
		return nil
	}
	type plain Interval
	var p plain
	// Strict like the API's own decoder: a misplaced field ({"every": 5, "unit": "MINUTES",
	// "start_at": …}) must not be silently dropped.
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return fieldErr("spec.interval", "want {\"every\": n, \"unit\": \"SECONDS|MINUTES|HOURS|DAYS\"} or a duration string")
	}
	*i = Interval(p)
	return nil
}

// Duration is a time.Duration that reads and writes Go duration strings in JSON.
type Duration time.Duration

// MarshalJSON writes "90s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "90s" (or a number of nanoseconds).
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if err2 := json.Unmarshal(b, &n); err2 != nil {
			return errors.New("want a duration string such as \"90s\"")
		}
		*d = Duration(n)
		return nil
	}
	if s == "" {
		*d = 0
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("not a duration: %q", s)
	}
	*d = Duration(v)
	return nil
}

// The range start_at and end_at may take: an interval's tick number is computed as a
// time.Duration from start_at, which spans about 292 years.
var (
	minTime = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Compiled is a validated spec ready to compute fire times.
type Compiled struct {
	Spec     Spec
	location *time.Location
	cron     cron.Schedule
	every    time.Duration
}

// Location is the zone cron fields are read in.
func (c *Compiled) Location() *time.Location { return c.location }

// Normalize validates s, fills defaults (UTC; interval anchored at now truncated to the
// second when start_at is absent) and returns the compiled form. Errors are *FieldError.
func Normalize(s Spec, now time.Time) (*Compiled, error) {
	hasCron, hasInterval, hasAt := strings.TrimSpace(s.Cron) != "", s.Interval != nil, s.At != nil
	switch {
	case hasAt && (hasCron || hasInterval):
		return nil, fieldErr("spec.at", "a one-time schedule gives at alone, without cron or interval")
	case hasCron && hasInterval:
		return nil, fieldErr("spec", "give either cron or interval, not both")
	case !hasCron && !hasInterval && !hasAt:
		return nil, fieldErr("spec", "give cron, interval or at")
	}
	if s.Jitter < 0 {
		return nil, fieldErr("spec.jitter", "must not be negative")
	}
	if err := normalizeBounds(&s); err != nil {
		return nil, err
	}
	if err := normalizeExcludeCalendars(&s); err != nil {
		return nil, err
	}
	if err := normalizeDST(&s); err != nil {
		return nil, err
	}
	c := &Compiled{}
	var err error
	switch {
	case hasAt:
		err = c.compileAt(&s)
	case hasCron:
		err = c.compileCron(&s)
	default:
		err = c.compileInterval(&s, now)
	}
	if err != nil {
		return nil, err
	}
	if time.Duration(s.Jitter) > 0 && c.every > 0 && time.Duration(s.Jitter) >= c.every {
		return nil, fieldErr("spec.jitter", "must be shorter than the interval")
	}
	c.Spec = s
	return c, nil
}

// normalizeBounds checks start_at and end_at (each in the range a tick can be computed in,
// end after start) and stores them in UTC.
func normalizeBounds(s *Spec) error {
	if s.StartAt != nil {
		t := s.StartAt.UTC()
		if t.Before(minTime) || t.After(maxTime) {
			return fieldErr("spec.start_at", "must lie between %d and %d", minTime.Year(), maxTime.Year())
		}
		s.StartAt = &t
	}
	if s.EndAt != nil {
		t := s.EndAt.UTC()
		if t.Before(minTime) || t.After(maxTime) {
			return fieldErr("spec.end_at", "must lie between %d and %d", minTime.Year(), maxTime.Year())
		}
		s.EndAt = &t
		if s.StartAt != nil && !t.After(*s.StartAt) {
			return fieldErr("spec.end_at", "must be after start_at")
		}
	}
	return nil
}

// compileCron reads s's cron (with its CRON_TZ= or TZ= prefix, if any, moved into the
// time zone) into c.
func (c *Compiled) compileCron(s *Spec) error {
	s.Cron = strings.TrimSpace(s.Cron)
	if err := takeCronZone(s); err != nil {
		return err
	}
	// "@every" counts from whenever it is asked, not from an anchor, so its ticks depend on
	// the query time and Prev cannot find them: an interval is anchored.
	if strings.HasPrefix(s.Cron, "@every") {
		return fieldErr("spec.cron", "@every is not supported: use interval (e.g. {\"interval\": \"90s\"}), anchored at start_at")
	}
	loc, err := loadZone(s)
	if err != nil {
		return err
	}
	readable, err := translateDow(s.Cron)
	if err != nil {
		return fieldErr("spec.cron", "cannot parse %q: %v", s.Cron, err)
	}
	sched, err := parser.Parse(readable)
	if err != nil {
		return fieldErr("spec.cron", "cannot parse %q: %v", s.Cron, err)
	}
	c.location, c.cron = loc, sched
	return nil
}

// takeCronZone moves a CRON_TZ= or TZ= prefix of s.Cron into s.Timezone, refusing one that
// disagrees with the timezone given, and a second prefix.
func takeCronZone(s *Spec) error {
	if !strings.HasPrefix(s.Cron, "CRON_TZ=") && !strings.HasPrefix(s.Cron, "TZ=") {
		return nil
	}
	prefix, rest, _ := strings.Cut(s.Cron, " ")
	_, zone, _ := strings.Cut(prefix, "=")
	if s.Timezone != "" && s.Timezone != zone {
		return fieldErr("spec.timezone", "%q disagrees with the cron's %s", s.Timezone, prefix)
	}
	s.Timezone, s.Cron = zone, strings.TrimSpace(rest)
	// The cron library would read a second prefix itself and shift the wall clock nextCron
	// walks; the stored spec would then fail this check on reload.
	if strings.HasPrefix(s.Cron, "CRON_TZ=") || strings.HasPrefix(s.Cron, "TZ=") {
		return fieldErr("spec.cron", "give at most one CRON_TZ= or TZ= prefix")
	}
	return nil
}

// loadZone loads s.Timezone, UTC when empty (and says so in s).
func loadZone(s *Spec) (*time.Location, error) {
	if s.Timezone == "" {
		s.Timezone = "UTC"
	}
	loc, err := time.LoadLocation(s.Timezone)
	if err != nil {
		return nil, fieldErr("spec.timezone", "unknown time zone %q", s.Timezone)
	}
	return loc, nil
}

// compileInterval reads s's interval into c, anchoring it at now (truncated to the second)
// when start_at is absent.
func (c *Compiled) compileInterval(s *Spec, now time.Time) error {
	if s.Interval.Every <= 0 {
		return fieldErr("spec.interval.every", "must be positive, got %d", s.Interval.Every)
	}
	unit, ok := unitDurations[strings.ToUpper(s.Interval.Unit)]
	if !ok {
		return fieldErr("spec.interval.unit", "must be SECONDS, MINUTES, HOURS or DAYS, got %q", s.Interval.Unit)
	}
	s.Interval.Unit = strings.ToUpper(s.Interval.Unit)
	if s.Interval.Every > int64((100*365*24*time.Hour)/unit) {
		return fieldErr("spec.interval.every", "longer than 100 years")
	}
	loc, err := loadZone(s)
	if err != nil {
		return err
	}
	c.location = loc
	c.every = s.Interval.Duration()
	if s.StartAt == nil {
		t := now.UTC().Truncate(time.Second)
		s.StartAt = &t
		// end_at was checked against start_at above only when one was given; against the
		// default it is checked here, or the stored spec (now with start_at) would fail
		// validation when its workflow loads it.
		if s.EndAt != nil && !s.EndAt.After(t) {
			return fieldErr("spec.end_at", "must be after start_at (for an interval, now when start_at is not given)")
		}
	}
	return nil
}

// Next is the first nominal tick strictly after t, or the zero time when the spec has
// ended (end_at) or never fires again.
func (c *Compiled) Next(t time.Time) time.Time {
	if c.Spec.At != nil {
		return c.nextAt(t)
	}
	var next time.Time
	if c.every > 0 {
		start := *c.Spec.StartAt
		if t.Before(start) {
			next = start
		} else {
			// tick n = start + n·every: computed from the anchor, never from the last fire.
			n := t.Sub(start)/c.every + 1
			if n > math.MaxInt64/c.every {
				return time.Time{} // beyond what a time.Duration from start_at can express
			}
			next = start.Add(n * c.every)
		}
	} else {
		from := t
		if c.Spec.StartAt != nil && from.Before(*c.Spec.StartAt) {
			from = c.Spec.StartAt.Add(-time.Nanosecond)
		}
		next = nextCron(c.cron, from, c.location, c.DSTPolicy())
	}
	// !next.After(t) only happens past the representable range (saturated arithmetic).
	if next.IsZero() || !next.After(t) || (c.Spec.EndAt != nil && next.After(*c.Spec.EndAt)) {
		return time.Time{}
	}
	return next.UTC()
}

// Prev is the last nominal tick strictly before t (the zero time when there is none). It
// walks forward from t − w for a window w that doubles until it holds a tick, so dense and
// sparse specs both cost a handful of steps.
func (c *Compiled) Prev(t time.Time) time.Time {
	for w := time.Minute; w <= 400*24*time.Hour; w *= 2 {
		var prev time.Time
		for n := c.Next(t.Add(-w)); !n.IsZero() && n.Before(t); n = c.Next(n) {
			prev = n
		}
		if !prev.IsZero() {
			return prev
		}
	}
	return time.Time{}
}

// NextN lists up to n nominal ticks after t.
func (c *Compiled) NextN(t time.Time, n int) []time.Time {
	out := make([]time.Time, 0, n)
	for len(out) < n {
		t = c.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

// JitterFor is the deterministic delay of one tick: a hash of (schedule, nominal time)
// scaled into [0, jitter), so replays and other workers compute the same delay.
func (c *Compiled) JitterFor(schedule string, tick time.Time) time.Duration {
	j := time.Duration(c.Spec.Jitter)
	if j <= 0 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(schedule))
	_, _ = h.Write([]byte(tick.UTC().Format(time.RFC3339Nano)))
	return time.Duration(h.Sum64() % uint64(j)) // #nosec G115 -- the remainder is below j, a positive Duration
}

// FieldName lets the API's decoder name the field of a spec error raised while decoding.
func (e *FieldError) FieldName() string { return e.Field }
