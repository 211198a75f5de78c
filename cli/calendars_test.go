package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/cli"
	"github.com/tickgate/tickgate/internal/testing/teststack"
)

// TestCLICalendarsAndOneTimeSchedules drives `tickgate calendar` and the schedule flags of
// calendars and one-time schedules against a real API, with the exit code of each refusal.
func TestCLICalendarsAndOneTimeSchedules(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	admin := st.AdminToken

	r := run(t, st, admin, "calendar", "create", "holidays", "--timezone", "Europe/Paris", "--dates", "2026-12-25,2027-01-01",
		"--range", "2026-12-31T18:00:00+01:00/2027-01-01")
	require.Equal(t, 0, r.code, r.errOut)
	require.Regexp(t, `timezone\s+Europe/Paris`, r.out)
	r = run(t, st, admin, "calendar", "create", "bad", "--range", "2026-12-31")
	require.Equal(t, cli.ExitUsage, r.code, r.errOut)
	r = run(t, st, admin, "calendar", "create", "bad", "--dates", "2026-13-01")
	require.Equal(t, cli.ExitInvalid, r.code, r.errOut)
	require.Contains(t, r.errOut, "dates[0]")
	r = run(t, st, admin, "calendar", "list")
	require.Equal(t, 0, r.code, r.errOut)
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	require.Len(t, lines, 2, r.out)
	require.True(t, strings.HasPrefix(lines[0], "NAME"))

	r = run(t, st, admin, "schedule", "create", "daily", "--cron", "0 9 * * *", "--timezone", "Europe/Paris", "--exclude-calendars", "holidays",
		"--topic", "reports", "--type", "daily")
	require.Equal(t, 0, r.code, r.errOut)
	r = run(t, st, admin, "schedule", "create", "other", "--cron", "0 9 * * *", "--exclude-calendars", "nope", "--topic", "t", "--type", "x")
	require.Equal(t, cli.ExitInvalid, r.code, r.errOut)
	require.Contains(t, r.errOut, "spec.exclude_calendars")
	r = run(t, st, admin, "calendar", "get", "holidays", "-o", "json")
	require.Equal(t, 0, r.code, r.errOut)
	var cal map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.out), &cal))
	require.Equal(t, []any{"daily"}, cal["used_by"])
	r = run(t, st, admin, "calendar", "delete", "holidays")
	require.Equal(t, cli.ExitConflict, r.code, r.errOut)
	require.Contains(t, r.errOut, "daily")
	r = run(t, st, admin, "calendar", "update", "holidays", "--timezone", "Europe/Paris", "--dates", "2026-12-24,2026-12-25", "--version", "1", "-o", "json")
	require.Equal(t, 0, r.code, r.errOut)
	require.NoError(t, json.Unmarshal([]byte(r.out), &cal))
	require.EqualValues(t, 2, cal["version"])
	require.Equal(t, []any{"2026-12-24", "2026-12-25"}, cal["dates"])
	r = run(t, st, admin, "calendar", "update", "holidays", "--dates", "2026-12-24", "--version", "1")
	require.Equal(t, cli.ExitConflict, r.code, "a stale version: %s", r.errOut)

	at := time.Now().UTC().Add(time.Hour).Format(time.RFC3339)
	r = run(t, st, admin, "schedule", "create", "remind", "--at", at, "--after-completion", "delete", "--topic", "reminders", "--type", "due")
	require.Equal(t, 0, r.code, r.errOut)
	require.Regexp(t, `state\s+active`, r.out)
	require.Regexp(t, `after_completion\s+delete`, r.out)
	r = run(t, st, admin, "schedule", "create", "late", "--at", time.Now().UTC().Add(-time.Hour).Format(time.RFC3339), "--topic", "t", "--type", "x")
	require.Equal(t, cli.ExitInvalid, r.code, r.errOut)
	require.Contains(t, r.errOut, "spec.at")
	r = run(t, st, admin, "schedule", "list", "--state", "completed")
	require.Equal(t, 0, r.code, r.errOut)
	require.Len(t, strings.Split(strings.TrimSpace(r.out), "\n"), 1, "none completed: the header only")
	r = run(t, st, admin, "schedule", "list", "--state", "active", "-o", "json")
	require.Equal(t, 0, r.code, r.errOut)
	require.Contains(t, r.out, `"remind"`)
}
