package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// agent-sim reaches the API that TICKGATE_SERVER names when --server is not given, as the
// CLI does (docs/operations.md).
func TestAgentSimServerDefaultsToTICKGATE_SERVER(t *testing.T) {
	var listed atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/pcs" {
			listed.Add(1)
			_, _ = w.Write([]byte(`{"items": [], "next_cursor": ""}`))
			return
		}
		http.NotFound(w, r)
	}))
	defer api.Close()
	t.Setenv("TICKGATE_SERVER", api.URL)
	t.Setenv("TICKGATE_TOKEN", "tg_test")
	err := runAgentSim(context.Background(), nil)
	require.ErrorContains(t, err, "no PCs")
	require.EqualValues(t, 1, listed.Load(), "the PCs were listed at $TICKGATE_SERVER")
}
