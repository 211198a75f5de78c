package schedulespec_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/schedulespec"
)

func mustCompile(t *testing.T, s schedulespec.Spec) *schedulespec.Compiled {
	t.Helper()
	c, err := schedulespec.Normalize(s, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	return c
}

func TestIntervalTicksAreAnchoredAtStartAt(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 7, 0, time.UTC)
	c := mustCompile(t, schedulespec.Spec{Interval: &schedulespec.Interval{Every: 10, Unit: "SECONDS"}, StartAt: &start})
	// However late the previous fire was, the next tick is start + n·10s.
	require.Equal(t, start.Add(10*time.Second), c.Next(start.Add(3*time.Second)))
	require.Equal(t, start.Add(30*time.Second), c.Next(start.Add(29999*time.Millisecond)))
	require.Equal(t, start.Add(40*time.Second), c.Next(start.Add(30*time.Second)))
	require.Equal(t, start, c.Next(start.Add(-time.Hour)))
}

func TestIntervalAcceptsGoDurationString(t *testing.T) {
	t.Parallel()
	var s schedulespec.Spec
	require.NoError(t, json.Unmarshal([]byte(`{"interval":"90s"}`), &s))
	c := mustCompile(t, s)
	require.Equal(t, 90*time.Second, c.Spec.Interval.Duration())
}

func TestCronInTimeZone(t *testing.T) {
	t.Parallel()
	c := mustCompile(t, schedulespec.Spec{Cron: "0 9 * * *", Timezone: "Europe/Berlin"})
	got := c.Next(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	require.Equal(t, time.Date(2026, 6, 2, 7, 0, 0, 0, time.UTC), got) // 09:00 CEST
}

func TestCronWithSecondsAndDescriptors(t *testing.T) {
	t.Parallel()
	c := mustCompile(t, schedulespec.Spec{Cron: "*/5 * * * * *"})
	require.Equal(t, time.Date(2026, 1, 1, 0, 0, 5, 0, time.UTC), c.Next(time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)))
	c = mustCompile(t, schedulespec.Spec{Cron: "@hourly"})
	require.Equal(t, time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC), c.Next(time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)))
}

func TestSpringForwardSkippedTimeFiresOnceAtTransition(t *testing.T) {
	t.Parallel()
	ny, _ := time.LoadLocation("America/New_York")
	c := mustCompile(t, schedulespec.Spec{Cron: "30 2 * * *", Timezone: "America/New_York"})
	// 2026-03-08 02:30 does not exist in New York: fire once at 03:00 EDT (07:00 UTC).
	first := c.Next(time.Date(2026, 3, 7, 12, 0, 0, 0, ny))
	require.Equal(t, time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC), first)
	require.Equal(t, time.Date(2026, 3, 9, 2, 30, 0, 0, ny).UTC(), c.Next(first))
}

func TestSpringForwardManySkippedTicksCollapseIntoOne(t *testing.T) {
	t.Parallel()
	c := mustCompile(t, schedulespec.Spec{Cron: "*/15 * * * *", Timezone: "Europe/Berlin"})
	// Berlin springs forward 2026-03-29 02:00 CET -> 03:00 CEST (01:00 UTC).
	ticks := c.NextN(time.Date(2026, 3, 29, 0, 40, 0, 0, time.UTC), 3)
	require.Equal(t, []time.Time{
		time.Date(2026, 3, 29, 0, 45, 0, 0, time.UTC), // 01:45 CET
		time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC),  // 02:00..02:45 skipped, and 03:00 CEST: one fire
		time.Date(2026, 3, 29, 1, 15, 0, 0, time.UTC), // 03:15 CEST
	}, ticks)
}

func TestFallBackRepeatedTimeFiresOnce(t *testing.T) {
	t.Parallel()
	c := mustCompile(t, schedulespec.Spec{Cron: "30 1 * * *", Timezone: "America/New_York"})
	// 2026-11-01 01:30 happens twice in New York (EDT then EST): fire at the first only.
	first := c.Next(time.Date(2026, 10, 31, 12, 0, 0, 0, time.UTC))
	require.Equal(t, time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC), first) // 01:30 EDT
	second := c.Next(first)
	require.Equal(t, time.Date(2026, 11, 2, 6, 30, 0, 0, time.UTC), second) // next day 01:30 EST
	// Starting inside the second occurrence does not fire the repeated time again.
	require.Equal(t, second, c.Next(time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC)))
}

