package domain

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/tickgate/tickgate/internal/schedulespec"
)

// Progressive delivery (docs/progressive.md): a rollout's strategy — waves, the bake
// between them, health checks, an abort threshold, a rate and windows — and the rate and
// windows a device task may carry. All of it is optional; without it nothing changes.

// Strategy is a rollout's `strategy` as sent, stored (rollouts.strategy) and shown.
type Strategy struct {
	Waves   []Wave        `json:"waves,omitempty"`
	Bake    string        `json:"bake,omitempty"`
	Health  *HealthCheck  `json:"health,omitempty"`
	Abort   *RolloutAbort `json:"abort,omitempty"`
	Rate    *Rate         `json:"rate,omitempty"`
	Windows []Window      `json:"windows,omitempty"`
}

// Wave is one stage of a rollout: the tasks on Databases, or Percent of the databases the
// earlier waves left (rounded up). The last wave takes every database left.
type Wave struct {
	Databases []string `json:"databases,omitempty"`
	Percent   *int     `json:"percent,omitempty"`
}

// HealthCheck runs after a wave's bake: SQL on each database of the wave (through the sql
// executor's DSN configuration, in a read-only transaction) and/or a GET of HTTP. Timeout
// bounds each check (default 30s).
type HealthCheck struct {
	SQL     string `json:"sql,omitempty"`
	HTTP    string `json:"http,omitempty"`
	Timeout string `json:"timeout,omitempty"`
}

// DefaultHealthTimeout bounds a health check without a timeout.
const DefaultHealthTimeout = 30 * time.Second

// TimeoutOrDefault is the check's timeout.
func (h HealthCheck) TimeoutOrDefault() time.Duration {
	if d, err := time.ParseDuration(h.Timeout); err == nil && d > 0 {
		return d
	}
	return DefaultHealthTimeout
}

// RolloutAbort stops a rollout by itself: once at least MinFinished of its tasks finished
// (DONE or FAILED) since it last ran unpaused, and more than FailedPercent of them FAILED,
// the rollout is paused (Action "pause", the default) or canceled ("cancel").
type RolloutAbort struct {
	MinFinished   int     `json:"min_finished"`
	FailedPercent float64 `json:"failed_percent"`
	Action        string  `json:"action,omitempty"`
}

// Abort actions.
const (
	AbortPause  = "pause"
	AbortCancel = "cancel"
)

// Rate bounds how many tasks (rollouts) or executions (device tasks) start per minute, as
// AWS IoT Jobs defines it: PerMinute caps it; Exponential starts at BasePerMinute and
// multiplies it by Factor each time another AfterSucceeded succeeded. The rule is the SQL
// function rollout_rate (store/schema.sql), which the rate gates of both engines call.
type Rate struct {
	PerMinute   *int             `json:"per_minute,omitempty"`
	Exponential *ExponentialRate `json:"exponential,omitempty"`
}

// ExponentialRate is a rate that grows with successes.
type ExponentialRate struct {
	BasePerMinute  int     `json:"base_per_minute"`
	Factor         float64 `json:"factor"`
	AfterSucceeded int     `json:"after_succeeded"`
}

// Window is a recurring span in which work may start: it opens at each fire of Cron (read
// in Timezone, with the schedules' DST rule) and lasts Duration of elapsed time.
type Window struct {
	Cron     string `json:"cron"`
	Duration string `json:"duration"`
	Timezone string `json:"timezone,omitempty"`
}

// Limits of a strategy.
const (
	MaxWaves      = 100
	MaxWindows    = 20
	MaxBake       = 30 * 24 * time.Hour
	MaxWindowSpan = 31 * 24 * time.Hour
	MaxHealthWait = 10 * time.Minute
)

