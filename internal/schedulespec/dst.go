package schedulespec

import (
	"sort"
	"time"

	"github.com/robfig/cron/v3"
)

// The DST policy of a cron spec (spec.dst): what a wall time that a zone's clock change
// repeats or skips does. Temporal Schedules fire a repeated hour twice and a skipped one
// never (temporal#8205); tickgate's default is once and shift, and a schedule may ask for
// either of the other behaviours. This file is the one place the rule lives: the API's
// preview and describe, the planner and the schedule workflow all compute ticks through
// Compiled.Next.
const (
	// RepeatedOnce fires a wall time that a fall-back repeats at its first occurrence only.
	RepeatedOnce = "once"
	// RepeatedTwice fires it at both occurrences (two ticks, an hour apart in real time).
	RepeatedTwice = "twice"
	// SkippedShift fires a wall time that a spring-forward skips once, at the transition
	// instant (the next valid one); several skipped wall times collapse into that one fire.
	SkippedShift = "shift"
	// SkippedSkip does not fire a skipped wall time at all.
	SkippedSkip = "skip"
)

// DST is a cron spec's DST policy, `{"repeated": "once"|"twice", "skipped": "shift"|"skip"}`.
// Absent, it is once and shift; a field left out takes its default.
type DST struct {
	Repeated string `json:"repeated,omitempty"`
	Skipped  string `json:"skipped,omitempty"`
}

// defaultDST is the policy of a spec without one.
var defaultDST = DST{Repeated: RepeatedOnce, Skipped: SkippedShift}

// normalizeDST checks s.DST (a cron's only: an interval or a one-time at names instants,
// which no clock change repeats or skips) and fills the fields it leaves out.
func normalizeDST(s *Spec) error {
	if s.DST == nil {
		return nil
	}
	if s.Interval != nil || s.At != nil {
		return fieldErr("spec.dst", "applies to a cron only: an interval's and a one-time at's ticks are instants, which no clock change repeats or skips")
	}
	d := *s.DST
	if d.Repeated == "" {
		d.Repeated = defaultDST.Repeated
	}
	if d.Skipped == "" {
		d.Skipped = defaultDST.Skipped
	}
	if d.Repeated != RepeatedOnce && d.Repeated != RepeatedTwice {
		return fieldErr("spec.dst.repeated", "must be %q or %q, got %q", RepeatedOnce, RepeatedTwice, d.Repeated)
	}
	if d.Skipped != SkippedShift && d.Skipped != SkippedSkip {
		return fieldErr("spec.dst.skipped", "must be %q or %q, got %q", SkippedShift, SkippedSkip, d.Skipped)
	}
	s.DST = &d
	return nil
}

// DSTPolicy is the policy the spec's ticks follow: its own, or the default.
func (c *Compiled) DSTPolicy() DST {
	if c.Spec.DST == nil {
		return defaultDST
	}
	return *c.Spec.DST
}

// nextCron finds the first fire instant strictly after `after` for a cron read in loc's
// wall clock, under the DST policy p.
//
// It walks the cron over a zone-free wall clock (wall fields stored as UTC) and maps each
// wall time back to the real instants that show it: one normally, two in a fall-back's
// repeated hour, none in a spring-forward's gap. The first instant of a wall time never
// decreases as the wall time grows, so the walk stops at the first wall time whose first
// instant is after `after` and has given a fire; the earliest fire seen by then is the
// answer (under "twice", a repeated wall time's second instant may come before a later wall
// time's first).
func nextCron(s cron.Schedule, after time.Time, loc *time.Location, p DST) time.Time {
	wall := startWall(after, loc, p)
	var best time.Time
	for i := 0; i < 10000; i++ {
		w := s.Next(wall)
		if w.IsZero() {
			return best
		}
		insts, gap := instantsOf(w, loc)
		fires := insts
		switch {
		case gap && p.Skipped == SkippedSkip:
			fires = nil
		case !gap && p.Repeated == RepeatedOnce:
			// Only the first instant of a wall time counts: if it has passed, so has the
			// tick, even while the repeated hour replays that wall time.
			fires = insts[:1]
		}
		for _, inst := range fires {
			if inst.After(after) && (best.IsZero() || inst.Before(best)) {
				best = inst
			}
		}
		if !best.IsZero() && insts[0].After(after) {
			return best
		}
		wall = w
	}
	return best
}

// startWall is the wall time the walk starts after: after's own, or under "twice", when a
// fall-back comes between after and the end of its zone period, the earlier wall time the
// clock shows just after the fall-back (the repeated hour's second pass lies ahead of
// `after` in real time, behind it on the wall).
func startWall(after time.Time, loc *time.Location, p DST) time.Time {
	wall := wallClock(after.In(loc))
	if p.Repeated != RepeatedTwice {
		return wall
	}
	_, end := after.In(loc).ZoneBounds()
	if end.IsZero() {
		return wall
	}
	if back := wallClock(end.In(loc)); back.Before(wall) {
		// Just before the wall time the fall-back lands on, so that s.Next finds it.
		return back.Add(-time.Nanosecond)
	}
	return wall
}

// wallClock keeps t's local date and time but drops its zone.
func wallClock(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// instantsOf lists the real instants whose wall time in loc is w, earliest first: one
// normally, two in a fall-back's repeated hour. For a spring-forward gap (gap true) it is
// the single transition instant that ends the gap, where a shifted tick fires.
func instantsOf(w time.Time, loc *time.Location) (insts []time.Time, gap bool) {
	for _, probe := range []time.Time{w.Add(-24 * time.Hour), w.Add(24 * time.Hour)} {
		_, offset := probe.In(loc).Zone()
		inst := w.Add(-time.Duration(offset) * time.Second)
		if wallClock(inst.In(loc)).Equal(w) && (len(insts) == 0 || !insts[0].Equal(inst)) {
			insts = append(insts, inst)
		}
	}
	if len(insts) > 0 {
		sort.Slice(insts, func(i, j int) bool { return insts[i].Before(insts[j]) })
		return insts, false
	}
	// In the gap: read w with the offset in force before it, which lands after the
	// transition; the start of that instant's zone period is the transition itself.
	_, before := w.Add(-24 * time.Hour).In(loc).Zone()
	start, _ := w.Add(-time.Duration(before) * time.Second).In(loc).ZoneBounds()
	return []time.Time{start}, true
}
