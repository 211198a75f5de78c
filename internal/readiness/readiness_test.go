package readiness_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/readiness"
)

// clock is a settable time source for Tracker.Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newTracker(t *testing.T, names ...string) (*readiness.Tracker, *clock) {
	t.Helper()
	clk := &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	// Names are added by Set rather than New, so their "since" comes from the fake clock.
	tr := readiness.New()
	tr.Now = clk.Now
	for _, n := range names {
		tr.Set(n, readiness.ErrNotChecked)
	}
	tr.Logf = t.Logf
	return tr, clk
}

// problemBody decodes both answers of /readyz: status is 503 in a problem and "ready" in
// the 200 body (the shape /readyz has always had).
type problemBody struct {
	Type   string                     `json:"type"`
	Title  string                     `json:"title"`
	Status any                        `json:"status"`
	Detail string                     `json:"detail"`
	Phase  string                     `json:"phase"`
	Checks map[string]readiness.Check `json:"checks"`
}

func get(t *testing.T, h http.Handler, method, path string) (*httptest.ResponseRecorder, problemBody) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	var body problemBody
	if method != http.MethodHead {
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body), "%s", rec.Body.String())
	}
	return rec, body
}

// TestReadyzSaysWhichDependencyAndWhySinceWhen: a failing dependency is named in a 503
// problem+json with its error and how long it has failed; "since" holds across changing
// error texts and moves only when the dependency turns ready or not.
func TestReadyzSaysWhichDependencyAndWhySinceWhen(t *testing.T) {
	t.Parallel()
	tr, clk := newTracker(t, "postgres", "temporal")
	start := clk.Now()
	tr.Set("postgres", errors.New("dial tcp 127.0.0.1:5999: connect: connection refused"))
	tr.Set("temporal", errors.New("waiting for postgres"))
	clk.Add(3 * time.Second)
	tr.Set("postgres", errors.New("dial tcp 127.0.0.1:5999: i/o timeout"))
	clk.Add(1500 * time.Millisecond)

	rec, body := get(t, tr, http.MethodGet, "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"))
	require.NotEmpty(t, rec.Header().Get("Retry-After"))
	require.Equal(t, "https://tickgate.dev/problems/unavailable", body.Type)
	require.EqualValues(t, http.StatusServiceUnavailable, body.Status)
	require.Equal(t, readiness.PhaseStarting, body.Phase)
	require.Equal(t, "not ready: postgres: dial tcp 127.0.0.1:5999: i/o timeout (for 4.5s); temporal: waiting for postgres (for 4.5s)", body.Detail)
	require.Equal(t, readiness.Check{OK: false, Error: "dial tcp 127.0.0.1:5999: i/o timeout", Since: start, For: "4.5s"}, body.Checks["postgres"])

	tr.Set("postgres", nil)
	clk.Add(time.Second)
	tr.Set("temporal", nil)
	tr.Started()
	rec = httptest.NewRecorder()
	tr.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var ok struct {
		Status string                     `json:"status"`
		Phase  string                     `json:"phase"`
		Checks map[string]readiness.Check `json:"checks"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &ok))
	require.Equal(t, "ready", ok.Status)
	require.Equal(t, readiness.PhaseRunning, ok.Phase)
	require.Equal(t, readiness.Check{OK: true, Since: start.Add(4500 * time.Millisecond)}, ok.Checks["postgres"])
	require.Equal(t, readiness.Check{OK: true, Since: start.Add(5500 * time.Millisecond)}, ok.Checks["temporal"])

	// HEAD answers the same status without a body.
	rec = httptest.NewRecorder()
	tr.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, "/readyz", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Zero(t, rec.Body.Len())
}

// TestServeStatusGivesTheStatusAlone: the answer for callers who may not see details says
// ready or not ready, with no dependency's name, error or phase.
func TestServeStatusGivesTheStatusAlone(t *testing.T) {
	t.Parallel()
	tr, _ := newTracker(t, "postgres", "temporal")
	tr.StatusReuse = 0 // each request its own round (TestStatusProbesShareARound shares them)
	tr.Set("postgres", errors.New("dial tcp 10.1.2.3:5432: connect: connection refused"))
	status := http.HandlerFunc(tr.ServeStatus)
	rec, body := get(t, status, http.MethodGet, "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"))
	require.Equal(t, "2", rec.Header().Get("Retry-After"))
	require.Equal(t, problemBody{Type: "https://tickgate.dev/problems/unavailable", Title: "Service Unavailable",
		Status: float64(http.StatusServiceUnavailable), Detail: "not ready"}, body)
	for _, leak := range []string{"10.1.2.3", "postgres", "temporal", "starting"} {
		require.NotContains(t, rec.Body.String(), leak)
	}

	tr.Set("postgres", nil)
	tr.Set("temporal", nil)
	rec = httptest.NewRecorder()
	status.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.JSONEq(t, `{"status":"ready"}`, rec.Body.String())
}

// TestStatusProbesShareARound: however many unauthenticated probes come at once, or
// within StatusReuse of a round, the dependencies are asked once; after it, again.
func TestStatusProbesShareARound(t *testing.T) {
	t.Parallel()
	tr, _ := newTracker(t)
	tr.StatusReuse = time.Hour
	var calls atomic.Int64
	release := make(chan struct{})
	tr.Probe("postgres", func(ctx context.Context) error {
		calls.Add(1)
		<-release
		return nil
	})
	status := http.HandlerFunc(tr.ServeStatus)
	var wg sync.WaitGroup
	codes := make([]int, 50)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := httptest.NewRecorder()
			status.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
			codes[i] = rec.Code
		}()
		if i == 0 {
			require.Eventually(t, func() bool { return calls.Load() == 1 }, 10*time.Second, time.Millisecond, "the first probe runs")
		}
	}
	close(release)
	wg.Wait()
	for _, c := range codes {
		require.Equal(t, http.StatusOK, c)
	}
	require.EqualValues(t, 1, calls.Load(), "fifty probes, one round")

	tr.StatusReuse = 0 // the round is over: the next asks again
	rec := httptest.NewRecorder()
	status.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	require.EqualValues(t, 2, calls.Load())
}

// TestProbesRunOnEveryRequestWithinTheirTimeout: once started, /readyz checks live, so an
// outage and its end both show on the next request; a hanging probe costs at most the
// probe timeout.
func TestProbesRunOnEveryRequestWithinTheirTimeout(t *testing.T) {
	t.Parallel()
	tr, _ := newTracker(t, "postgres", "temporal")
	tr.ProbeTimeout = 50 * time.Millisecond
	var pgDown atomic.Bool
	tr.Probe("postgres", func(context.Context) error {
		if pgDown.Load() {
			return errors.New("connection refused")
		}
		return nil
	})
	var hang atomic.Bool
	tr.Probe("temporal", func(ctx context.Context) error {
		if hang.Load() {
			<-ctx.Done()
			return fmt.Errorf("health check: %w", ctx.Err())
		}
		return nil
	})
	rec, _ := get(t, tr, http.MethodGet, "/readyz")
	require.Equal(t, http.StatusOK, rec.Code)

	pgDown.Store(true)
	rec, body := get(t, tr, http.MethodGet, "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.False(t, body.Checks["postgres"].OK)
	require.Equal(t, "connection refused", body.Checks["postgres"].Error)
	require.True(t, body.Checks["temporal"].OK)

	pgDown.Store(false)
	hang.Store(true)
	began := time.Now()
	rec, body = get(t, tr, http.MethodGet, "/readyz")
	require.Less(t, time.Since(began), 2*time.Second, "a hanging probe is cut at its timeout")
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.True(t, body.Checks["postgres"].OK)
	require.Contains(t, body.Checks["temporal"].Error, "deadline exceeded")

	hang.Store(false)
	rec, _ = get(t, tr, http.MethodGet, "/readyz")
	require.Equal(t, http.StatusOK, rec.Code)
}

// TestWaitRetriesWithCappedBackoffAndLogsEachTry: each failure is recorded and logged with
// the dependency, the error and the next delay, which doubles up to the cap.
func TestWaitRetriesWithCappedBackoffAndLogsEachTry(t *testing.T) {
	t.Parallel()
	tr := readiness.New("postgres")
	tr.Backoff = readiness.Backoff{Min: time.Millisecond, Max: 4 * time.Millisecond}
	var mu sync.Mutex
	var logs []string
	tr.Logf = func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		logs = append(logs, fmt.Sprintf(format, args...))
	}
	attempts := 0
	err := tr.Wait(context.Background(), "postgres", func(context.Context) error {
		attempts++
		if attempts < 6 {
			// While failing, the tracker already says so.
			if attempts > 1 {
				require.False(t, tr.Report(context.Background()).Ready)
			}
			return fmt.Errorf("attempt %d: connection refused", attempts)
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 6, attempts)
	require.Equal(t, []string{
		"waiting for postgres: attempt 1: connection refused (retrying in 1ms)",
		"waiting for postgres: attempt 2: connection refused (retrying in 2ms)",
		"waiting for postgres: attempt 3: connection refused (retrying in 4ms)",
		"waiting for postgres: attempt 4: connection refused (retrying in 4ms)",
		"waiting for postgres: attempt 5: connection refused (retrying in 4ms)",
	}, logs)
	require.True(t, tr.Report(context.Background()).Ready)
}

// TestWaitStopsWithItsContext: a process told to stop while waiting stops waiting, and the
// error keeps both the cause and the last failure.
func TestWaitStopsWithItsContext(t *testing.T) {
	t.Parallel()
	tr := readiness.New("temporal")
	tr.Logf = t.Logf
	tr.Backoff = readiness.Backoff{Min: time.Hour, Max: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	err := tr.Wait(ctx, "temporal", func(context.Context) error { return errors.New("connection refused") })
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "waiting for temporal")
	require.ErrorContains(t, err, "connection refused")
}

// TestNotReadyRefusesEverythingButHealthAndReadiness: while connecting, liveness is fine,
// readiness says not ready (the status alone: no token can be checked yet), and every
// other request gets 503 problem+json with Retry-After; none carries the dependency's
// error text.
func TestNotReadyRefusesEverythingButHealthAndReadiness(t *testing.T) {
	t.Parallel()
	tr, _ := newTracker(t, "postgres", "temporal")
	tr.Set("postgres", errors.New("connect: connection refused"))
	h := tr.NotReady()

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.JSONEq(t, `{"status":"ok"}`, rec.Body.String())

	rec, body := get(t, h, http.MethodGet, "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.Equal(t, "not ready", body.Detail)
	require.Empty(t, body.Checks)
	require.Empty(t, body.Phase)
	require.NotContains(t, rec.Body.String(), "connection refused")
	require.NotContains(t, rec.Body.String(), "postgres")

	for _, req := range []struct{ method, path string }{
		{http.MethodGet, "/api/v1/schedules"}, {http.MethodPost, "/api/v1/schedules"},
		{http.MethodPost, "/readyz"}, {http.MethodGet, "/"},
	} {
		rec, body := get(t, h, req.method, req.path)
		require.Equal(t, http.StatusServiceUnavailable, rec.Code, "%s %s", req.method, req.path)
		require.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"))
		require.Equal(t, "2", rec.Header().Get("Retry-After"))
		require.Equal(t, "not ready: waiting for postgres, temporal (the log says why)", body.Detail)
		require.NotContains(t, rec.Body.String(), "connection refused")
	}
}

// TestSwitchServesTheLatestHandler: the listener serves the not-ready surface, then the
// application, with requests in flight during the swap (run with -race).
func TestSwitchServesTheLatestHandler(t *testing.T) {
	t.Parallel()
	var sw readiness.Switch
	rec, body := get(t, &sw, http.MethodGet, "/anything")
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.True(t, strings.HasPrefix(body.Detail, "not ready"))

	tr, _ := newTracker(t, "postgres")
	sw.Set(tr.NotReady())
	app := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				rec := httptest.NewRecorder()
				sw.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/schedules", nil))
				if rec.Code != http.StatusServiceUnavailable && rec.Code != http.StatusTeapot {
					t.Errorf("unexpected status %d", rec.Code)
				}
			}
		}()
	}
	sw.Set(app)
	wg.Wait()
	rec = httptest.NewRecorder()
	sw.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/schedules", nil))
	require.Equal(t, http.StatusTeapot, rec.Code)
}
