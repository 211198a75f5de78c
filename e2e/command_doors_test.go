package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/cli"
	"github.com/tickgate/tickgate/client"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/workflows"
)

// doorCase is one bad command, as each door takes it: the JSON payload (the HTTP body, the
// update's and the signal's argument) and the CLI's arguments after the schedule's name
// (nil: the CLI has no flag to say it).
type doorCase struct {
	name     string
	schedule string
	command  string
	payload  string
	cli      []string
	status   int
	field    string
	reason   string // a part of the refusal's words
}

// TestEveryDoorRefusesTheSameBadCommand sends every schedule command's bad inputs through
// all four doors — HTTP, the CLI, a Temporal update and a Temporal signal (with start, as
// another service sends them to a schedule at rest) — and expects the
// same refusal from each (field and words; the HTTP status of its kind) and no change to the
// schedule: its row, its runs and what waits. A refused signal, which nobody is answered
// for, is found in the schedule's refused_commands with the same words.
func TestEveryDoorRefusesTheSameBadCommand(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	ctx := context.Background()
	now := time.Now().UTC()
	rfc := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	hourAgo := now.Truncate(time.Hour).Add(-time.Hour)

	create := func(name string, spec map[string]any, paused bool) {
		st.CreateSchedule(t, map[string]any{
			"name": name, "spec": spec, "paused": paused,
			"action": map[string]any{"kind": "event", "topic": "doors", "type": "x"},
		})
	}
	// Schedules that fire nothing while the test runs, so any change is the commands'.
	create("yearly", map[string]any{"cron": "0 3 1 1 *"}, false)
	create("paused", map[string]any{"cron": "0 3 1 1 *"}, true)
	create("ended-minutely", map[string]any{"cron": "* * * * *", "start_at": rfc(now.Add(-40 * 24 * time.Hour)), "end_at": rfc(now.Add(-time.Hour))}, false)

	cases := []doorCase{
		{"pause note too long", "yearly", "pause", fmt.Sprintf(`{"note":%q}`, strings.Repeat("n", workflows.MaxPauseNote+1)),
			[]string{"--note", strings.Repeat("n", workflows.MaxPauseNote+1)}, 400, "note", "must be at most 1000 bytes"},
		{"pause unknown field", "yearly", "pause", `{"note":"x","colour":"red"}`, nil, 400, "colour", "is not a field of the pause command"},
		{"trigger unknown overlap", "yearly", "trigger", `{"overlap":"sometimes"}`, []string{"--overlap", "sometimes"}, 400, "overlap", `got "sometimes"`},
		{"trigger input for an event action", "yearly", "trigger", `{"input":{"region":"eu"}}`, []string{"--input", `{"region":"eu"}`}, 400, "input", "only a workflow action takes an input"},
		{"reschedule without a time", "yearly", "reschedule", `{}`, []string{}, 400, "next_run_at", "is required"},
		{"reschedule to the past", "yearly", "reschedule", `{"next_run_at":"2020-01-01T00:00:00Z"}`, []string{"--at", "2020-01-01T00:00:00Z"}, 400, "next_run_at", "is in the past"},
		{"reschedule a malformed time", "yearly", "reschedule", `{"next_run_at":"tomorrow"}`, []string{"--at", "tomorrow"}, 400, "next_run_at", "is not an RFC 3339 time"},
		{"reschedule while paused", "paused", "reschedule", fmt.Sprintf(`{"next_run_at":%q}`, rfc(now.Add(time.Hour))), []string{"--at", rfc(now.Add(time.Hour))}, 409, "paused", "resume it before rescheduling"},
		{"backfill without a start", "yearly", "backfill", fmt.Sprintf(`{"end":%q}`, rfc(hourAgo)), []string{"--end", rfc(hourAgo)}, 400, "start", "is required"},
		{"backfill ending before it starts", "yearly", "backfill", fmt.Sprintf(`{"start":%q,"end":%q}`, rfc(hourAgo), rfc(hourAgo.Add(-time.Hour))),
			[]string{"--start", rfc(hourAgo), "--end", rfc(hourAgo.Add(-time.Hour))}, 400, "end", "must not be before start"},
		{"backfill ending in the future", "ended-minutely", "backfill", fmt.Sprintf(`{"start":%q,"end":%q}`, rfc(now.Add(-2*time.Hour)), rfc(now.Add(5*time.Hour))),
			[]string{"--start", rfc(now.Add(-2 * time.Hour)), "--end", rfc(now.Add(5 * time.Hour))}, 400, "end", "is in the future"},
		{"backfill with an unknown overlap", "yearly", "backfill", fmt.Sprintf(`{"start":%q,"end":%q,"overlap":"never"}`, rfc(hourAgo.Add(-time.Hour)), rfc(hourAgo)),
			[]string{"--start", rfc(hourAgo.Add(-time.Hour)), "--end", rfc(hourAgo), "--overlap", "never"}, 400, "overlap", `got "never"`},
		{"backfill of a range with no tick", "yearly", "backfill", fmt.Sprintf(`{"start":%q,"end":%q}`, rfc(hourAgo.Add(-time.Hour)), rfc(hourAgo)),
			[]string{"--start", rfc(hourAgo.Add(-time.Hour)), "--end", rfc(hourAgo)}, 422, "start", "nothing to backfill"},
		{"backfill of too many ticks", "ended-minutely", "backfill", fmt.Sprintf(`{"start":%q,"end":%q}`, rfc(now.Add(-30*24*time.Hour)), rfc(now.Add(-2*time.Hour))),
			[]string{"--start", rfc(now.Add(-30 * 24 * time.Hour)), "--end", rfc(now.Add(-2 * time.Hour))}, 400, "end", "more than 10000 ticks"},
		{"backfill a malformed time", "yearly", "backfill", fmt.Sprintf(`{"start":"yesterday","end":%q}`, rfc(hourAgo)), nil, 400, "start", "is not an RFC 3339 time"},
	}

	for _, c := range cases {
		before := scheduleState(t, st, c.schedule)
		refusals := map[string]string{}

		// HTTP.
		problem := sendCommand(t, st, c.schedule, c.command, c.payload)
		require.Equal(t, c.status, problem.Status, "%s over HTTP: %v", c.name, problem)
		refusals["http"] = problem.Field + ": " + problem.Detail

		// The CLI, which speaks HTTP but is a door of its own (flags, its rendering).
		if c.cli != nil {
			out := runCLI(t, st, append([]string{"schedule", c.command, c.schedule}, c.cli...)...)
			require.Contains(t, out, c.field+": ", "%s through the CLI", c.name)
			refusals["cli"] = out[strings.Index(out, c.field+": "):]
		}

		// A Temporal update.
		err := updateSchedule(ctx, st, c.schedule, c.command, rawJSON(c.payload), nil)
		r := workflows.RefusalOf(err)
		require.NotNil(t, r, "%s as an update: %v", c.name, err)
		refusals["update"] = r.Error()

		// A Temporal signal: nobody is answered, so the refusal is looked for in the view.
		newest := func() refusedCommand {
			if r := refusedCommands(t, st, c.schedule); len(r) > 0 {
				return r[0]
			}
			return refusedCommand{}
		}
		seen := newest()
		require.NoError(t, signalSchedule(ctx, st, c.schedule, c.command, rawJSON(c.payload)))
		var recorded []refusedCommand
		require.Eventually(t, func() bool {
			recorded = refusedCommands(t, st, c.schedule)
			return len(recorded) > 0 && recorded[0] != seen
		}, 30*time.Second, 50*time.Millisecond, "%s as a signal leaves no record", c.name)
		require.Equal(t, "signal", recorded[0].Door)
		require.Equal(t, c.command, recorded[0].Command, c.name)
		refusals["signal"] = recorded[0].Field + ": " + recorded[0].Reason

		want := c.field + ": "
		for door, got := range refusals {
			require.True(t, strings.HasPrefix(got, want), "%s through %s names %q, want field %q", c.name, door, got, c.field)
			require.Contains(t, got, c.reason, "%s through %s", c.name, door)
			require.Equal(t, refusals["http"], got, "%s: %s refuses in other words than HTTP", c.name, door)
		}
		require.Equal(t, before, scheduleState(t, st, c.schedule), "%s changed the schedule", c.name)
	}
}

