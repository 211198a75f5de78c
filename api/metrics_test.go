package api_test

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/metrics"
)

// TestMetricsEndpoint: /metrics needs a token and serves, in Prometheus text format, the
// HTTP latency by route pattern, the SQL-derived engine figures and the SDK adapter's metrics.
func TestMetricsEndpoint(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	st.JSON(t, http.MethodGet, "/api/v1/schedules/does-not-exist", nil, http.StatusNotFound, nil)
	st.JSON(t, http.MethodGet, "/api/v1/no-such-route-xyz/42", nil, http.StatusNotFound, nil)
	st.JSON(t, http.MethodPost, "/api/v1/schedules", `{"name": 1}`, http.StatusBadRequest, nil)
	// The registry is process-wide: a name of its own per run keeps -count=N honest.
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	h := metrics.TemporalHandler().WithTags(map[string]string{"namespace": "default"})
	h.Counter("temporal_test_counter_" + suffix).Inc(3)
	h.Timer("temporal_test_latency_" + suffix).Record(0)

	status, _ := st.As("").Do(t, http.MethodGet, "/metrics", nil)
	require.Equal(t, http.StatusUnauthorized, status)
	status, _ = st.As(st.NewToken(t, "viewer", "")).Do(t, http.MethodGet, "/metrics", nil)
	require.Equal(t, http.StatusOK, status)

	status, body := st.Do(t, http.MethodGet, "/metrics", nil)
	require.Equal(t, http.StatusOK, status)
	text := string(body)
	for _, want := range []string{
		`tickgate_http_request_duration_seconds_bucket{code="404",method="GET",route="/api/v1/schedules/:name"`,
		`tickgate_http_request_duration_seconds_bucket{code="400",method="POST",route="/api/v1/schedules"`,
		`tickgate_schedule_fire_lateness_seconds_bucket{le="0.1"}`,
		`tickgate_device_refill_latency_seconds_count`,
		`tickgate_promotion_round_seconds_count`,
		`tickgate_metrics_sql_errors{query="slots"} 0`,
		`tickgate_metrics_sql_errors{query="lateness"} 0`,
		`tickgate_metrics_sql_errors{query="refill"} 0`,
		`tickgate_metrics_sql_errors{query="task_runs"} 0`,
		`tickgate_metrics_sql_errors{query="health"} 0`,
		"tickgate_workers_alive 1\n", // the stack's worker, beating
		`tickgate_schedule_runs{status="MISSED"} 0`,
		`temporal_test_counter_` + suffix + `{namespace="default"} 3`,
		`temporal_test_latency_` + suffix + `_seconds_count{namespace="default"} 1`,
		`go_goroutines`,
	} {
		require.True(t, strings.Contains(text, want), "missing %s in\n%s", want, text)
	}
	// Raw ids never become labels.
	require.NotContains(t, text, "does-not-exist")
	require.NotContains(t, text, "no-such-route-xyz")
}

// TestMetricsLabelsAreAClosedSet sends many requests with made-up methods and paths, none
// authenticated (FOOA /healthz, …): none adds a series to /metrics beyond the few labels of
// the closed set (method OTHER, route unmatched). Before, each new method added a
// histogram (16 lines) an anonymous client could grow without bound. Not parallel: the
// series are process-wide, and no other test may add some meanwhile.
func TestMetricsLabelsAreAClosedSet(t *testing.T) {
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	reader := st.As(st.NewToken(t, "viewer", ""))
	series := func() (int, string) {
		status, body := reader.Do(t, http.MethodGet, "/metrics", nil)
		require.Equal(t, http.StatusOK, status)
		n := 0
		for _, line := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(line, "tickgate_http_request_duration_seconds_count{") {
				n++
			}
		}
		return n, string(body)
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		b := make([]byte, 4+rnd.IntN(8))
		for i := range b {
			b[i] = letters[rnd.IntN(len(letters))]
		}
		return string(b)
	}
	paths := []string{"/healthz", "/readyz", "/metrics", "/api/v1/schedules", "/api/v1/schedules/x/pause"}
	send := func(n int) {
		for range n {
			path := paths[rnd.IntN(len(paths))]
			if rnd.IntN(2) == 0 {
				path = "/" + strings.ToLower(word()) + "/" + word()
			}
			req, err := http.NewRequest(word(), st.URL+path, nil)
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
		}
	}
	series() // the scrape's own series
	before, _ := series()
	send(100)
	after, _ := series()
	require.LessOrEqual(t, after-before, 6, "made-up methods and paths add at most the closed set's labels")
	send(300)
	again, _ := series()
	require.Equal(t, after, again, "and no more, however many come")
	for _, m := range []string{"FOOA", "FOOB"} {
		req, err := http.NewRequest(m, st.URL+"/healthz", nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	}
	last, text := series()
	require.Equal(t, again, last)
	require.NotContains(t, text, `method="FOOA"`)
	require.Contains(t, text, `method="OTHER"`)
	require.Contains(t, text, `route="unmatched"`)
}
