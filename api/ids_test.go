package api_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/testing/teststack"
)

// TestPathIDsAnswerAlike: every route with an {id} answers a malformed id (not a positive
// integer) 400 problem+json naming the path parameter, and a well-formed id that names
// nothing 404 — rollouts and task runs as the device resources do.
func TestPathIDsAnswerAlike(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	routes := []struct{ method, path string }{
		{http.MethodGet, "/api/v1/rollouts/%s"},
		{http.MethodGet, "/api/v1/rollouts/%s/tasks"},
		{http.MethodPost, "/api/v1/rollouts/%s/pause"},
		{http.MethodGet, "/api/v1/task-runs/%s"},
		{http.MethodPost, "/api/v1/task-runs/%s/skip"},
		{http.MethodGet, "/api/v1/tasks/%s"},
		{http.MethodGet, "/api/v1/tasks/%s/devices"},
		{http.MethodPost, "/api/v1/tasks/%s/cancel"},
		{http.MethodGet, "/api/v1/task-devices/%s"},
		{http.MethodGet, "/api/v1/task-devices/%s/events"},
		{http.MethodPost, "/api/v1/agent/task-devices/%s/ack"},
		{http.MethodDelete, "/api/v1/tokens/%s"},
	}
	for _, r := range routes {
		for _, bad := range []string{"abc", "0", "-4", "1.5", "99999999999999999999"} {
			path := fmt.Sprintf(r.path, bad)
			code, body := st.Do(t, r.method, path, nil)
			require.Equal(t, http.StatusBadRequest, code, "%s %s: %s", r.method, path, body)
			require.Contains(t, string(body), `"field":"id"`, "%s %s", r.method, path)
		}
		path := fmt.Sprintf(r.path, "987654321")
		code, body := st.Do(t, r.method, path, nil)
		require.Equal(t, http.StatusNotFound, code, "%s %s: %s", r.method, path, body)
	}
}
