package schedulespec_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/schedulespec"
)

// TestDescribeCronInWords: the form's description of a cron expression, in crontab.guru's
// manner, for the dialect's fields, steps, ranges, lists, names, seconds and descriptors.
func TestDescribeCronInWords(t *testing.T) {
	for expr, want := range map[string]string{
		"0 * * * *":              "at minute 0 past every hour",
		"*/15 * * * *":           "at every 15th minute",
		"* * * * *":              "at every minute",
		"30 2 * * *":             "at 02:30",
		"0 9 * * 1-5":            "at 09:00 on every day-of-week from Monday through Friday",
		"0 0 1,15 * *":           "at 00:00 on day-of-month 1 and 15",
		"5 0 * 8 *":              "at 00:05 in August",
		"23 0-20/2 * * *":        "at minute 23 past every 2nd hour from 0 through 20",
		"5 4 * * sun":            "at 04:05 on Sunday",
		"0 0 * * 7":              "at 00:00 on Sunday",
		"0 0,12 1 */2 *":         "at minute 0 past hour 0 and 12 on day-of-month 1 in every 2nd month",
		"*/10 * * * * *":         "at every 10th second",
		"30 * * * * *":           "at second 30 past every minute",
		"30 0 9 * * MON,WED,FRI": "at 09:00:30 on Monday, Wednesday and Friday",
		"@hourly":                "at minute 0 past every hour",
		"0 0 13 * 5":             "at 00:00 on day-of-month 13 or on Friday",
		"1,2,5 * * * *":          "at minute 1, 2 and 5 past every hour",
		"0 */3 * * *":            "at minute 0 past every 3rd hour",
		"0 0 1 JAN *":            "at 00:00 on day-of-month 1 in January",
		"not a cron":             "not a cron",
	} {
		require.Equal(t, want, schedulespec.DescribeCron(expr), expr)
	}
}

// TestDescribeSpec: a whole spec in words — the cron with its zone, an anchored interval,
// bounds and jitter.
func TestDescribeSpec(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	end := now.Add(48 * time.Hour)
	c := mustCompile(t, schedulespec.Spec{Cron: "0 * * * *", Timezone: "Europe/Paris", EndAt: &end, Jitter: schedulespec.Duration(30 * time.Second)})
	require.Equal(t, "at minute 0 past every hour (Europe/Paris), until 2026-11-27T10:00:00Z, each fire delayed by up to 30s of jitter", c.Describe())
	dst := mustCompile(t, schedulespec.Spec{Cron: "30 2 * * *", Timezone: "Europe/Berlin", DST: &schedulespec.DST{Repeated: "twice", Skipped: "skip"}})
	require.Equal(t, "at 02:30 (Europe/Berlin), twice when a clock change repeats the time, not at all when a clock change skips the time", dst.Describe())
	dst = mustCompile(t, schedulespec.Spec{Cron: "30 2 * * *", Timezone: "Europe/Berlin", DST: &schedulespec.DST{}})
	require.Equal(t, "at 02:30 (Europe/Berlin)", dst.Describe(), "the default policy goes without saying")
	iv, err := schedulespec.Normalize(schedulespec.Spec{Interval: &schedulespec.Interval{Every: 5, Unit: "minutes"}}, now)
	require.NoError(t, err)
	require.Equal(t, "every 5 minutes from 2026-11-25T10:00:00Z", iv.Describe())
	one, err := schedulespec.Normalize(schedulespec.Spec{Interval: &schedulespec.Interval{Every: 1, Unit: "HOURS"}, StartAt: &now}, now)
	require.NoError(t, err)
	require.Equal(t, "every hour from 2026-11-25T10:00:00Z", one.Describe())
	for spec, want := range map[string]string{"1h": "every hour", "90s": "every 90 seconds", "48h": "every 2 days", "2m": "every 2 minutes", "1s": "every second"} {
		var iv schedulespec.Interval
		require.NoError(t, iv.UnmarshalJSON([]byte(`"`+spec+`"`)))
		c, err := schedulespec.Normalize(schedulespec.Spec{Interval: &iv, StartAt: &now}, now)
		require.NoError(t, err)
		require.Equal(t, want+" from 2026-11-25T10:00:00Z", c.Describe(), spec)
	}
}
