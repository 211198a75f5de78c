package schedulespec_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/schedulespec"
)

// utc is a UTC instant on 2026-mm-dd at hh:mm.
func utc(month time.Month, day, hour, minute int) time.Time {
	return time.Date(2026, month, day, hour, minute, 0, 0, time.UTC)
}

// dstCase is one transition of Europe/Berlin read by cron "15,45 1-3 * * *" (wall times
// 01:15, 01:45, 02:15, 02:45, 03:15, 03:45) under one DST policy: the ticks after from up
// to until, exactly. (The workflow's test, TestDSTPolicyDecidesTheFiresOfAClockChange,
// asserts the same instants.)
type dstCase struct {
	name        string
	dst         *schedulespec.DST
	from, until time.Time
	want        []time.Time
}

// Berlin springs forward on 2026-03-29 at 01:00 UTC (02:00 CET → 03:00 CEST: 02:15 and
// 02:45 do not exist) and falls back on 2026-10-25 at 01:00 UTC (03:00 CEST → 02:00 CET:
// 02:15 and 02:45 happen twice).
var (
	springFrom, springUntil = utc(3, 29, 0, 0), utc(3, 29, 2, 0)
	fallFrom, fallUntil     = utc(10, 24, 23, 0), utc(10, 25, 3, 0)
	// spring: 01:15 and 01:45 CET, 03:15 and 03:45 CEST, and under shift one fire at the
	// transition for the skipped 02:15 and 02:45.
	springShift = []time.Time{utc(3, 29, 0, 15), utc(3, 29, 0, 45), utc(3, 29, 1, 0), utc(3, 29, 1, 15), utc(3, 29, 1, 45)}
	springSkip  = []time.Time{utc(3, 29, 0, 15), utc(3, 29, 0, 45), utc(3, 29, 1, 15), utc(3, 29, 1, 45)}
	// fall: 01:15, 01:45, 02:15, 02:45 CEST, then (twice only) 02:15 and 02:45 CET, then
	// 03:15 and 03:45 CET.
	fallOnce  = []time.Time{utc(10, 24, 23, 15), utc(10, 24, 23, 45), utc(10, 25, 0, 15), utc(10, 25, 0, 45), utc(10, 25, 2, 15), utc(10, 25, 2, 45)}
	fallTwice = []time.Time{utc(10, 24, 23, 15), utc(10, 24, 23, 45), utc(10, 25, 0, 15), utc(10, 25, 0, 45),
		utc(10, 25, 1, 15), utc(10, 25, 1, 45), utc(10, 25, 2, 15), utc(10, 25, 2, 45)}
)

// dstCases is every policy (the four combinations, the default among them, given and
// absent) at both transitions.
func dstCases() []dstCase {
	var out []dstCase
	for _, p := range []struct {
		dst            *schedulespec.DST
		spring, fall   []time.Time
		repeated, skip string
	}{
		{nil, springShift, fallOnce, "once", "shift"},
		{&schedulespec.DST{Repeated: "once", Skipped: "shift"}, springShift, fallOnce, "once", "shift"},
		{&schedulespec.DST{Repeated: "once", Skipped: "skip"}, springSkip, fallOnce, "once", "skip"},
		{&schedulespec.DST{Repeated: "twice", Skipped: "shift"}, springShift, fallTwice, "twice", "shift"},
		{&schedulespec.DST{Repeated: "twice", Skipped: "skip"}, springSkip, fallTwice, "twice", "skip"},
	} {
		label := fmt.Sprintf("repeated=%s,skipped=%s", p.repeated, p.skip)
		if p.dst == nil {
			label = "no dst"
		}
		out = append(out,
			dstCase{"spring forward, " + label, p.dst, springFrom, springUntil, p.spring},
			dstCase{"fall back, " + label, p.dst, fallFrom, fallUntil, p.fall})
	}
	return out
}

func berlin(dst *schedulespec.DST) schedulespec.Spec {
	return schedulespec.Spec{Cron: "15,45 1-3 * * *", Timezone: "Europe/Berlin", DST: dst}
}

// ticksUntil lists c's ticks after from up to until.
func ticksUntil(c *schedulespec.Compiled, from, until time.Time) []time.Time {
	var out []time.Time
	for t := c.Next(from); !t.IsZero() && !t.After(until); t = c.Next(t) {
		out = append(out, t)
	}
	return out
}

// TestDSTPolicyAtBothTransitions: every combination of spec.dst, at a spring-forward and a
// fall-back of a real zone, gives exactly the fire instants it promises; Prev walks the
// same ticks backwards, and a walk started inside the repeated hour misses nothing.
func TestDSTPolicyAtBothTransitions(t *testing.T) {
	t.Parallel()
	for _, tc := range dstCases() {
		t.Run(tc.name, func(t *testing.T) {
			c := mustCompile(t, berlin(tc.dst))
			require.Equal(t, tc.want, ticksUntil(c, tc.from, tc.until))
			for i := 1; i < len(tc.want); i++ {
				require.Equal(t, tc.want[i-1], c.Prev(tc.want[i]), "Prev(%s)", tc.want[i])
				// From any instant between two ticks, the next is the later one.
				require.Equal(t, tc.want[i], c.Next(tc.want[i-1].Add(time.Minute)), "Next(%s + 1m)", tc.want[i-1])
			}
		})
	}
}