// fieldErrorf is a *FieldError naming field.
func fieldErrorf(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Validate checks a strategy and normalizes it (abort action, window time zones); field
// names in errors are relative to the strategy ("waves[1].percent"). databases lists the
// rollout's target databases in the order their first task comes.
func (s *Strategy) Validate(databases []string) error {
	if len(s.Waves) > MaxWaves {
		return fieldErrorf("waves", "at most %d waves, got %d", MaxWaves, len(s.Waves))
	}
	if _, err := s.AssignWaves(databases); err != nil {
		return err
	}
	if s.Bake != "" {
		d, err := time.ParseDuration(s.Bake)
		if err != nil || d < 0 || d > MaxBake {
			return fieldErrorf("bake", "want a duration from 0 to %s such as \"10m\", got %q", MaxBake, s.Bake)
		}
		if len(s.Waves) < 2 {
			return fieldErrorf("bake", "a bake runs between two waves: give at least two waves")
		}
	}
	if s.Health != nil {
		if err := s.Health.validate(); err != nil {
			return err
		}
		if len(s.Waves) < 2 {
			return fieldErrorf("health", "health checks run between two waves: give at least two waves")
		}
	}
	if s.Abort != nil {
		if err := s.Abort.validate("abort"); err != nil {
			return err
		}
	}
	if s.Rate != nil {
		if err := s.Rate.Validate("rate"); err != nil {
			return err
		}
	}
	return ValidateWindows(s.Windows, "windows")
}

func (h *HealthCheck) validate() error {
	h.SQL, h.HTTP = strings.TrimSpace(h.SQL), strings.TrimSpace(h.HTTP)
	if h.SQL == "" && h.HTTP == "" {
		return fieldErrorf("health", "give sql, http or both")
	}
	if len(h.SQL) > 10000 {
		return fieldErrorf("health.sql", "at most 10000 characters")
	}
	if h.SQL != "" {
		if err := CheckOneStatement(h.SQL); err != nil {
			return fieldErrorf("health.sql", "%v", err)
		}
	}
	if h.HTTP != "" {
		u, err := url.Parse(h.HTTP)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fieldErrorf("health.http", "want an absolute http(s) URL, got %q", h.HTTP)
		}
	}
	if h.Timeout != "" {
		d, err := time.ParseDuration(h.Timeout)
		if err != nil || d < time.Second || d > MaxHealthWait {
			return fieldErrorf("health.timeout", "want a duration from 1s to %s such as \"30s\", got %q", MaxHealthWait, h.Timeout)
		}
	}
	return nil
}

func (a *RolloutAbort) validate(field string) error {
	if a.MinFinished < 1 {
		return fieldErrorf(field+".min_finished", "must be at least 1, got %d", a.MinFinished)
	}
	if a.FailedPercent < 0 || a.FailedPercent >= 100 || math.IsNaN(a.FailedPercent) {
		return fieldErrorf(field+".failed_percent", "must be from 0 to below 100, got %g", a.FailedPercent)
	}
	switch a.Action {
	case "":
		a.Action = AbortPause
	case AbortPause, AbortCancel:
	default:
		return fieldErrorf(field+".action", "must be pause or cancel, got %q", a.Action)
	}
	return nil
}

// Validate checks a rate; field is its name in errors ("rate", "strategy.rate").
func (r *Rate) Validate(field string) error {
	if r.PerMinute == nil && r.Exponential == nil {
		return fieldErrorf(field, "give per_minute, exponential or both")
	}
	if r.PerMinute != nil && (*r.PerMinute < 1 || *r.PerMinute > 100000) {
		return fieldErrorf(field+".per_minute", "must be from 1 to 100000, got %d", *r.PerMinute)
	}
	if e := r.Exponential; e != nil {
		if e.BasePerMinute < 1 || e.BasePerMinute > 100000 {
			return fieldErrorf(field+".exponential.base_per_minute", "must be from 1 to 100000, got %d", e.BasePerMinute)
		}
		if r.PerMinute != nil && e.BasePerMinute > *r.PerMinute {
			return fieldErrorf(field+".exponential.base_per_minute", "must not exceed per_minute (%d), got %d", *r.PerMinute, e.BasePerMinute)
		}
		if !(e.Factor > 1 && e.Factor <= 5) {
			return fieldErrorf(field+".exponential.factor", "must be above 1 and at most 5, got %g", e.Factor)
		}
		if e.AfterSucceeded < 1 {
			return fieldErrorf(field+".exponential.after_succeeded", "must be at least 1, got %d", e.AfterSucceeded)
		}
	}
	return nil
}

// ValidateWindows checks windows (field is their name in errors) and fills each one's time
// zone (UTC by default).
func ValidateWindows(ws []Window, field string) error {
	if len(ws) > MaxWindows {
		return fieldErrorf(field, "at most %d windows, got %d", MaxWindows, len(ws))
	}
	for i := range ws {
		if _, err := ws[i].compile(fmt.Sprintf("%s[%d]", field, i)); err != nil {
			return err
		}
	}
	return nil
}

// compiledWindow is a window ready to compute its openings.
type compiledWindow struct {
	spec *schedulespec.Compiled
	span time.Duration
}

func (w *Window) compile(field string) (compiledWindow, error) {
	if strings.TrimSpace(w.Cron) == "" {
		return compiledWindow{}, fieldErrorf(field+".cron", "is required (when the window opens, e.g. \"0 1 * * 1-5\")")
	}
	d, err := time.ParseDuration(w.Duration)
	if err != nil || d < time.Minute || d > MaxWindowSpan {
		return compiledWindow{}, fieldErrorf(field+".duration", "want a duration from 1m to %s such as \"4h\", got %q", MaxWindowSpan, w.Duration)
	}
	c, err := schedulespec.Normalize(schedulespec.Spec{Cron: w.Cron, Timezone: w.Timezone}, time.Time{})
	if err != nil {
		var fe *schedulespec.FieldError
		if errors.As(err, &fe) {
			return compiledWindow{}, fieldErrorf(field+"."+strings.TrimPrefix(fe.Field, "spec."), "%s", fe.Detail)
		}
		return compiledWindow{}, fieldErrorf(field, "%v", err)
	}
	w.Cron, w.Timezone = c.Spec.Cron, c.Spec.Timezone
	return compiledWindow{spec: c, span: d}, nil
}

