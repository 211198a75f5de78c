package cli_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/cli"
	"github.com/tickgate/tickgate/internal/testing/teststack"
)

// TestWatchEndsOnTheServersStatus: watch ends when the API says the rollout ended, not when
// its own reading of the counts says so — a rollout with every task finished is watched on
// until the server's status is terminal, and CANCELED exits 8 like FAILED.
func TestWatchEndsOnTheServersStatus(t *testing.T) {
	t.Parallel()
	rollout := func(status string) string {
		return fmt.Sprintf(`{"id":1,"name":"r","status":%q,"counts":{"CANCELED":2},"progress":{"total":2,"finished":2}}`, status)
	}
	url := fakeAPI(t, rollout("RUNNING"), rollout("CANCELED"))
	out, err := watch(t, url, false, "rollout", "watch", "1")
	require.Equal(t, cli.ExitFailed, cli.ExitCode(err), out)
	require.Contains(t, err.Error(), "ended CANCELED")
	require.Contains(t, out, "CANCELED")

	url = fakeAPI(t, rollout("PAUSED"), rollout("DONE"))
	out, err = watch(t, url, false, "rollout", "watch", "1")
	require.NoError(t, err)
	require.Contains(t, out, "PAUSED")
	require.Contains(t, out, "DONE")
}

// TestCLIShowsRolloutCanceledWhenNoTaskRan: a rollout whose every task was canceled is
// CANCELED in `rollout get`, `rollout list` and `rollout watch` (exit 8), as the API says.
func TestCLIShowsRolloutCanceledWhenNoTaskRan(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	admin := st.AdminToken
	later := time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)
	r := run(t, st, admin, "rollout", "create", "-o", "json", "--json", fmt.Sprintf(`{"name":"called-off","parallel_limit":2,"tasks":[
		{"database":"db1","type":"DML","version":"1","executor":"noop","run_at":%q},
		{"database":"db2","type":"DML","version":"1","executor":"noop","run_at":%q}]}`, later, later))
	require.Equal(t, 0, r.code, r.errOut)
	var ro map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.out), &ro))
	id := itoa(ro["id"])
	require.Equal(t, "RUNNING", ro["status"])

	r = run(t, st, admin, "rollout", "tasks", id, "-o", "json")
	require.Equal(t, 0, r.code, r.errOut)
	var page struct {
		Items []map[string]any `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.out), &page))
	require.Len(t, page.Items, 2)
	for _, task := range page.Items {
		r = run(t, st, admin, "task-run", "cancel", itoa(task["id"]))
		require.Equal(t, 0, r.code, r.errOut)
	}

	r = run(t, st, admin, "rollout", "get", id)
	require.Equal(t, 0, r.code, r.errOut)
	require.Regexp(t, `status\s+CANCELED`, r.out)
	r = run(t, st, admin, "rollout", "list")
	require.Equal(t, 0, r.code, r.errOut)
	require.Regexp(t, `called-off\s+CANCELED`, r.out)
	r = run(t, st, admin, "rollout", "watch", id, "--interval", "100ms")
	require.Equal(t, cli.ExitFailed, r.code, r.out+r.errOut)
	require.Contains(t, r.errOut, "ended CANCELED")
}
