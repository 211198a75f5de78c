package schedulespec_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/schedulespec"
)

func TestOneTimeSpecHasOneTick(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.FixedZone("CET", 3600))
	c := mustCompile(t, schedulespec.Spec{At: &at})
	require.True(t, c.OneTime())
	utc := at.UTC()
	require.Equal(t, &utc, c.Spec.At, "stored in UTC")
	require.Equal(t, utc, c.Next(utc.Add(-time.Hour)))
	require.True(t, c.Next(utc).IsZero(), "no tick after its one")
	require.Equal(t, []time.Time{utc}, c.NextN(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 10))
	require.Equal(t, utc, c.Prev(utc.Add(time.Minute)))
	require.Equal(t, "once, at 2026-12-01T09:00:00Z", c.Describe())
	require.Equal(t, 1, c.CountTicks(utc.Add(-time.Hour), utc, 10))
	require.Contains(t, c.NoTickReason(utc.Add(time.Second), utc.Add(time.Hour)), "does not hold the one-time schedule's at")
}

func TestOneTimeSpecIsRoundedUpToTheMicrosecond(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 10, 0, 0, 1500, time.UTC) // 1.5 µs
	c := mustCompile(t, schedulespec.Spec{At: &at})
	require.Equal(t, time.Date(2026, 12, 1, 10, 0, 0, 2000, time.UTC), *c.Spec.At, "never before the time asked")
}

func TestOneTimeSpecRefusesWhatDoesNotGoWithIt(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		spec  schedulespec.Spec
		field string
	}{
		"with cron":     {schedulespec.Spec{At: &at, Cron: "@hourly"}, "spec.at"},
		"with interval": {schedulespec.Spec{At: &at, Interval: &schedulespec.Interval{Every: 1, Unit: "HOURS"}}, "spec.at"},
		"with start_at": {schedulespec.Spec{At: &at, StartAt: &at}, "spec.start_at"},
		"with end_at":   {schedulespec.Spec{At: &at, EndAt: &at}, "spec.end_at"},
		"out of range":  {schedulespec.Spec{At: ptr(time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC))}, "spec.at"},
		"bad time zone": {schedulespec.Spec{At: &at, Timezone: "Mars/Olympus"}, "spec.timezone"},
	} {
		_, err := schedulespec.Normalize(tc.spec, at)
		var fe *schedulespec.FieldError
		require.True(t, errors.As(err, &fe), "%s: %v", name, err)
		require.Equal(t, tc.field, fe.Field, name)
	}
}

func ptr[T any](v T) *T { return &v }
