package schedulespec

import "time"

// One-time schedules (spec.at): a schedule with one tick, at `at`. Reminders and other
// "do this once, then" jobs are created by the million, so a one-time schedule is an
// ordinary schedule whose spec gives one tick: created, armed and fired on the same path as
// a cron schedule, and completed once that tick's run ends (docs/schedules.md "One-time
// schedules").

// OneTime reports whether the spec is a one-time schedule (spec.at).
func (c *Compiled) OneTime() bool { return c.Spec.At != nil }

// compileAt checks a one-time spec: at alone (no start_at, end_at: the one tick is the
// bound), in the range a tick may take, stored in UTC to the microsecond PostgreSQL keeps —
// rounded up, so that the stored tick is never before the time asked for.
func (c *Compiled) compileAt(s *Spec) error {
	switch {
	case s.StartAt != nil:
		return fieldErr("spec.start_at", "a one-time schedule fires once, at at: give no start_at")
	case s.EndAt != nil:
		return fieldErr("spec.end_at", "a one-time schedule fires once, at at: give no end_at")
	}
	at := s.At.UTC()
	if at.Before(minTime) || at.After(maxTime) {
		return fieldErr("spec.at", "must lie between %d and %d", minTime.Year(), maxTime.Year())
	}
	if r := at.Truncate(time.Microsecond); r.Before(at) {
		at = r.Add(time.Microsecond)
	}
	s.At = &at
	loc, err := loadZone(s)
	if err != nil {
		return err
	}
	c.location = loc
	return nil
}

// nextAt is a one-time spec's Next: its tick when t is before it, else none.
func (c *Compiled) nextAt(t time.Time) time.Time {
	if c.Spec.At.After(t) {
		return *c.Spec.At
	}
	return time.Time{}
}