// WindowSpan is one stretch of time inside the windows: [Start, End).
type WindowSpan struct {
	Start, End time.Time
}

// Contains reports whether t lies in the span.
func (s WindowSpan) Contains(t time.Time) bool { return !t.Before(s.Start) && t.Before(s.End) }

// WindowAt is the span of the windows that holds t, or else the next one to open: its
// Start is the opening (the earliest fire whose window holds t, or the next fire) and its
// End the moment no window is open any more (overlapping and touching windows merged).
// ok is false when no window ever opens again.
func WindowAt(ws []Window, t time.Time) (WindowSpan, bool, error) {
	cs := make([]compiledWindow, 0, len(ws))
	for i := range ws {
		w := ws[i]
		c, err := w.compile(fmt.Sprintf("windows[%d]", i))
		if err != nil {
			return WindowSpan{}, false, err
		}
		cs = append(cs, c)
	}
	var span WindowSpan
	for _, c := range cs {
		// The earliest fire after t − span: its window is open at t if it fired by t.
		f := c.spec.Next(t.Add(-c.span))
		if f.IsZero() {
			continue
		}
		if f.After(t) {
			f = c.spec.Next(t) // not open at t: its next opening
			if f.IsZero() {
				continue
			}
		}
		// The earliest opening wins: one that fired by t (open at t) comes before any next
		// opening after t.
		if span.Start.IsZero() || f.Before(span.Start) || (f.Equal(span.Start) && f.Add(c.span).After(span.End)) {
			span = WindowSpan{Start: f, End: f.Add(c.span)}
		}
	}
	if span.Start.IsZero() {
		return WindowSpan{}, false, nil
	}
	// Merge every window opening before the span ends (bounded: a window opening every
	// minute for a month is 44,640 steps; give up merging well before).
	for i := 0; i < 10000; i++ {
		grown := false
		for _, c := range cs {
			f := c.spec.Next(span.End.Add(-c.span)) // the first of its windows still open at End
			if !f.IsZero() && !f.After(span.End) && f.Add(c.span).After(span.End) {
				span.End, grown = f.Add(c.span), true
			}
		}
		if !grown {
			break
		}
	}
	return span, true, nil
}

// WaveOfDatabase is the wave (1-based) of each database, by AssignWaves.
type WaveOfDatabase map[string]int

// AssignWaves places each database in its wave: a wave of databases takes those; a wave
// of percent takes that share of the databases left (rounded up, at least one), in the
// order their first task comes; the last wave takes every database left. Without waves
// every database is in wave 1. Field names in errors are relative to the strategy.
func (s *Strategy) AssignWaves(databases []string) (WaveOfDatabase, error) {
	out := make(WaveOfDatabase, len(databases))
	if len(s.Waves) == 0 {
		for _, db := range databases {
			out[db] = 1
		}
		return out, nil
	}
	known := make(map[string]bool, len(databases))
	for _, db := range databases {
		known[db] = true
	}
	left := len(databases)
	for i, w := range s.Waves {
		field := fmt.Sprintf("waves[%d]", i)
		if (len(w.Databases) > 0) == (w.Percent != nil) {
			return nil, fieldErrorf(field, "give either databases or percent")
		}
		before := left
		for j, db := range w.Databases {
			switch {
			case !known[db]:
				return nil, fieldErrorf(fmt.Sprintf("%s.databases[%d]", field, j), "no task targets database %q", db)
			case out[db] != 0:
				return nil, fieldErrorf(fmt.Sprintf("%s.databases[%d]", field, j), "database %q is already in wave %d", db, out[db])
			}
			out[db] = i + 1
			left--
		}
		if w.Percent != nil {
			p := *w.Percent
			if p < 1 || p > 100 {
				return nil, fieldErrorf(field+".percent", "must be from 1 to 100, got %d", p)
			}
			n := (left*p + 99) / 100
			for _, db := range databases {
				if n == 0 {
					break
				}
				if out[db] == 0 {
					out[db] = i + 1
					n--
					left--
				}
			}
		}
		if i == len(s.Waves)-1 {
			for _, db := range databases {
				if out[db] == 0 {
					out[db] = i + 1
					left--
				}
			}
		}
		if left == before {
			return nil, fieldErrorf(field, "takes no database: the waves before it took them all")
		}
	}
	return out, nil
}

// Wave statuses (rollout_waves.status; its comment in store/schema.sql says what each means).
const (
	WaveWaiting  = "WAITING"
	WaveRunning  = "RUNNING"
	WaveBaking   = "BAKING"
	WaveChecking = "CHECKING"
	WavePassed   = "PASSED"
	WaveFailed   = "FAILED"
)

// Why a wave failed (rollout_waves.failure).
const (
	WaveFailureTasks  = "tasks"  // its tasks failed
	WaveFailureHealth = "health" // its health checks failed
)
