package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/store"
)

// agentPost sends an agent's POST with an optional Idempotency-Key and returns the status,
// the body and the headers (checked against the contract, as Stack.Do is).
func agentPost(t *testing.T, st *teststack.Stack, token, path, key, body string) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, st.URL+path, bytes.NewBufferString(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := teststack.ContractClient(t).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b, resp.Header
}

// The agent protocol's result (docs/devices.md): a 200 means the result committed; with
// claim_next the answer carries the slot's next execution, SENT to this agent; the same
// Idempotency-Key gets the first answer again, byte for byte, and changes nothing; the key
// with another body is 422; and a result for an attempt no longer in flight is 409.
func TestAgentResultCarriesTheNextExecutionAndReplaysItsFirstAnswer(t *testing.T) {
	t.Parallel()
	st := deviceStack(t, nil)
	st.JSON(t, http.MethodPost, "/api/v1/pcs", map[string]any{"name": "np", "device_capacity": 1}, http.StatusCreated, nil)
	for i := 0; i < 3; i++ {
		st.JSON(t, http.MethodPost, "/api/v1/devices", map[string]any{"pc": "np", "serial": fmt.Sprintf("np-%d", i)}, http.StatusCreated, nil)
	}
	agent := st.NewToken(t, domain.RoleAgent, "np")
	st.JSON(t, http.MethodPost, "/api/v1/tasks", map[string]any{"payload": map[string]any{"cmd": "flash"}}, http.StatusCreated, nil)

	var page struct {
		Items []api.DeviceExecutionDTO `json:"items"`
	}
	code, b, _ := agentPost(t, st, agent, "/api/v1/agent/pcs/np/claim", "", `{"max": 1, "wait": "30s"}`)
	require.Equal(t, http.StatusOK, code, "%s", b)
	require.NoError(t, json.Unmarshal(b, &page))
	require.Len(t, page.Items, 1, "the long-poll answered with the task's first execution")
	first := page.Items[0]

	resultPath := fmt.Sprintf("/api/v1/agent/task-devices/%d/result", first.ID)
	body := fmt.Sprintf(`{"status": "succeeded", "attempt": %d, "claim_next": true}`, first.Attempt)
	code, answer, h := agentPost(t, st, agent, resultPath, "r-1", body)
	require.Equal(t, http.StatusOK, code, "%s", answer)
	require.Empty(t, h.Get(api.ReplayedHeader))
	var res api.ResultView
	require.NoError(t, json.Unmarshal(answer, &res))
	require.Equal(t, domain.ExecutionSucceeded, res.Status)
	require.NotNil(t, res.Next, "the slot's next execution came with the answer")
	require.Equal(t, domain.ExecutionSent, res.Next.Status)
	require.Equal(t, first.Slot, res.Next.Slot, "in the slot the result freed")
	require.JSONEq(t, `{"cmd": "flash"}`, string(res.Next.Payload))
	require.NotNil(t, res.Next.TimeoutAt)

	// Committed: every other reader sees it.
	td, err := st.Store.GetDeviceExecution(context.Background(), first.ID)
	require.NoError(t, err)
	require.Equal(t, domain.ExecutionSucceeded, td.Status)
	next, err := st.Store.GetDeviceExecution(context.Background(), res.Next.ID)
	require.NoError(t, err)
	require.Equal(t, domain.ExecutionSent, next.Status)
	require.Equal(t, []string{"CREATED#1", "SENT#1"}, deviceExecutionEventTypes(t, st, res.Next.ID))

	code, again, h := agentPost(t, st, agent, resultPath, "r-1", body)
	require.Equal(t, http.StatusOK, code, "%s", again)
	require.Equal(t, "true", h.Get(api.ReplayedHeader))
	require.Equal(t, string(answer), string(again), "the replay is the first answer")
	require.Equal(t, []string{"SENT#1", "SUCCEEDED#1"}, deviceExecutionEventTypes(t, st, first.ID)[1:], "recorded once")

	code, b, _ = agentPost(t, st, agent, resultPath, "r-1", `{"status": "failed"}`)
	require.Equal(t, http.StatusUnprocessableEntity, code, "%s", b)
	code, b, _ = agentPost(t, st, agent, resultPath, "r-2", body)
	require.Equal(t, http.StatusConflict, code, "a second result for the attempt: %s", b)
	require.Contains(t, deviceExecutionEventTypes(t, st, first.ID), "LATE_RESULT#1")

	// Without claim_next (an older agent) the answer is the execution alone, and the
	// refilled execution waits for a claim.
	nextPath := fmt.Sprintf("/api/v1/agent/task-devices/%d/result", res.Next.ID)
	code, b, _ = agentPost(t, st, agent, nextPath, "", `{"status": "succeeded"}`)
	require.Equal(t, http.StatusOK, code, "%s", b)
	var plain map[string]any
	require.NoError(t, json.Unmarshal(b, &plain))
	require.NotContains(t, plain, "next")
	code, b, _ = agentPost(t, st, agent, "/api/v1/agent/pcs/np/claim", "", `{"max": 5}`)
	require.Equal(t, http.StatusOK, code, "%s", b)
	require.NoError(t, json.Unmarshal(b, &page))
	require.Len(t, page.Items, 1, "the third device's execution, claimed the older way")
}