func TestEndAtStopsTicks(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	end := start.Add(25 * time.Second)
	c := mustCompile(t, schedulespec.Spec{Interval: &schedulespec.Interval{Every: 10, Unit: "SECONDS"}, StartAt: &start, EndAt: &end})
	require.Len(t, c.NextN(start, 10), 2)
}

func TestJitterIsDeterministicAndBounded(t *testing.T) {
	t.Parallel()
	c := mustCompile(t, schedulespec.Spec{Cron: "* * * * *", Jitter: schedulespec.Duration(30 * time.Second)})
	tick := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	j := c.JitterFor("a", tick)
	require.Equal(t, j, c.JitterFor("a", tick))
	require.GreaterOrEqual(t, j, time.Duration(0))
	require.Less(t, j, 30*time.Second)
}

func TestBadSpecsNameTheirField(t *testing.T) {
	t.Parallel()
	past := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		spec  schedulespec.Spec
		field string
	}{
		"unparseable cron":  {schedulespec.Spec{Cron: "61 * * * *"}, "spec.cron"},
		"unknown zone":      {schedulespec.Spec{Cron: "* * * * *", Timezone: "Mars/Olympus"}, "spec.timezone"},
		"zero interval":     {schedulespec.Spec{Interval: &schedulespec.Interval{Every: 0, Unit: "SECONDS"}}, "spec.interval.every"},
		"negative interval": {schedulespec.Spec{Interval: &schedulespec.Interval{Every: -5, Unit: "MINUTES"}}, "spec.interval.every"},
		"bad unit":          {schedulespec.Spec{Interval: &schedulespec.Interval{Every: 5, Unit: "WEEKS"}}, "spec.interval.unit"},
		"neither":           {schedulespec.Spec{}, "spec"},
		"both":              {schedulespec.Spec{Cron: "* * * * *", Interval: &schedulespec.Interval{Every: 1, Unit: "SECONDS"}}, "spec"},
		"negative jitter":   {schedulespec.Spec{Cron: "* * * * *", Jitter: -1}, "spec.jitter"},
		// Found by FuzzSpec: each was accepted, and the stored spec then failed validation when
		// the workflow loaded it (two zones, end before now) or Prev missed its ticks (@every).
		"two zone prefixes":      {schedulespec.Spec{Cron: "TZ=UTC CRON_TZ=Asia/Tokyo 0 9 * * *"}, "spec.cron"},
		"@every":                 {schedulespec.Spec{Cron: "@every 90s"}, "spec.cron"},
		"interval ends past now": {schedulespec.Spec{Interval: &schedulespec.Interval{Every: 70, Unit: "SECONDS"}, EndAt: &past}, "spec.end_at"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := schedulespec.Normalize(tc.spec, time.Now())
			var fe *schedulespec.FieldError
			require.True(t, errors.As(err, &fe), "error %v", err)
			require.Equal(t, tc.field, fe.Field)
		})
	}
	// Decoding errors too, including a field misplaced into the interval object (found by
	// FuzzCreateScheduleRequest: it was silently dropped).
	for _, raw := range []string{`{"interval":"-5s"}`, `{"interval":{"every":5,"unit":"MINUTES","start_at":"2026-01-01T00:00:00Z"}}`} {
		var s schedulespec.Spec
		err := json.Unmarshal([]byte(raw), &s)
		var fe *schedulespec.FieldError
		require.True(t, errors.As(err, &fe), "%s: %v", raw, err)
		require.Equal(t, "spec.interval", fe.Field)
	}
}

func TestPrevFindsTheTickBeforeForDenseAndSparseSpecs(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	everySecond := mustCompile(t, schedulespec.Spec{Cron: "* * * * * *"})
	require.Equal(t, at.Add(-time.Second), everySecond.Prev(at))
	yearly := mustCompile(t, schedulespec.Spec{Cron: "0 0 1 1 *"})
	require.Equal(t, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), yearly.Prev(at))
	start := time.Date(2026, 6, 1, 11, 0, 7, 0, time.UTC)
	interval := mustCompile(t, schedulespec.Spec{Interval: &schedulespec.Interval{Every: 10, Unit: "MINUTES"}, StartAt: &start})
	require.Equal(t, start.Add(50*time.Minute), interval.Prev(at))
	require.True(t, interval.Prev(start).IsZero(), "nothing before the first tick")
}

