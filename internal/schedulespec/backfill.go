package schedulespec

import (
	"fmt"
	"time"
)

// defaultAnchorSlack is how far an interval's stored start_at may lie from the schedule's
// creation and still be the anchor Normalize defaulted it to: the API stamps "now" a moment
// before the row's created_at is taken, on clocks that may differ by a little.
const defaultAnchorSlack = 2 * time.Second

// DefaultAnchor reports whether an interval's start_at is the default Normalize gave it
// (the creation time) rather than one the user set. The stored spec keeps the anchor but
// not where it came from, so it is recognised by its distance from createdAt.
func (c *Compiled) DefaultAnchor(createdAt time.Time) bool {
	if c.every <= 0 || c.Spec.StartAt == nil {
		return false
	}
	d := createdAt.Sub(*c.Spec.StartAt)
	return d > -defaultAnchorSlack && d < defaultAnchorSlack
}

// ForBackfill is the spec as a backfill from `from` reads it: bounded only by a start_at
// and end_at the user set. An interval anchored by default at its creation extends its grid
// backwards (tick n = start_at + n·every for negative n too), so a range before the
// creation holds the ticks the spec gives there. Anything else is returned as it is.
func (c *Compiled) ForBackfill(createdAt, from time.Time) *Compiled {
	if !c.DefaultAnchor(createdAt) || !from.Before(*c.Spec.StartAt) {
		return c
	}
	if from.Before(minTime) {
		from = minTime // keeps the distance to the anchor inside a time.Duration
	}
	start := *c.Spec.StartAt
	steps := (start.Sub(from) + c.every - 1) / c.every
	anchor := start.Add(-steps * c.every)
	cp := *c
	cp.Spec.StartAt = &anchor
	return &cp
}

// NoTickReason says why [from, to] holds no tick of the spec as ForBackfill reads it, for
// an answer to the user; "" when the range does hold one.
func (c *Compiled) NoTickReason(from, to time.Time) string {
	if first := c.Next(from.Add(-time.Nanosecond)); !first.IsZero() && !first.After(to) {
		return ""
	}
	rng := fmt.Sprintf("%s to %s", from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	switch {
	case c.Spec.At != nil:
		return fmt.Sprintf("the range %s does not hold the one-time schedule's at %s", rng, c.Spec.At.UTC().Format(time.RFC3339Nano))
	case c.Spec.EndAt != nil && !from.Before(*c.Spec.EndAt):
		return fmt.Sprintf("the range %s starts after the spec's end_at %s", rng, c.Spec.EndAt.UTC().Format(time.RFC3339))
	case c.Spec.StartAt != nil && to.Before(*c.Spec.StartAt):
		return fmt.Sprintf("the range %s ends before the spec's start_at %s", rng, c.Spec.StartAt.UTC().Format(time.RFC3339))
	case c.every > 0:
		return fmt.Sprintf("the range %s falls between two ticks of the %s interval", rng, c.every)
	}
	return fmt.Sprintf("no tick of cron %q (%s) falls in the range %s", c.Spec.Cron, c.Spec.Timezone, rng)
}

// CountTicks counts the ticks in [start, end], stopping at limit.
func (c *Compiled) CountTicks(start, end time.Time, limit int) int {
	count := 0
	for t := c.Next(start.Add(-time.Nanosecond)); !t.IsZero() && !t.After(end) && count < limit; t = c.Next(t) {
		count++
	}
	return count
}
