package schedulespec

import (
	"sort"
	"time"

	"github.com/robfig/cron/v3"
)

// nextCron finds the first fire instant strictly after `after` for a cron read in loc's
// wall clock, with tickgate's DST rule (the points where Temporal Schedules fire twice or
// never, temporal#8205):
//   - a wall time skipped by a spring-forward fires once, at the transition instant (the
//     next valid one); several skipped wall times collapse into that one fire;
//   - a wall time repeated by a fall-back fires once, at its first occurrence.
//
// It walks the cron over a zone-free wall clock (wall fields stored as UTC) and maps each
// wall time back to real instants.
func nextCron(s cron.Schedule, after time.Time, loc *time.Location) time.Time {
	wall := wallClock(after.In(loc))
	for i := 0; i < 10000; i++ {
		w := s.Next(wall)
		if w.IsZero() {
			return time.Time{}
		}
		// Only the first instant of a wall time counts: if it has passed, so has the tick,
		// even while the repeated hour replays that wall time.
		if inst := instantsOf(w, loc)[0]; inst.After(after) {
			return inst
		}
		wall = w
	}
	return time.Time{}
}

// wallClock keeps t's local date and time but drops its zone.
func wallClock(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// instantsOf lists the real instants whose wall time in loc is w, earliest first: one
// normally, two in a fall-back's repeated hour, and for a spring-forward gap the single
// transition instant that ends the gap.
func instantsOf(w time.Time, loc *time.Location) []time.Time {
	var out []time.Time
	for _, probe := range []time.Time{w.Add(-24 * time.Hour), w.Add(24 * time.Hour)} {
		_, offset := probe.In(loc).Zone()
		inst := w.Add(-time.Duration(offset) * time.Second)
		if wallClock(inst.In(loc)).Equal(w) && (len(out) == 0 || !out[0].Equal(inst)) {
			out = append(out, inst)
		}
	}
	if len(out) > 0 {
		sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
		return out
	}
	// In the gap: read w with the offset in force before it, which lands after the
	// transition; the start of that instant's zone period is the transition itself.
	_, before := w.Add(-24 * time.Hour).In(loc).Zone()
	start, _ := w.Add(-time.Duration(before) * time.Second).In(loc).ZoneBounds()
	return []time.Time{start}
}