// weekdaysOf lists the weekdays of the next n fires of a daily-at-most cron from a Monday.
func weekdaysOf(t *testing.T, cron string, n int) []time.Weekday {
	t.Helper()
	c := mustCompile(t, schedulespec.Spec{Cron: cron})
	monday := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	require.Equal(t, time.Monday, monday.Weekday())
	var out []time.Weekday
	for _, tick := range c.NextN(monday, n) {
		out = append(out, tick.Weekday())
	}
	return out
}

// crontab(5), Vixie cron and Temporal read day-of-week 7 as Sunday, and a range of days
// may wrap around the end of the week (FRI-MON); see translateDow.
func TestCronDayOfWeekSevenIsSundayAndRangesWrap(t *testing.T) {
	t.Parallel()
	sun, mon, tue, wed, thu, fri, sat := time.Sunday, time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday, time.Saturday
	cases := map[string][]time.Weekday{
		"0 9 * * 0":           {sun, sun},
		"0 9 * * 7":           {sun, sun},
		"0 0 9 * * 7":         {sun, sun}, // with a seconds field
		"0 9 * * 5-7":         {fri, sat, sun, fri},
		"0 9 * * 1,7":         {mon, sun, mon},
		"0 9 * * 1-5,7":       {mon, tue, wed, thu, fri, sun, mon},
		"0 9 * * 0-7":         {mon, tue, wed, thu, fri, sat, sun, mon},
		"0 9 * * 7/2":         {sun, sun}, // N/step runs to the end of the week, and 7 is its end
		"0 9 * * FRI-MON":     {mon, fri, sat, sun, mon},
		"0 9 * * 5-1":         {mon, fri, sat, sun, mon},
		"0 9 * * sat-sun":     {sat, sun, sat},
		"0 9 * * SAT-7":       {sat, sun, sat},
		"0 9 * * 7-TUE":       {mon, tue, sun, mon},
		"0 9 * * FRI-MON/2":   {fri, sun, fri},
		"0 9 * * WED,FRI-MON": {mon, wed, fri, sat, sun, mon},
	}
	for cron, want := range cases {
		t.Run(cron, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, want, weekdaysOf(t, cron, len(want)))
			// The stored spec keeps what the user wrote.
			require.Equal(t, cron, mustCompile(t, schedulespec.Spec{Cron: cron}).Spec.Cron)
		})
	}
}

// 7 is Sunday in every respect, including how a restricted day-of-month and day-of-week
// combine (either matches): "13th or Sunday".
func TestCronDayOfWeekSevenCombinesWithDayOfMonthLikeZero(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	seven := mustCompile(t, schedulespec.Spec{Cron: "0 9 13 * 7", Timezone: "Europe/Berlin"}).NextN(from, 30)
	zero := mustCompile(t, schedulespec.Spec{Cron: "0 9 13 * 0", Timezone: "Europe/Berlin"}).NextN(from, 30)
	require.Equal(t, zero, seven)
	require.Contains(t, seven, time.Date(2026, 2, 13, 8, 0, 0, 0, time.UTC), "a Friday the 13th fires")
}

func TestCronBadDayOfWeekNamesTheField(t *testing.T) {
	t.Parallel()
	for _, cron := range []string{"0 9 * * 8", "0 9 * * 5-8", "0 9 * * MON-XYZ", "0 9 * * 1/0", "0 9 * * 5#3", "0 9 * * 1,,2", "0 9 * * -1"} {
		t.Run(cron, func(t *testing.T) {
			_, err := schedulespec.Normalize(schedulespec.Spec{Cron: cron}, time.Now())
			var fe *schedulespec.FieldError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, "spec.cron", fe.Field)
			require.Contains(t, fe.Detail, "day-of-week")
		})
	}
	// Wrapping is a day-of-week rule: an hour range across midnight is still refused.
	_, err := schedulespec.Normalize(schedulespec.Spec{Cron: "0 22-2 * * *"}, time.Now())
	var fe *schedulespec.FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "spec.cron", fe.Field)
}
