package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/readiness"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

// /readyz tells why a dependency fails (its raw error, which names hosts and ports) only
// to a caller whose token may read; an anonymous caller, or an agent, gets the status
// alone. A token that is shown is checked. Before, anyone read every dependency's error.
func TestReadyzGivesDetailsOnlyToReaders(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	tr := readiness.New()
	tr.StatusReuse = 0 // the anonymous answer follows each change at once
	var failing atomic.Pointer[error]
	refused := errors.New("dial tcp 10.9.8.7:7233: connect: connection refused")
	failing.Store(&refused)
	tr.Probe("archive", func(context.Context) error { return *failing.Load() })
	e := api.New(&api.Server{Store: st, Temporal: testenv.TemporalClient(t), Logf: t.Logf, Readiness: tr})
	_, viewer, err := st.CreateToken(context.Background(), store.NewToken{Role: domain.RoleViewer})
	require.NoError(t, err)
	_, agent, err := st.CreateToken(context.Background(), store.NewToken{Role: domain.RoleAgent, PC: "pc-1"})
	require.NoError(t, err)
	readyz := func(token string) (int, map[string]any, string) {
		req := httptest.NewRequest(http.MethodGet, "/readyz", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		var body map[string]any
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body), "%s", rec.Body)
		return rec.Code, body, rec.Body.String()
	}
	for _, who := range []string{"", agent} {
		code, body, raw := readyz(who)
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.Equal(t, map[string]any{"type": "https://tickgate.dev/problems/unavailable", "title": "Service Unavailable",
			"status": float64(503), "detail": "not ready"}, body)
		require.NotContains(t, raw, "10.9.8.7")
		require.NotContains(t, raw, "archive")
	}
	code, body, raw := readyz(viewer)
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, raw, "10.9.8.7:7233")
	require.Contains(t, body["checks"], "archive")
	require.True(t, strings.HasPrefix(body["detail"].(string), "not ready: archive: dial tcp 10.9.8.7:7233: connect: connection refused"), body["detail"])

	code, _, _ = readyz("tg_not-a-token")
	require.Equal(t, http.StatusUnauthorized, code, "a token that is shown is checked")

	// Ready: the anonymous answer is the status alone, a reader's carries the checks.
	var none error
	failing.Store(&none)
	code, body, _ = readyz("")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, map[string]any{"status": "ready"}, body)
	code, body, _ = readyz(viewer)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body["checks"], "postgres")
	require.Contains(t, body["checks"], "temporal")
}
