package agentsim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/dev/agentsim"
)

// agentAPI is a stand-in for the agent routes of the HTTP API. Its claim route answers
// claim(n) for the n-th claim; every other POST is a result (or ack) answered by result.
type agentAPI struct {
	claim  func(n int) (status int, items []agentsim.Command)
	result func(w http.ResponseWriter, r *http.Request, n int)

	mu             sync.Mutex
	claims, posts  int
	claimBodies    []map[string]any
	keys           []string // Idempotency-Key of each result post, in order
	bodies         []map[string]any
	deliveredPaths []string
}

func (a *agentAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if strings.HasSuffix(r.URL.Path, "/claim") {
		a.claims++
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		a.claimBodies = append(a.claimBodies, body)
		status, items := a.claim(a.claims)
		if status != http.StatusOK {
			w.WriteHeader(status)
			return
		}
		if items == nil {
			items = []agentsim.Command{}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"items": items})
		return
	}
	a.posts++
	a.keys = append(a.keys, r.Header.Get("Idempotency-Key"))
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	a.bodies = append(a.bodies, body)
	a.deliveredPaths = append(a.deliveredPaths, r.URL.Path)
	a.result(w, r, a.posts)
}

// claimOnce hands out cmd on the first claim and nothing after.
func claimOnce(cmd agentsim.Command) func(int) (int, []agentsim.Command) {
	return func(n int) (int, []agentsim.Command) {
		if n == 1 {
			return http.StatusOK, []agentsim.Command{cmd}
		}
		return http.StatusOK, nil
	}
}

// runUntilAnswered runs a one-PC fleet against api, answering every command with outcome,
// until the first answer has been posted; it returns the fleet (stopped) and the status
// the agent got for that answer.
func runUntilAnswered(t *testing.T, api *agentAPI, outcome agentsim.Outcome, deliverFor time.Duration) (*agentsim.Fleet, int) {
	t.Helper()
	srv := httptest.NewServer(api)
	defer srv.Close()
	answered := make(chan int, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fleet := agentsim.Start(ctx, agentsim.Options{
		BaseURL: srv.URL, PCs: []string{"pc"}, RetryBackoff: time.Millisecond, DeliverFor: deliverFor,
		Decide:     func(agentsim.Command) agentsim.Outcome { return outcome },
		OnAnswered: func(_ agentsim.Command, _ agentsim.Outcome, code int, _ time.Time) { answered <- code },
	})
	var code int
	select {
	case code = <-answered:
	case <-time.After(30 * time.Second):
		t.Fatal("no answer was ever posted")
	}
	cancel()
	fleet.Wait()
	return fleet, code
}

// The result route is unreachable (connection dropped), then not ready (503), then answers:
// the agent resends the same result, under the same Idempotency-Key, until it is recorded.
func TestResultIsResentUntilTheAPIAnswers(t *testing.T) {
	t.Parallel()
	api := &agentAPI{
		claim: claimOnce(agentsim.Command{ID: 7, TaskID: 1, Device: "d", Attempt: 2, Payload: json.RawMessage(`{}`)}),
		result: func(w http.ResponseWriter, _ *http.Request, n int) {
			switch n {
			case 1: // the API died mid-request: no answer at all
				if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
					_ = conn.Close()
				}
			case 2:
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusServiceUnavailable)
			default:
				_, _ = w.Write([]byte(`{}`))
			}
		},
	}
	fleet, code := runUntilAnswered(t, api, agentsim.Succeed, 0)
	require.Equal(t, http.StatusOK, code)

	api.mu.Lock()
	defer api.mu.Unlock()
	require.Equal(t, []string{"result-7-2", "result-7-2", "result-7-2"}, api.keys, "one key across resends")
	for i, b := range api.bodies {
		require.True(t, strings.HasSuffix(api.deliveredPaths[i], "/agent/task-devices/7/result"), api.deliveredPaths[i])
		require.Equal(t, map[string]any{"status": "succeeded", "attempt": float64(2), "claim_next": true}, b)
	}
	// The 503 is always resent by the agent; the dropped connection may already be retried
	// by Go's transport, which replays a request carrying an Idempotency-Key.
	require.GreaterOrEqual(t, fleet.Stats.Resent.Load(), int64(1))
	require.LessOrEqual(t, fleet.Stats.Resent.Load(), int64(2))
	require.EqualValues(t, 1, fleet.Stats.Succeeded.Load())
	require.Zero(t, fleet.Stats.Errors.Load())
}

// A definite answer — a refusal, or 409 for a late result — is not resent; an API that
// stays down, or a delivery still in progress (409 with Retry-After), is resent until
// DeliverFor runs out.
func TestResultResentOnlyWhileWorthIt(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		status                    int
		retryAfter                bool
		wantPosts                 func(n int) bool
		wantErrors, wantConflicts int64
	}{
		"refused":     {http.StatusBadRequest, false, func(n int) bool { return n == 1 }, 1, 0},
		"down":        {http.StatusBadGateway, true, func(n int) bool { return n > 1 }, 1, 0},
		"late":        {http.StatusConflict, false, func(n int) bool { return n == 1 }, 0, 1},
		"in progress": {http.StatusConflict, true, func(n int) bool { return n > 1 }, 0, 1},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			api := &agentAPI{
				claim: claimOnce(agentsim.Command{ID: 1, Attempt: 1}),
				result: func(w http.ResponseWriter, _ *http.Request, _ int) {
					if tc.retryAfter {
						w.Header().Set("Retry-After", "1")
					}
					w.WriteHeader(tc.status)
				},
			}
			// DeliverFor is generous: under a loaded machine (the race detector, other suites) one
			// request alone may outlast a short window and leave no time for a resend.
			fleet, code := runUntilAnswered(t, api, agentsim.Fail, 2*time.Second)
			require.Equal(t, tc.status, code)
			api.mu.Lock()
			defer api.mu.Unlock()
			require.True(t, tc.wantPosts(api.posts), "posts: %d", api.posts)
			require.Equal(t, tc.wantErrors, fleet.Stats.Errors.Load())
			require.Equal(t, tc.wantConflicts, fleet.Stats.Conflicts.Load())
			require.Zero(t, fleet.Stats.Failed.Load())
		})
	}
}

