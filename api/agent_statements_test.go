package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

// statementLog records the statements a pool sends, in order.
type statementLog struct {
	mu  sync.Mutex
	sql []string
}

func (l *statementLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sql = append(l.sql, d.SQL)
	return ctx
}

func (l *statementLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// since returns the first line of each statement sent after the first n (sqlc's
// "-- name: …" for the store's), leaving out the listening connection's own (LISTEN, and
// pg_notify acknowledging a revocation).
func (l *statementLog) since(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, q := range l.sql[n:] {
		if !strings.HasPrefix(q, "LISTEN ") && !strings.Contains(q, "pg_notify") {
			first, _, _ := strings.Cut(strings.TrimSpace(q), "\n") // sqlc's "-- name: …" line
			out = append(out, first)
		}
	}
	return out
}

func (l *statementLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.sql)
}

// An agent's success, with its next execution asked for (claim_next), costs the API process
// one statement on the request's path: the group commit's (RecordSuccesses, calling
// device_results_record), which checks the agent's PC, records the result, refills the slot
// and hands out the next execution. The token comes from the process's cache, and nothing
// else is read or written before the answer. This guards the device result path against an
// added round trip (docs/devices.md "How a result is recorded").
func TestAgentSuccessCostsOneStatementOnItsPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var log statementLog
	st, err := store.Open(ctx, testenv.DatabaseURL(t), store.WithQueryTracer(&log))
	require.NoError(t, err)
	t.Cleanup(st.Close)
	listener := st.StartListener(store.ListenerOptions{Logf: t.Logf})
	t.Cleanup(listener.Close)
	srv := httptest.NewServer(api.New(&api.Server{Store: st, Listener: listener, Logf: t.Logf}))
	t.Cleanup(srv.Close)

	_, err = st.CreatePC(ctx, "one", 1)
	require.NoError(t, err)
	for i := range 3 {
		_, _, err := st.CreateDevice(ctx, "one", fmt.Sprintf("one-%d", i))
		require.NoError(t, err)
	}
	_, err = st.CreateDeviceTask(ctx, store.NewDeviceTask{Payload: json.RawMessage(`{}`)})
	require.NoError(t, err)
	_, err = st.Advance(ctx, domain.DefaultDeviceSettings())
	require.NoError(t, err)
	_, token, err := st.CreateToken(ctx, store.NewToken{Role: domain.RoleAgent, PC: "one"})
	require.NoError(t, err)

	post := func(path, body string) []byte {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
		return b
	}
	var page struct {
		Items []api.DeviceExecutionDTO `json:"items"`
	}
	require.NoError(t, json.Unmarshal(post("/api/v1/agent/pcs/one/claim", `{"max": 1}`), &page))
	require.Len(t, page.Items, 1)
	cur := page.Items[0]
	// The token is in the process's cache now, which answers once the listening
	// connection's round trips keep it fresh: a claim with nothing to send then costs its
	// one statement.
	require.Eventually(t, func() bool {
		mark := log.len()
		post("/api/v1/agent/pcs/one/claim", `{"max": 1}`)
		return len(log.since(mark)) == 1
	}, 10*time.Second, 20*time.Millisecond, "the token cache never answered alone")

	for round := range 2 {
		mark := log.len()
		var v api.ResultView
		require.NoError(t, json.Unmarshal(post(fmt.Sprintf("/api/v1/agent/task-devices/%d/result", cur.ID),
			fmt.Sprintf(`{"status": "succeeded", "attempt": %d, "claim_next": true}`, cur.Attempt)), &v))
		sent := log.since(mark)
		require.Equal(t, domain.ExecutionSucceeded, v.Status, "round %d", round)
		require.NotNil(t, v.Next, "round %d: the slot's next execution came with the answer", round)
		require.Len(t, sent, 1, "round %d: the statements of one success: %q", round, sent)
		require.Contains(t, sent[0], "RecordSuccesses", "round %d: the group commit's statement", round)
		cur = *v.Next
	}
}
