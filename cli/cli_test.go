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
	"github.com/tickgate/tickgate/internal/testenv"
	"github.com/tickgate/tickgate/internal/teststack"
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
		row, tok, err := st.Store.CreateToken(ctx, store.NewToken{Role: role, PC: pc, Note: note})
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
	r = run(t, st, admin, "schedule", "create", "bad", "--interval", "-1h", "--topic", "t", "--type", "x")
	require.Equal(t, cli.ExitInvalid, r.code)
	require.Contains(t, r.errOut, "spec")
	r = run(t, st, admin, "schedule", "get")
	require.Equal(t, cli.ExitUsage, r.code)
	r = run(t, st, admin, "schedule", "fly")
	require.Equal(t, cli.ExitUsage, r.code)
	r = run(t, st, admin, "schedule", "list", "-o", "yaml")
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
