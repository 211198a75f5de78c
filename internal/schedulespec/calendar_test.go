package schedulespec_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/schedulespec"
)

func mustCalendar(t *testing.T, c schedulespec.Calendar) *schedulespec.CompiledCalendar {
	t.Helper()
	cc, err := schedulespec.NormalizeCalendar(c)
	require.NoError(t, err)
	return cc
}

func TestCalendarExcludesItsDatesInItsTimeZone(t *testing.T) {
	t.Parallel()
	c := mustCalendar(t, schedulespec.Calendar{Name: "holidays-fr", Timezone: "Europe/Paris", Dates: []string{"2026-12-25", "2026-12-25", "2026-01-01"}})
	require.Equal(t, []string{"2026-01-01", "2026-12-25"}, c.Dates, "sorted, without repeats")
	// Christmas in Paris runs from 2026-12-24T23:00Z to 2026-12-25T23:00Z.
	require.False(t, c.Excludes(time.Date(2026, 12, 24, 22, 59, 59, 0, time.UTC)))
	require.True(t, c.Excludes(time.Date(2026, 12, 24, 23, 0, 0, 0, time.UTC)))
	require.True(t, c.Excludes(time.Date(2026, 12, 25, 22, 59, 59, 0, time.UTC)))
	require.False(t, c.Excludes(time.Date(2026, 12, 25, 23, 0, 0, 0, time.UTC)))
}

func TestCalendarRangesTakeTimesAndWholeDays(t *testing.T) {
	t.Parallel()
	c := mustCalendar(t, schedulespec.Calendar{Name: "freeze", Timezone: "UTC", Ranges: []schedulespec.CalendarRange{
		{Start: "2026-12-20", End: "2026-12-21"},                               // two whole days
		{Start: "2027-01-05T09:00:00+01:00", End: "2027-01-05T10:00:00+01:00"}, // an hour, end excluded
	}})
	require.False(t, c.Excludes(time.Date(2026, 12, 19, 23, 59, 59, 0, time.UTC)))
	require.True(t, c.Excludes(time.Date(2026, 12, 20, 0, 0, 0, 0, time.UTC)))
	require.True(t, c.Excludes(time.Date(2026, 12, 21, 23, 59, 59, 0, time.UTC)), "an end date includes its day")
	require.False(t, c.Excludes(time.Date(2026, 12, 22, 0, 0, 0, 0, time.UTC)))
	require.True(t, c.Excludes(time.Date(2027, 1, 5, 8, 0, 0, 0, time.UTC)))
	require.False(t, c.Excludes(time.Date(2027, 1, 5, 9, 0, 0, 0, time.UTC)), "an end time is excluded from the range")
}

func TestBadCalendarNamesItsField(t *testing.T) {
	t.Parallel()
	for want, c := range map[string]schedulespec.Calendar{
		"name":            {Name: "no spaces"},
		"timezone":        {Name: "c", Timezone: "Nowhere/Land"},
		"dates[1]":        {Name: "c", Dates: []string{"2026-12-25", "2026-13-01"}},
		"ranges[0].start": {Name: "c", Ranges: []schedulespec.CalendarRange{{Start: "soon", End: "2026-12-25"}}},
		"ranges[0].end":   {Name: "c", Ranges: []schedulespec.CalendarRange{{Start: "2026-12-25", End: "2026-12-24T00:00:00Z"}}},
	} {
		_, err := schedulespec.NormalizeCalendar(c)
		var fe *schedulespec.FieldError
		require.True(t, errors.As(err, &fe), "%s: %v", want, err)
		require.Equal(t, want, fe.Field)
	}
}

func TestNextFiresLeaveExcludedTicksOut(t *testing.T) {
	t.Parallel()
	c := mustCompile(t, schedulespec.Spec{Cron: "0 9 * * *", Timezone: "Europe/Paris", ExcludeCalendars: []string{"holidays-fr"}})
	cal := mustCalendar(t, schedulespec.Calendar{Name: "holidays-fr", Timezone: "Europe/Paris", Dates: []string{"2026-12-25", "2026-12-26"}})
	got := c.NextNOutside(time.Date(2026, 12, 24, 12, 0, 0, 0, time.UTC), 2, schedulespec.Calendars{cal})
	require.Equal(t, []time.Time{time.Date(2026, 12, 27, 8, 0, 0, 0, time.UTC), time.Date(2026, 12, 28, 8, 0, 0, 0, time.UTC)}, got)
	require.Equal(t, "holidays-fr", schedulespec.Calendars{cal}.ExcludedBy(time.Date(2026, 12, 25, 8, 0, 0, 0, time.UTC)))
	require.Equal(t, "excluded by calendar holidays-fr", schedulespec.ExclusionReason("holidays-fr"))
}

func TestSpecExcludeCalendarsAreChecked(t *testing.T) {
	t.Parallel()
	for _, names := range [][]string{{"a", "a"}, {"bad name"}, {"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"}} {
		_, err := schedulespec.Normalize(schedulespec.Spec{Cron: "@hourly", ExcludeCalendars: names}, time.Now())
		var fe *schedulespec.FieldError
		require.True(t, errors.As(err, &fe), "%v", names)
		require.Equal(t, "spec.exclude_calendars", fe.Field)
	}
	c := mustCompile(t, schedulespec.Spec{Cron: "@hourly", ExcludeCalendars: []string{}})
	require.Nil(t, c.Spec.ExcludeCalendars, "an empty list is none")
	require.False(t, c.Excluding())
}
