package agentsim_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/agentsim"
)

// apiDownThenUp is an agent API whose result route is unreachable (connection dropped),
// then not ready (503), then answers: the agent must resend the same result, under the
// same Idempotency-Key, until it is recorded once.
type apiDownThenUp struct {
	mu       sync.Mutex
	claimed  bool
	attempts []string // Idempotency-Key of each result post, in order
	bodies   []map[string]any
}

func (a *apiDownThenUp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case strings.HasSuffix(r.URL.Path, "/claim"):
		items := []agentsim.Command{}
		if !a.claimed {
			a.claimed = true
			items = append(items, agentsim.Command{ID: 7, TaskID: 1, Device: "d", Attempt: 2, Payload: json.RawMessage(`{}`)})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"items": items})
	case strings.HasSuffix(r.URL.Path, "/task-devices/7/result"):
		a.attempts = append(a.attempts, r.Header.Get("Idempotency-Key"))
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		a.bodies = append(a.bodies, body)
		switch len(a.attempts) {
		case 1: // the API died mid-request: no answer at all
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		case 2:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(`{}`))
		}
	default:
		http.NotFound(w, r)
	}
}

func TestResultIsResentUntilTheAPIAnswers(t *testing.T) {
	t.Parallel()
	api := &apiDownThenUp{}
	srv := httptest.NewServer(api)
	defer srv.Close()
	answered := make(chan int, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fleet := agentsim.Start(ctx, agentsim.Options{
		BaseURL: srv.URL, PCs: []string{"pc"}, RetryBackoff: time.Millisecond,
		Decide:     func(agentsim.Command) agentsim.Outcome { return agentsim.Succeed },
		OnAnswered: func(_ agentsim.Command, _ agentsim.Outcome, code int, _ time.Time) { answered <- code },
	})
	select {
	case code := <-answered:
		require.Equal(t, http.StatusOK, code)
	case <-time.After(30 * time.Second):
		t.Fatal("the result was never delivered")
	}
	cancel()
	fleet.Wait()

	api.mu.Lock()
	defer api.mu.Unlock()
	require.Equal(t, []string{"result-7-2", "result-7-2", "result-7-2"}, api.attempts, "one key across resends")
	for _, b := range api.bodies {
		require.Equal(t, map[string]any{"status": "succeeded", "attempt": float64(2)}, b)
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
			var mu sync.Mutex
			posts, claimed := 0, false
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				if strings.HasSuffix(r.URL.Path, "/claim") {
					items := []agentsim.Command{}
					if !claimed {
						claimed = true
						items = append(items, agentsim.Command{ID: 1, Attempt: 1})
					}
					_ = json.NewEncoder(w).Encode(map[string]any{"items": items})
					return
				}
				posts++
				if tc.retryAfter {
					w.Header().Set("Retry-After", "1")
				}
				w.WriteHeader(tc.status)
			}))
			defer srv.Close()
			answered := make(chan int, 1)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			fleet := agentsim.Start(ctx, agentsim.Options{
				BaseURL: srv.URL, PCs: []string{"pc"}, RetryBackoff: time.Millisecond, DeliverFor: 50 * time.Millisecond,
				Decide:     func(agentsim.Command) agentsim.Outcome { return agentsim.Fail },
				OnAnswered: func(_ agentsim.Command, _ agentsim.Outcome, code int, _ time.Time) { answered <- code },
			})
			select {
			case code := <-answered:
				require.Equal(t, tc.status, code)
			case <-time.After(30 * time.Second):
				t.Fatal("the agent never gave up")
			}
			cancel()
			fleet.Wait()
			mu.Lock()
			defer mu.Unlock()
			require.True(t, tc.wantPosts(posts), "posts: %d", posts)
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
	var mu sync.Mutex
	claims, results := 0, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/claim") {
			claims++
			switch {
			case claims <= 3:
				w.WriteHeader(http.StatusServiceUnavailable)
			case claims == 4:
				_ = json.NewEncoder(w).Encode(map[string]any{"items": []agentsim.Command{{ID: 9, Attempt: 1}}})
			default:
				_ = json.NewEncoder(w).Encode(map[string]any{"items": []agentsim.Command{}})
			}
			return
		}
		results++
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	answered := make(chan int, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fleet := agentsim.Start(ctx, agentsim.Options{
		BaseURL: srv.URL, PCs: []string{"pc"}, RetryBackoff: time.Millisecond,
		Decide:     func(agentsim.Command) agentsim.Outcome { return agentsim.Succeed },
		OnAnswered: func(_ agentsim.Command, _ agentsim.Outcome, code int, _ time.Time) { answered <- code },
	})
	select {
	case code := <-answered:
		require.Equal(t, http.StatusOK, code)
	case <-time.After(30 * time.Second):
		t.Fatal("the command was never claimed and answered")
	}
	cancel()
	fleet.Wait()
	require.EqualValues(t, 3, fleet.Stats.Errors.Load())
	require.EqualValues(t, 1, fleet.Stats.Claimed.Load())
	require.EqualValues(t, 1, fleet.Stats.Succeeded.Load())
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 1, results)
}
