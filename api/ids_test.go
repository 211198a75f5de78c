package api_test

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/starter"
)

// TestPathIDsAnswerAlike: every route with an {id} — read from the application's own
// routes, so a new one is covered too — answers a malformed id (not a positive 64-bit
// integer) 400 problem+json naming the path parameter, and a well-formed id that names
// nothing 404: rollouts, task runs, device tasks, task_devices, the agent's routes and
// tokens alike. An agent's token gets the same answers from the agent routes' access
// check.
func TestPathIDsAnswerAlike(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	e := api.New(&api.Server{Store: st.Store, Temporal: st.Temporal, Starter: &starter.Starter{Client: st.Temporal, TaskQueue: st.Config.TaskQueue}})
	var routes []string
	for _, r := range e.Routes() {
		if strings.Contains(r.Path, "/:id") && r.Method != http.MethodHead {
			routes = append(routes, r.Method+" "+r.Path)
		}
	}
	sort.Strings(routes)
	// The routes the contract has with an {id}; the list read from the application must
	// hold at least these.
	for _, want := range []string{
		"GET /api/v1/rollouts/:id", "GET /api/v1/rollouts/:id/tasks", "POST /api/v1/rollouts/:id/pause",
		"POST /api/v1/rollouts/:id/resume", "POST /api/v1/rollouts/:id/cancel",
		"GET /api/v1/task-runs/:id", "POST /api/v1/task-runs/:id/retry", "POST /api/v1/task-runs/:id/skip",
		"POST /api/v1/task-runs/:id/cancel", "POST /api/v1/task-runs/:id/result",
		"GET /api/v1/tasks/:id", "GET /api/v1/tasks/:id/devices", "POST /api/v1/tasks/:id/cancel",
		"GET /api/v1/task-devices/:id", "GET /api/v1/task-devices/:id/events",
		"POST /api/v1/agent/task-devices/:id/ack", "POST /api/v1/agent/task-devices/:id/result",
		"DELETE /api/v1/tokens/:id",
		"POST /api/v1/rollouts/:id/freeze", "POST /api/v1/rollouts/:id/unfreeze",
	} {
		require.Contains(t, routes, want)
	}
	// A body each route would accept, so that only the id decides the answer.
	bodies := map[string]any{
		"POST /api/v1/task-runs/:id/result":          map[string]any{"status": "DONE"},
		"POST /api/v1/agent/task-devices/:id/result": map[string]any{"status": "succeeded"},
		"POST /api/v1/rollouts/:id/freeze":           map[string]any{"reason": "incident"},
	}
	_, err := st.Store.CreatePC(t.Context(), "ids-pc", 1)
	require.NoError(t, err)
	agent := st.As(st.NewToken(t, domain.RoleAgent, "ids-pc"))
	for _, r := range routes {
		method, pattern, _ := strings.Cut(r, " ")
		callers := []*teststack.Stack{st}
		if strings.HasPrefix(pattern, "/api/v1/agent/") {
			callers = append(callers, agent)
		}
		for _, caller := range callers {
			for _, bad := range []string{"abc", "0", "-4", "1.5", "1e3", "%20", "99999999999999999999"} {
				path := strings.Replace(pattern, ":id", bad, 1)
				code, body := caller.Do(t, method, path, bodies[r])
				require.Equal(t, http.StatusBadRequest, code, "%s %s: %s", method, path, body)
				require.Contains(t, string(body), `"field":"id"`, "%s %s", method, path)
			}
			path := strings.Replace(pattern, ":id", fmt.Sprint(987654321), 1)
			code, body := caller.Do(t, method, path, bodies[r])
			require.Equal(t, http.StatusNotFound, code, "%s %s: %s", method, path, body)
		}
	}
}