// scheduleState is what a command could change: the row (definition, pause, next fire,
// counters, the backfills waiting) and the runs.
func scheduleState(t *testing.T, st *teststack.Stack, name string) string {
	t.Helper()
	ctx := context.Background()
	row, err := st.Store.GetSchedule(ctx, name)
	require.NoError(t, err)
	runs, err := st.Store.ListRuns(ctx, row.ID, 0, 1000)
	require.NoError(t, err)
	b, err := json.Marshal(map[string]any{
		"version": row.Version, "paused": row.Paused, "note": row.PauseNote, "next_run_at": row.NextRunAt,
		"last_run_at": row.LastRunAt, "fired": row.FiredCount, "skipped": row.SkippedCount, "missed": row.MissedCount,
		"backfills": string(row.Backfills), "runs": len(runs),
	})
	require.NoError(t, err)
	return string(b)
}

// sendCommand posts a command to a schedule through the Go client's operation for it, with
// the payload as it is written (bad or not), and answers the API's refusal.
func sendCommand(t *testing.T, st *teststack.Stack, name, command, payload string) *client.Error {
	t.Helper()
	c, ctx, body := st.Client(t), t.Context(), strings.NewReader(payload)
	var err error
	switch command {
	case "pause":
		_, err = c.PauseScheduleWithBodyWithResponse(ctx, name, "application/json", body)
	case "resume":
		_, err = c.ResumeScheduleWithBodyWithResponse(ctx, name, "application/json", body)
	case "trigger":
		_, err = c.TriggerScheduleWithBodyWithResponse(ctx, name, nil, "application/json", body)
	case "reschedule":
		_, err = c.RescheduleScheduleWithBodyWithResponse(ctx, name, "application/json", body)
	case "backfill":
		_, err = c.BackfillScheduleWithBodyWithResponse(ctx, name, "application/json", body)
	default:
		t.Fatalf("no command %q", command)
	}
	var problem *client.Error
	require.ErrorAs(t, err, &problem, "%s %s %s was accepted", command, name, payload)
	return problem
}

// refusedCommand is an entry of a schedule's refused_commands.
type refusedCommand struct {
	Command   string    `json:"command"`
	Door      string    `json:"door"`
	Field     string    `json:"field"`
	Reason    string    `json:"reason"`
	RefusedAt time.Time `json:"refused_at"`
}

// refusedCommands reads the schedule's refused_commands through the API, newest first.
func refusedCommands(t *testing.T, st *teststack.Stack, name string) []refusedCommand {
	t.Helper()
	var v struct {
		RefusedCommands []refusedCommand `json:"refused_commands"`
	}
	st.GetSchedule(t, name, &v)
	return v.RefusedCommands
}

// runCLI runs the CLI against the stack and returns what it printed on failure.
func runCLI(t *testing.T, st *teststack.Stack, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	env := cli.Env{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string {
		switch k {
		case "TICKGATE_SERVER":
			return st.URL
		case "TICKGATE_TOKEN":
			return st.AdminToken
		}
		return ""
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := cli.Run(ctx, args[0], args[1:], env)
	require.Error(t, err, "the CLI accepted %v: %s", args, out.String())
	return err.Error()
}
