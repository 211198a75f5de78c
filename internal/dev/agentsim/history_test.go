package agentsim_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/dev/agentsim"
)

// The history holds each claim and result as the agent saw it: a command handed out with a
// result's answer is a claim by the same holder within that request, and a result that
// never got a definite answer is kept with status 0 (its outcome unknown).
func TestHistoryRecordsEachOperation(t *testing.T) {
	t.Parallel()
	api := &agentAPI{
		claim: claimOnce(agentsim.Command{ID: 1, TaskID: 1, Attempt: 1}),
		result: func(w http.ResponseWriter, r *http.Request, n int) {
			switch n {
			case 1:
				_, _ = fmt.Fprint(w, `{"id": 1, "next": {"id": 2, "task_id": 1, "attempt": 3, "payload": {}}}`)
			default: // the result of 2 is never taken
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		},
	}
	srv := httptest.NewServer(api)
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "history.jsonl")
	h, err := agentsim.CreateHistory(path)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gaveUp := make(chan struct{})
	fleet := agentsim.Start(ctx, agentsim.Options{
		BaseURL: srv.URL, PCs: []string{"pc"}, Wait: time.Second, RetryBackoff: time.Millisecond, DeliverFor: 50 * time.Millisecond,
		Record: h.Record,
		OnAnswered: func(c agentsim.Command, _ agentsim.Outcome, _ int, _ time.Time) {
			if c.ID == 2 {
				close(gaveUp)
			}
		},
	})
	select {
	case <-gaveUp:
	case <-time.After(30 * time.Second):
		t.Fatal("the second command was not answered")
	}
	cancel()
	fleet.Wait()
	require.NoError(t, h.Close())

	events, err := agentsim.ReadHistory(path)
	require.NoError(t, err)
	require.Len(t, events, 4)
	kinds := make([]string, len(events))
	for i, e := range events {
		kinds[i] = fmt.Sprintf("%s %d/%d %d", e.Op, e.Exec, e.Attempt, e.Code)
		require.LessOrEqual(t, e.Call, e.Return, kinds[i])
		require.Equal(t, events[0].Holder, e.Holder, "one holder answers the chain")
	}
	require.Equal(t, []string{"claim 1/1 200", "result 1/1 200", "claim 2/3 200", "result 2/3 0"}, kinds)
	require.Equal(t, "succeeded", events[1].Status)
	require.Equal(t, events[1].Call, events[2].Call, "the next command came in the result's request")
	require.Equal(t, events[1].Return, events[2].Return)
}
