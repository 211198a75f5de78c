package cli_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/cli"
)

// Client.Do sends the token and the extra headers, and maps a 5xx answer to the
// "unavailable" exit code a caller may retry on.
func TestClientSendsHeadersAndMapsServerErrors(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got http.Header
	status := http.StatusCreated
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got = r.Header.Clone()
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"id": 7}`))
	}))
	defer srv.Close()
	c := cli.Client{Server: srv.URL, Token: "tg_test", Headers: map[string]string{"Idempotency-Key": "k-1"}}
	var out struct {
		ID int `json:"id"`
	}
	require.NoError(t, c.Do(context.Background(), http.MethodPost, "/api/v1/pcs", map[string]any{"name": "p"}, &out))
	require.Equal(t, 7, out.ID)
	mu.Lock()
	require.Equal(t, "Bearer tg_test", got.Get("Authorization"))
	require.Equal(t, "k-1", got.Get("Idempotency-Key"))
	require.Equal(t, "application/json", got.Get("Content-Type"))
	status = http.StatusServiceUnavailable
	mu.Unlock()
	err := c.Do(context.Background(), http.MethodPost, "/api/v1/pcs", map[string]any{"name": "p"}, nil)
	require.Equal(t, cli.ExitUnavailable, cli.ExitCode(err))
}