// A claim that fails is tried again after a backoff, each failure counted once, and the
// agent picks its commands up as soon as the API answers.
func TestClaimRecoversAfterFailures(t *testing.T) {
	t.Parallel()
	api := &agentAPI{
		claim: func(n int) (int, []agentsim.Command) {
			switch {
			case n <= 3:
				return http.StatusServiceUnavailable, nil
			case n == 4:
				return http.StatusOK, []agentsim.Command{{ID: 9, Attempt: 1}}
			}
			return http.StatusOK, nil
		},
		result: func(w http.ResponseWriter, _ *http.Request, _ int) { _, _ = w.Write([]byte(`{}`)) },
	}
	fleet, code := runUntilAnswered(t, api, agentsim.Succeed, 0)
	require.Equal(t, http.StatusOK, code)
	require.EqualValues(t, 3, fleet.Stats.Errors.Load())
	require.EqualValues(t, 1, fleet.Stats.Claimed.Load())
	require.EqualValues(t, 1, fleet.Stats.Succeeded.Load())
	api.mu.Lock()
	defer api.mu.Unlock()
	require.Equal(t, 1, api.posts)
}

// The protocol of docs/devices.md: a claim asks for the room the agent has and long-polls
// (wait), and a result asks for the slot's next command (claim_next) and answers that one
// too, without a claim of its own, until an answer carries none.
func TestNextCommandsComeWithTheAnswers(t *testing.T) {
	t.Parallel()
	api := &agentAPI{
		claim: claimOnce(agentsim.Command{ID: 1, TaskID: 1, Attempt: 1}),
		result: func(w http.ResponseWriter, r *http.Request, n int) {
			next := ""
			if n < 3 {
				next = fmt.Sprintf(`, "next": {"id": %d, "task_id": 1, "attempt": 1, "payload": {}}`, n+1)
			}
			_, _ = fmt.Fprintf(w, `{"id": %d%s}`, n, next)
		},
	}
	srv := httptest.NewServer(api)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var claimed, answered []int64
	third := make(chan struct{})
	fleet := agentsim.Start(ctx, agentsim.Options{
		BaseURL: srv.URL, PCs: []string{"pc"}, Max: 5, Wait: time.Second,
		OnClaimed: func(c agentsim.Command, _ time.Time) { mu.Lock(); claimed = append(claimed, c.ID); mu.Unlock() },
		OnAnswered: func(c agentsim.Command, _ agentsim.Outcome, code int, _ time.Time) {
			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, http.StatusOK, code)
			answered = append(answered, c.ID)
			if c.ID == 3 {
				close(third)
			}
		},
	})
	select {
	case <-third:
	case <-time.After(30 * time.Second):
		t.Fatal("the chain of next commands was not answered")
	}
	cancel()
	fleet.Wait()
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []int64{1, 2, 3}, claimed, "the answers' next commands are handed out as claimed")
	require.Equal(t, []int64{1, 2, 3}, answered)
	api.mu.Lock()
	defer api.mu.Unlock()
	require.Equal(t, map[string]any{"max": float64(5), "wait": "1s"}, api.claimBodies[0], "the first claim asks for all its room, long-polling")
	for i, b := range api.bodies {
		require.Equal(t, true, b["claim_next"], "result %d asks for the next command", i)
	}
	require.Equal(t, 3, api.posts, "three results, and no claim for the two next commands")
}

// An older agent (Legacy) sends the shapes of before the shortcuts: no wait, no
// claim_next.
func TestLegacyAgentSendsTheOldShapes(t *testing.T) {
	t.Parallel()
	api := &agentAPI{
		claim:  claimOnce(agentsim.Command{ID: 4, Attempt: 1}),
		result: func(w http.ResponseWriter, _ *http.Request, _ int) { _, _ = w.Write([]byte(`{}`)) },
	}
	srv := httptest.NewServer(api)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	answered := make(chan struct{}, 1)
	fleet := agentsim.Start(ctx, agentsim.Options{
		BaseURL: srv.URL, PCs: []string{"pc"}, Max: 3, Legacy: true,
		OnAnswered: func(agentsim.Command, agentsim.Outcome, int, time.Time) { answered <- struct{}{} },
	})
	select {
	case <-answered:
	case <-time.After(30 * time.Second):
		t.Fatal("no answer")
	}
	cancel()
	fleet.Wait()
	api.mu.Lock()
	defer api.mu.Unlock()
	require.Equal(t, map[string]any{"max": float64(3)}, api.claimBodies[0])
	require.Equal(t, map[string]any{"status": "succeeded", "attempt": float64(1)}, api.bodies[0])
}