// A long-poll claim on an idle PC answers once work for it appears, woken through
// LISTEN/NOTIFY, not by polling; a wait out of range is refused naming the field.
func TestAgentClaimLongPollWakesWhenWorkAppears(t *testing.T) {
	t.Parallel()
	st := deviceStack(t, nil)
	st.JSON(t, http.MethodPost, "/api/v1/pcs", map[string]any{"name": "lp", "device_capacity": 2}, http.StatusCreated, nil)
	st.JSON(t, http.MethodPost, "/api/v1/devices", map[string]any{"pc": "lp", "serial": "lp-0"}, http.StatusCreated, nil)
	agent := st.NewToken(t, domain.RoleAgent, "lp")

	code, b, _ := agentPost(t, st, agent, "/api/v1/agent/pcs/lp/claim", "", `{"wait": "2m"}`)
	require.Equal(t, http.StatusBadRequest, code, "%s", b)
	var p api.Problem
	require.NoError(t, json.Unmarshal(b, &p))
	require.Equal(t, "wait", p.Field)

	type claim struct {
		code int
		body []byte
	}
	got := make(chan claim, 1)
	go func() {
		// A minute: were it not woken, the answer would come empty after it.
		code, b, _ := agentPost(t, st, agent, "/api/v1/agent/pcs/lp/claim", "", `{"max": 2, "wait": "1m"}`)
		got <- claim{code, b}
	}()
	st.JSON(t, http.MethodPost, "/api/v1/tasks", map[string]any{"payload": map[string]any{}}, http.StatusCreated, nil)
	c := <-got
	require.Equal(t, http.StatusOK, c.code, "%s", c.body)
	var page struct {
		Items []api.DeviceExecutionDTO `json:"items"`
	}
	require.NoError(t, json.Unmarshal(c.body, &page))
	require.Len(t, page.Items, 1, "the long-poll woke with the new task's execution")
}

// A token revoked through one API process is refused by every API process on its next
// request: each process caches tokens (no statement per request) and drops them when the
// revocation's notification arrives, and the revocation answers only once every listening
// process has acknowledged it.
func TestRevokedTokenIsRefusedByEveryAPIProcessOnItsNextRequest(t *testing.T) {
	t.Parallel()
	a := deviceStack(t, nil)
	ctx := context.Background()
	// A second API process on the same database: its own pool and its own listener.
	st2, err := store.Open(ctx, a.Config.DatabaseURL)
	require.NoError(t, err)
	t.Cleanup(st2.Close)
	l2 := st2.StartListener(store.ListenerOptions{Logf: t.Logf})
	t.Cleanup(l2.Close)
	srv := httptest.NewServer(api.New(&api.Server{Store: st2, Temporal: a.Temporal, Listener: l2, Logf: t.Logf,
		Starter: &starter.Starter{Client: a.Temporal, TaskQueue: a.Config.TaskQueue}}))
	t.Cleanup(srv.Close)
	b := *a
	b.URL = srv.URL

	for round := 0; round < 3; round++ {
		row, viewer, err := a.Store.CreateToken(ctx, store.NewToken{Role: domain.RoleViewer})
		require.NoError(t, err)
		for _, s := range []*teststack.Stack{a.As(viewer), b.As(viewer)} {
			for i := 0; i < 3; i++ { // cached after the first
				s.JSON(t, http.MethodGet, "/api/v1/pcs", nil, http.StatusOK, nil)
			}
		}
		revoker, other := a, &b
		if round%2 == 1 {
			revoker, other = &b, a
		}
		revoker.JSON(t, http.MethodDelete, fmt.Sprintf("/api/v1/tokens/%d", row.ID), nil, http.StatusOK, nil)
		code, body := other.As(viewer).Do(t, http.MethodGet, "/api/v1/pcs", nil)
		require.Equal(t, http.StatusUnauthorized, code, "round %d: the other process: %s", round, body)
		code, body = revoker.As(viewer).Do(t, http.MethodGet, "/api/v1/pcs", nil)
		require.Equal(t, http.StatusUnauthorized, code, "round %d: the revoking process: %s", round, body)
	}
}
