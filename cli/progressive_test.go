package cli_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/cli"
	"github.com/tickgate/tickgate/internal/testing/teststack"
)

// TestCLIProgressive: a rollout with a strategy created from JSON, its waves listed, a
// rollout frozen and unfrozen, the global freeze set, shown with who set it and lifted;
// a bad strategy is refused naming the field, as the API does.
func TestCLIProgressive(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	admin := st.AdminToken

	r := run(t, st, admin, "rollout", "create", "-o", "json", "--json", `{"name":"tenants","parallel_limit":2,"tasks":[
		{"database":"billing","type":"DDL","version":"1","executor":"noop"},
		{"database":"orders","type":"DDL","version":"1","executor":"noop"}],
		"strategy":{"waves":[{"databases":["billing"]},{"percent":100}],"bake":"10m","health":{"sql":"SELECT 1"}}}`)
	require.Zero(t, r.code, r.errOut)
	var created struct {
		ID int64 `json:"id"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.out), &created))
	id := jsonID(created.ID)

	r = run(t, st, admin, "rollout", "waves", id)
	require.Zero(t, r.code, r.errOut)
	require.Regexp(t, `(?m)^WAVE\s+STATUS\s+DATABASES`, r.out)
	require.Regexp(t, `(?m)^1\s+RUNNING\s+billing`, r.out)
	require.Regexp(t, `(?m)^2\s+WAITING\s+orders`, r.out)

	_, err := st.Store.PromoteRound(context.Background())
	require.NoError(t, err)
	r = run(t, st, admin, "rollout", "tasks", id)
	require.Zero(t, r.code, r.errOut)
	require.Contains(t, r.out, "wave 2 waits: wave 1 is running", "the waiting cause in words")

	r = run(t, st, admin, "rollout", "freeze", id, "--reason", "tenant on hold")
	require.Zero(t, r.code, r.errOut)
	require.Contains(t, r.out, "tenant on hold")
	r = run(t, st, admin, "rollout", "unfreeze", id)
	require.Zero(t, r.code, r.errOut)

	r = run(t, st, admin, "freeze", "set", "--reason", "incident 42")
	require.Zero(t, r.code, r.errOut)
	require.Regexp(t, `FROZEN by token \d+ \(teststack\) since .*: incident 42`, r.out)
	r = run(t, st, admin, "freeze", "set", "--reason", "again")
	require.Equal(t, cli.ExitConflict, r.code, r.errOut)
	r = run(t, st, admin, "freeze", "get")
	require.Zero(t, r.code, r.errOut)
	require.Contains(t, r.out, "incident 42")
	r = run(t, st, admin, "rollout", "get", id)
	require.Zero(t, r.code, r.errOut)
	require.Contains(t, r.out, "incident 42", "a rollout shows the freeze in force")
	r = run(t, st, admin, "freeze", "lift")
	require.Zero(t, r.code, r.errOut)
	require.Contains(t, r.out, "not frozen")
	require.Contains(t, r.out, "history:")

	r = run(t, st, admin, "rollout", "create", "--json", `{"name":"bad","parallel_limit":1,"tasks":[
		{"database":"a","type":"DML","version":"1","executor":"noop"}],"strategy":{"rate":{"per_minute":0}}}`)
	require.Equal(t, cli.ExitInvalid, r.code, r.errOut)
	require.Contains(t, r.errOut, "strategy.rate.per_minute")
	r = run(t, st, admin, "freeze", "set")
	require.Equal(t, cli.ExitInvalid, r.code, r.errOut)
	require.Contains(t, r.errOut, "reason")

	// A device task with a rate and a window, and a bad window named by its field.
	r = run(t, st, admin, "task", "create", "--payload", `{"cmd":"flash"}`, "--rate", "30", "--window", "0 1 * * 1-5|4h|Europe/Paris")
	require.Zero(t, r.code, r.errOut)
	require.Contains(t, r.out, "per_minute=30")
	require.Contains(t, r.out, "Europe/Paris")
	r = run(t, st, admin, "task", "create", "--window", "0 1 * * *|soon")
	require.Equal(t, cli.ExitInvalid, r.code, r.errOut)
	require.Contains(t, r.errOut, "windows[0].duration")
}

func jsonID(id int64) string {
	b, _ := json.Marshal(id)
	return string(b)
}
