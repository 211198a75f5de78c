package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/cli"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/store"
)

func TestMain(m *testing.M) { testenv.Main(m) }

type result struct {
	out, errOut string
	code        int
}

// run runs one CLI invocation against the stack, as a shell would see it.
func run(t *testing.T, st *teststack.Stack, token string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	env := cli.Env{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string {
		switch k {
		case "TICKGATE_SERVER":
			return st.URL
		case "TICKGATE_TOKEN":
			return token
		}
		return ""
	}, CreateTokenInDB: func(ctx context.Context, _ string, role, pc, note string) (int64, string, error) {
		row, tok, err := st.Store.CreateToken(ctx, store.NewToken{Role: domain.TokenRole(role), PC: pc, Note: note})
		return row.ID, tok, err
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := cli.Run(ctx, args[0], args[1:], env)
	if err != nil {
		errOut.WriteString(err.Error())
	}
	return result{out: out.String(), errOut: errOut.String(), code: cli.ExitCode(err)}
}

// TestCLIAgainstAPI drives the CLI against a real API: tables and -o json, pagination,
// schedule operations, tokens (through the API and straight into the database), a rollout
// watched to the end, and the exit codes of each kind of failure.
func TestCLIAgainstAPI(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	admin := st.AdminToken

	r := run(t, st, admin, "schedule", "create", "nightly", "--interval", "1h", "--topic", "ops", "--type", "tick", "--data", `{"a":1}`)
	require.Equal(t, 0, r.code, r.errOut)
	require.Contains(t, r.out, "nightly")
	r = run(t, st, admin, "schedule", "create", "--json", `{"name":"second","spec":{"cron":"0 * * * *"},"action":{"kind":"event","topic":"t","type":"x"}}`)
	require.Equal(t, 0, r.code, r.errOut)

	r = run(t, st, admin, "schedule", "list")
	require.Equal(t, 0, r.code, r.errOut)
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	require.Len(t, lines, 3)
	require.True(t, strings.HasPrefix(lines[0], "NAME"), r.out)

	r = run(t, st, admin, "schedule", "list", "--limit", "1", "-o", "json")
	require.Equal(t, 0, r.code, r.errOut)
	var page struct {
		Items      []map[string]any `json:"items"`
		NextCursor string           `json:"next_cursor"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.out), &page), r.out)
	require.Len(t, page.Items, 1)
	require.NotEmpty(t, page.NextCursor)
	r = run(t, st, admin, "schedule", "list", "--limit", "1", "--all", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(r.out), &page), r.out)
	require.Len(t, page.Items, 2)
	require.Empty(t, page.NextCursor)

	r = run(t, st, admin, "schedule", "pause", "nightly", "--note", "maintenance", "-o", "json")
	require.Equal(t, 0, r.code, r.errOut)
	var sched map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.out), &sched))
	require.Equal(t, true, sched["paused"])
	r = run(t, st, admin, "schedule", "get", "nightly")
	require.Equal(t, 0, r.code, r.errOut)
	require.Regexp(t, `paused\s+true`, r.out)
	require.Regexp(t, `note\s+maintenance`, r.out)
	r = run(t, st, admin, "schedule", "resume", "nightly")
	require.Equal(t, 0, r.code, r.errOut)
	r = run(t, st, admin, "schedule", "trigger", "nightly")
	require.Equal(t, 0, r.code, r.errOut)
	r = run(t, st, admin, "schedule", "runs", "nightly", "-o", "json")
	require.Equal(t, 0, r.code, r.errOut)
	require.Contains(t, r.out, `"trigger": "manual"`)

	// Exit codes: not found 3, conflict 4, auth 5, invalid 6, usage 2, unreachable 7.
	r = run(t, st, admin, "schedule", "get", "nope")
	require.Equal(t, cli.ExitNotFound, r.code)
	require.Contains(t, r.errOut, "404")
	r = run(t, st, admin, "schedule", "create", "nightly", "--interval", "1h", "--topic", "ops", "--type", "tick")
	require.Equal(t, cli.ExitConflict, r.code, r.errOut)
	r = run(t, st, "", "schedule", "list")
	require.Equal(t, cli.ExitAuth, r.code)
	viewer := run(t, st, admin, "token", "create", "--role", "viewer", "-o", "json")
	require.Equal(t, 0, viewer.code, viewer.errOut)
	var tok map[string]any
	require.NoError(t, json.Unmarshal([]byte(viewer.out), &tok))
	vt := tok["token"].(string)
	r = run(t, st, vt, "schedule", "list")
	require.Equal(t, 0, r.code, r.errOut)
	r = run(t, st, vt, "schedule", "pause", "nightly")
	require.Equal(t, cli.ExitAuth, r.code)
	require.Contains(t, r.errOut, "403")
	deployer := run(t, st, admin, "token", "create", "--role", "deployer", "-o", "json")
	require.Equal(t, 0, deployer.code, deployer.errOut)
	require.Contains(t, deployer.out, `"role": "deployer"`)
	r = run(t, st, admin, "schedule", "create", "bad", "--interval", "-1h", "--topic", "t", "--type", "x")
	require.Equal(t, cli.ExitInvalid, r.code)
	require.Contains(t, r.errOut, "spec")
	r = run(t, st, admin, "schedule", "get")
	require.Equal(t, cli.ExitUsage, r.code)
	r = run(t, st, admin, "schedule", "fly")
	require.Equal(t, cli.ExitUsage, r.code)
	r = run(t, st, admin, "schedule", "list", "-o", "xml")
	require.Equal(t, cli.ExitUsage, r.code)
	r = run(t, st, admin, "schedule", "list", "--server", "http://127.0.0.1:1")
	require.Equal(t, cli.ExitUnavailable, r.code)

	// Tokens: listed without secrets, revoked, and bootstrapped in the database.
	r = run(t, st, admin, "token", "list")
	require.Equal(t, 0, r.code, r.errOut)
	require.Contains(t, r.out, "viewer")
	require.NotContains(t, r.out, vt)
	r = run(t, st, admin, "token", "revoke", itoa(tok["id"]))
	require.Equal(t, 0, r.code, r.errOut)
	r = run(t, st, vt, "schedule", "list")
	require.Equal(t, cli.ExitAuth, r.code)
	r = run(t, st, "", "token", "create", "--role", "admin", "--database-url", "postgres://bootstrap", "-o", "json")
	require.Equal(t, 0, r.code, r.errOut)
	require.NoError(t, json.Unmarshal([]byte(r.out), &tok))
	r = run(t, st, tok["token"].(string), "token", "list")
	require.Equal(t, 0, r.code, r.errOut)
	r = run(t, st, admin, "token", "create", "--role", "operator", "-q")
	require.Equal(t, 0, r.code, r.errOut)
	quiet := strings.TrimSpace(r.out)
	require.True(t, strings.HasPrefix(quiet, "tg_") && !strings.Contains(quiet, " "), r.out)
	require.Equal(t, 0, run(t, st, quiet, "schedule", "list").code)
	r = run(t, st, admin, "token", "create", "--role", "root")
	require.Equal(t, cli.ExitUsage, r.code)

	// A rollout created from JSON and watched to the end.
	r = run(t, st, admin, "rollout", "create", "-o", "json", "--json", `{"name":"r1","parallel_limit":2,"tasks":[
		{"database":"db1","type":"DML","version":"1","executor":"noop"},
		{"database":"db2","type":"DML","version":"1","executor":"noop"},
		{"database":"db3","type":"DDL","version":"1","executor":"noop"}]}`)
	require.Equal(t, 0, r.code, r.errOut)
	var ro map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.out), &ro))
	id := itoa(ro["id"])
	r = run(t, st, admin, "rollout", "watch", id, "--interval", "100ms")
	require.Equal(t, 0, r.code, r.out+r.errOut)
	require.Contains(t, r.out, "100%")
	require.Contains(t, r.out, "3/3")
	r = run(t, st, admin, "rollout", "tasks", id)
	require.Equal(t, 0, r.code, r.errOut)
	require.Equal(t, 4, len(strings.Split(strings.TrimSpace(r.out), "\n")), r.out)
	r = run(t, st, admin, "rollout", "list")
	require.Equal(t, 0, r.code, r.errOut)
	require.Contains(t, r.out, "r1")

	// PCs and devices.
	r = run(t, st, admin, "pc", "create", "pc-1", "--capacity", "2")
	require.Equal(t, 0, r.code, r.errOut)
	r = run(t, st, admin, "device", "create", "dev-1", "--pc", "pc-1")
	require.Equal(t, 0, r.code, r.errOut)
	r = run(t, st, admin, "pc", "list")
	require.Equal(t, 0, r.code, r.errOut)
	require.Contains(t, r.out, "pc-1")
	r = run(t, st, admin, "device", "create", "bad serial!", "--pc", "pc-1")
	require.Equal(t, cli.ExitInvalid, r.code)
}

func itoa(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestCLIDeviceFlowAndScheduleOps: an operator queues a device task, the PC's agent claims
// its command and reports success with the CLI, and `task watch` follows it to the end;
// schedule update, reschedule, backfill and the events feed work from the CLI too.
func TestCLIDeviceFlowAndScheduleOps(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	op := st.NewToken(t, domain.RoleOperator, "")
	agent := st.NewToken(t, domain.RoleAgent, "pc-9")
	other := st.NewToken(t, domain.RoleAgent, "pc-8")

	require.Equal(t, 0, run(t, st, op, "pc", "create", "pc-9", "--capacity", "2").code)
	require.Equal(t, 0, run(t, st, op, "device", "create", "phone-9", "--pc", "pc-9").code)
	r := run(t, st, op, "task", "create", "--payload", `{"cmd":"reboot"}`, "-o", "json")
	require.Equal(t, 0, r.code, r.errOut)
	var task map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.out), &task))
	taskID := itoa(task["id"])

	var claimed struct {
		Items []map[string]any `json:"items"`
	}
	require.Eventually(t, func() bool {
		r := run(t, st, agent, "pc", "claim", "pc-9", "--max", "5", "-o", "json")
		require.Equal(t, 0, r.code, r.errOut)
		require.NoError(t, json.Unmarshal([]byte(r.out), &claimed))
		return len(claimed.Items) == 1
	}, 30*time.Second, 100*time.Millisecond)
	tdID := itoa(claimed.Items[0]["id"])

	r = run(t, st, other, "pc", "claim", "pc-9")
	require.Equal(t, cli.ExitAuth, r.code, "another PC's agent")
	r = run(t, st, other, "task", "report", tdID, "--status", "succeeded")
	require.Equal(t, cli.ExitAuth, r.code, "another PC's agent")
	r = run(t, st, agent, "task", "ack", tdID)
	require.Equal(t, 0, r.code, r.errOut)
	r = run(t, st, agent, "task", "report", tdID, "--status", "succeeded")
	require.Equal(t, 0, r.code, r.errOut)

	r = run(t, st, op, "task", "watch", taskID, "--interval", "50ms")
	require.Equal(t, 0, r.code, r.out+r.errOut)
	require.Contains(t, r.out, "success")
	r = run(t, st, op, "task", "events", tdID)
	require.Equal(t, 0, r.code, r.errOut)
	require.Contains(t, r.out, "SUCCEEDED")
	r = run(t, st, op, "task", "execution", tdID)
	require.Equal(t, 0, r.code, r.errOut)
	require.Contains(t, r.out, "SUCCEEDED")
	r = run(t, st, op, "task", "devices", taskID)
	require.Equal(t, 0, r.code, r.errOut)
	require.Contains(t, r.out, "phone-9")

	// Schedule operations beyond create.
	require.Equal(t, 0, run(t, st, op, "schedule", "create", "feed", "--interval", "1h", "--topic", "feed", "--type", "tick").code)
	r = run(t, st, op, "schedule", "update", "feed", "--json", `{"policies":{"overlap":"allow_all"}}`, "-o", "json")
	require.Equal(t, 0, r.code, r.errOut)
	require.Contains(t, r.out, "allow_all")
	r = run(t, st, op, "schedule", "update", "feed", "--json", `{"policies":{"overlap":"skip"}}`, "--version", "1")
	require.Equal(t, cli.ExitConflict, r.code, "stale version: %s", r.errOut)
	next := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	r = run(t, st, op, "schedule", "reschedule", "feed", "--at", next, "-o", "json")
	require.Equal(t, 0, r.code, r.errOut)
	end := time.Now().UTC().Truncate(time.Hour)
	r = run(t, st, op, "schedule", "backfill", "feed", "--start", end.Add(-3*time.Hour).Format(time.RFC3339), "--end", end.Format(time.RFC3339), "-o", "json")
	require.Equal(t, 0, r.code, r.errOut)
	var backfilled struct {
		Ticks int `json:"ticks"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.out), &backfilled), r.out)
	// The interval's anchored grid reaches back before the schedule's creation: the hours in
	// the range are filled, one event each.
	require.GreaterOrEqual(t, backfilled.Ticks, 3, r.out)
	r = run(t, st, op, "schedule", "trigger", "feed")
	require.Equal(t, 0, r.code, r.errOut)
	r = run(t, st, op, "schedule", "trigger", "feed", "--overlap", "allow_all")
	require.Equal(t, 0, r.code, r.errOut)
	require.Eventually(t, func() bool {
		r := run(t, st, op, "schedule", "events", "--topic", "feed", "--limit", "1", "--all", "-o", "json")
		return r.code == 0 && strings.Count(r.out, `"type": "tick"`) == backfilled.Ticks+2
	}, 30*time.Second, 200*time.Millisecond, "the backfilled and both triggered events, one page at a time")
	r = run(t, st, op, "schedule", "delete", "feed")
	require.Equal(t, 0, r.code, r.errOut)
	r = run(t, st, op, "schedule", "get", "feed")
	require.Equal(t, cli.ExitNotFound, r.code)
}