// TestDSTTwiceFiresEveryTickOfARepeatedHour: a dense cron under "twice" fires through the
// repeated hour as real time passes (every 15 minutes, none lost or doubled); under "once"
// the second pass is silent.
func TestDSTTwiceFiresEveryTickOfARepeatedHour(t *testing.T) {
	t.Parallel()
	spec := schedulespec.Spec{Cron: "*/15 * * * *", Timezone: "Europe/Berlin", DST: &schedulespec.DST{Repeated: "twice"}}
	twice := mustCompile(t, spec)
	got := ticksUntil(twice, utc(10, 25, 0, 0), utc(10, 25, 2, 0))
	var want []time.Time
	for at := utc(10, 25, 0, 15); !at.After(utc(10, 25, 2, 0)); at = at.Add(15 * time.Minute) {
		want = append(want, at)
	}
	require.Equal(t, want, got)
	require.Equal(t, "shift", twice.Spec.DST.Skipped, "a field left out takes its default")

	spec.DST = nil
	once := ticksUntil(mustCompile(t, spec), utc(10, 25, 0, 0), utc(10, 25, 2, 0))
	require.Equal(t, []time.Time{utc(10, 25, 0, 15), utc(10, 25, 0, 30), utc(10, 25, 0, 45),
		utc(10, 25, 2, 0)}, once, "02:00–02:45 CET repeat 02:00–02:45 CEST: silent under once")
}

// TestDSTSkipSkipsOnlyTheGap: under skip, the wall times a spring-forward skips do not fire
// and the rest of the day does; New York's gap too.
func TestDSTSkipSkipsOnlyTheGap(t *testing.T) {
	t.Parallel()
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	c := mustCompile(t, schedulespec.Spec{Cron: "30 2 * * *", Timezone: "America/New_York", DST: &schedulespec.DST{Skipped: "skip"}})
	// 2026-03-08 02:30 does not exist in New York: no fire that day.
	require.Equal(t, []time.Time{time.Date(2026, 3, 7, 2, 30, 0, 0, ny).UTC(), time.Date(2026, 3, 9, 2, 30, 0, 0, ny).UTC()},
		c.NextN(time.Date(2026, 3, 6, 12, 0, 0, 0, ny), 2))
	require.Equal(t, "once", c.Spec.DST.Repeated)
}

// TestDSTWithoutPolicyStoresNothing: a spec without dst keeps none when stored (schedules
// created before the field read and tick as they did), and one given is stored in full.
func TestDSTWithoutPolicyStoresNothing(t *testing.T) {
	t.Parallel()
	c := mustCompile(t, berlin(nil))
	b, err := json.Marshal(c.Spec)
	require.NoError(t, err)
	require.NotContains(t, string(b), "dst")
	require.Equal(t, schedulespec.DST{Repeated: "once", Skipped: "shift"}, c.DSTPolicy())

	c = mustCompile(t, berlin(&schedulespec.DST{Skipped: "skip"}))
	b, err = json.Marshal(c.Spec)
	require.NoError(t, err)
	require.Contains(t, string(b), `"dst":{"repeated":"once","skipped":"skip"}`)
}

// TestBadDSTNamesItsField: a value outside the policy's, or a policy on a spec no clock
// change touches, is refused naming the field.
func TestBadDSTNamesItsField(t *testing.T) {
	t.Parallel()
	at := utc(12, 1, 0, 0)
	for name, tc := range map[string]struct {
		spec  schedulespec.Spec
		field string
	}{
		"repeated thrice": {berlin(&schedulespec.DST{Repeated: "thrice"}), "spec.dst.repeated"},
		"repeated case":   {berlin(&schedulespec.DST{Repeated: "Twice"}), "spec.dst.repeated"},
		"skipped never":   {berlin(&schedulespec.DST{Skipped: "never"}), "spec.dst.skipped"},
		"on an interval":  {schedulespec.Spec{Interval: &schedulespec.Interval{Every: 1, Unit: "HOURS"}, DST: &schedulespec.DST{}}, "spec.dst"},
		"on a one-time":   {schedulespec.Spec{At: &at, DST: &schedulespec.DST{Repeated: "twice"}}, "spec.dst"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := schedulespec.Normalize(tc.spec, time.Now())
			var fe *schedulespec.FieldError
			require.True(t, errors.As(err, &fe), "error %v", err)
			require.Equal(t, tc.field, fe.Field)
		})
	}
}
