package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/cli"
)

// fakeAPI answers each GET with the next of its bodies (repeating the last).
func fakeAPI(t *testing.T, bodies ...string) string {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "Bearer tg_test", r.Header.Get("Authorization"))
		i := int(n.Add(1)) - 1
		if i >= len(bodies) {
			i = len(bodies) - 1
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, bodies[i])
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func watch(t *testing.T, url string, tty bool, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	env := cli.Env{Stdout: &out, Stderr: &out, TTY: tty, Getenv: func(k string) string {
		if k == "TICKGATE_SERVER" {
			return url
		}
		if k == "TICKGATE_TOKEN" {
			return "tg_test"
		}
		return ""
	}}
	err := cli.Run(context.Background(), args[0], append(args[1:], "--interval", "1ms"), env)
	return out.String(), err
}

// TestWatchProgressAndExitCodes: watch draws a bar per change until the work is done, in
// place on a terminal; a rollout that ends FAILED or a task that ends failed exits 8.
func TestWatchProgressAndExitCodes(t *testing.T) {
	t.Parallel()
	rollout := func(status string, finished, failed int) string {
		return fmt.Sprintf(`{"id":1,"name":"r","status":%q,"counts":{"DONE":%d,"FAILED":%d,"PENDING":%d},"progress":{"total":4,"finished":%d}}`,
			status, finished-failed, failed, 4-finished, finished)
	}
	url := fakeAPI(t, rollout("RUNNING", 0, 0), rollout("RUNNING", 2, 0), rollout("RUNNING", 2, 0), rollout("DONE", 4, 0))
	out, err := watch(t, url, false, "rollout", "watch", "1")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, out) // one line per change
	require.Contains(t, lines[0], "0/4")
	require.Contains(t, lines[1], "[###############...............]  50%")
	require.Contains(t, lines[2], "100%")
	require.Equal(t, 0, cli.ExitCode(err))

	url = fakeAPI(t, rollout("RUNNING", 1, 0), rollout("FAILED", 4, 1))
	out, err = watch(t, url, true, "rollout", "watch", "1")
	require.Error(t, err)
	require.Equal(t, cli.ExitFailed, cli.ExitCode(err))
	require.Contains(t, out, "\r\033[K") // redrawn in place
	require.Contains(t, err.Error(), "FAILED")

	task := func(status string, active, ok, failed int) string {
		return fmt.Sprintf(`{"id":7,"status":%q,"counts":{"active":%d,"succeeded":%d,"failed":%d,"canceled":0}}`, status, active, ok, failed)
	}
	url = fakeAPI(t, task("running", 3, 0, 0), task("running", 1, 2, 0), task("success", 0, 3, 0))
	out, err = watch(t, url, false, "task", "watch", "7")
	require.NoError(t, err)
	require.Contains(t, out, "2/3")
	require.Contains(t, out, "3/3")
	url = fakeAPI(t, task("failed", 0, 1, 2))
	_, err = watch(t, url, false, "task", "watch", "7")
	require.Equal(t, cli.ExitFailed, cli.ExitCode(err))

	// An unknown id is exit code 3, as for any other command.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"status":404,"title":"Not Found","detail":"no rollout 9"}`)
	}))
	defer srv.Close()
	_, err = watch(t, srv.URL, false, "rollout", "watch", "9")
	require.Equal(t, cli.ExitNotFound, cli.ExitCode(err))
	require.Contains(t, err.Error(), "no rollout 9")
}
