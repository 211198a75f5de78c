package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/cli"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/workflows"
)

// cliOK runs the CLI against the stack, requires it to succeed and returns what it printed.
func cliOK(t *testing.T, st *teststack.Stack, args ...string) string {
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
	require.NoError(t, cli.Run(ctx, args[0], args[1:], env), "%v: %s %s", args, out.String(), errOut.String())
	return out.String()
}

// cliRetrying runs the CLI as cliOK does, sending it again while the API answers 503 (a
// workflow that did not take its command in time, on a loaded machine), as the bulk pause's
// answer asks: a retry does what is left. It returns what the last run printed and how many
// runs it took.
func cliRetrying(t *testing.T, st *teststack.Stack, args ...string) (string, int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for runs := 1; ; runs++ {
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
		err := cli.Run(ctx, args[0], args[1:], env)
		cancel()
		if err == nil {
			return out.String(), runs
		}
		require.True(t, strings.Contains(err.Error(), "503") && time.Now().Before(deadline), "%v: %v", args, err)
		t.Logf("%v: %v; again", args, err)
	}
}

// historyEntry is an entry of GET /schedules/{name}/history.
type historyEntry struct {
	Kind string `json:"kind"`
	By   string `json:"by"`
	Door string `json:"door"`
	Note string `json:"note"`
}

func scheduleHistory(t *testing.T, st *teststack.Stack, name string) []historyEntry {
	t.Helper()
	var page struct {
		Items []historyEntry `json:"items"`
	}
	st.ScheduleHistory(t, name, &page)
	return page.Items
}

// TestLabelsBulkPauseAndHistoryAtEveryDoor: schedules created with labels by the CLI are
// listed by selector (CLI and HTTP), paused together by the CLI's bulk pause — each named in
// its answer — and resumed by other services: a signal naming itself, an update naming no
// one. Every pause and resume is in each schedule's history, read through HTTP and the CLI,
// saying who (the token's note, the signal's identity, the door), how and why. A
// concurrency cap is set and shown through the CLI too.
func TestLabelsBulkPauseAndHistoryAtEveryDoor(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	ctx := context.Background()
	for _, name := range []string{"books-a", "books-b"} {
		cliOK(t, st, "schedule", "create", name, "--interval", "1h", "--topic", "billing", "--type", "close",
			"--label", "team=billing", "--label", "tier=gold")
	}
	cliOK(t, st, "schedule", "create", "books-ops", "--interval", "1h", "--topic", "ops", "--type", "sweep", "--label", "team=ops")

	listed := cliOK(t, st, "schedule", "list", "--selector", "team=billing,tier=gold")
	require.Contains(t, listed, "books-a")
	require.Contains(t, listed, "books-b")
	require.NotContains(t, listed, "books-ops")
	require.Contains(t, listed, "team=billing tier=gold", "the labels column")

	paused, runs := cliRetrying(t, st, "schedule", "pause", "--selector", "team=billing", "--note", "billing freeze")
	if runs == 1 {
		require.Regexp(t, `books-a\s+paused`, paused)
		require.Regexp(t, `books-b\s+paused`, paused)
		require.Contains(t, paused, "2 changed, 0 unchanged")
	} else { // a first run that timed out may have paused some: each is paused, by one of them
		require.Regexp(t, `books-a\s+(already_)?paused`, paused)
		require.Regexp(t, `books-b\s+(already_)?paused`, paused)
	}
	again, _ := cliRetrying(t, st, "schedule", "pause", "-o", "json", "--selector", "team=billing", "--note", "billing freeze")
	var retry struct {
		Items []struct {
			Name    string `json:"name"`
			Outcome string `json:"outcome"`
		} `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(again), &retry), again)
	require.Len(t, retry.Items, 2)
	for _, it := range retry.Items {
		require.Equal(t, "already_paused", it.Outcome, it.Name)
	}

	// Other services: a signal that names itself, an update that names no one.
	require.NoError(t, signalSchedule(ctx, st, "books-a", workflows.ScheduleResume, workflows.ResumeRequest{Note: "books closed", Identity: "billing-service"}))
	var d workflows.ScheduleDescription
	require.NoError(t, updateSchedule(ctx, st, "books-b", workflows.ScheduleResume, workflows.ResumeRequest{}, &d))
	require.True(t, d.Changed)
	require.Eventually(t, func() bool { return len(scheduleHistory(t, st, "books-a")) == 2 }, 30*time.Second, 100*time.Millisecond,
		"the signal's resume is in the history")

	a := scheduleHistory(t, st, "books-a")
	require.Equal(t, historyEntry{Kind: "resume", By: "billing-service", Door: "signal", Note: "books closed"}, a[0])
	require.Equal(t, "pause", a[1].Kind)
	require.Equal(t, "billing freeze", a[1].Note)
	require.True(t, strings.HasPrefix(a[1].By, "teststack (token "), "the CLI's token: %s", a[1].By)
	b := scheduleHistory(t, st, "books-b")
	require.Len(t, b, 2)
	require.Equal(t, historyEntry{Kind: "resume", By: "update", Door: "update"}, b[0])

	shown := cliOK(t, st, "schedule", "history", "books-a")
	require.Regexp(t, `resume\s+billing-service\s+signal\s+books closed`, shown)
	require.Regexp(t, `pause\s+teststack \(token \d+\)\s+update\s+billing freeze`, shown)
	require.Empty(t, scheduleHistory(t, st, "books-ops"), "not reached")

	// A cap through the CLI, shown by it.
	cliOK(t, st, "schedule", "create", "books-capped", "--interval", "1h", "--workflow-type", "Report", "--task-queue", "reports",
		"--overlap", "allow_all", "--max-concurrent", "3", "--when-full", "skip")
	require.Regexp(t, `max_concurrent\s+3`, cliOK(t, st, "schedule", "get", "books-capped"))
	var capped struct {
		Policies struct {
			MaxConcurrent   int    `json:"max_concurrent"`
			OverlapWhenFull string `json:"overlap_when_full"`
		} `json:"policies"`
	}
	st.GetSchedule(t, "books-capped", &capped)
	require.Equal(t, 3, capped.Policies.MaxConcurrent)
	require.Equal(t, "skip", capped.Policies.OverlapWhenFull)
}
