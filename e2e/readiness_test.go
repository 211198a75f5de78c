package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/types/known/durationpb"

	tickgate "github.com/tickgate/tickgate/client"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/readiness"
	"github.com/tickgate/tickgate/internal/testing/tcpproxy"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/worker"
	"github.com/tickgate/tickgate/workflows"
)

// TestReadinessWaitsForDependenciesAndFollowsOutages starts `tickgate api` and `tickgate
// worker` while PostgreSQL and Temporal are unreachable (their addresses are proxies that
// do not listen yet): both answer at once, /readyz says not ready — the worker's (on its
// own port) says what it waits for and why, the API's says no more than "not ready" to
// anyone, as no token can be checked yet — and API routes answer 503 with Retry-After. Once
// the proxies listen, both turn ready without a restart and the API works. Then
// PostgreSQL, and after it Temporal, go away and come back: /readyz names the missing one
// (the API's to a reader's token, when it can check one) and recovers by itself.
func TestReadinessWaitsForDependenciesAndFollowsOutages(t *testing.T) {
	t.Parallel()
	bin := buildTickgate(t)
	dbURL := testenv.DatabaseURL(t)
	pgTarget, err := url.Parse(dbURL)
	require.NoError(t, err)
	pgProxy := tcpproxy.New(t, pgTarget.Host)
	temporalProxy := tcpproxy.New(t, testenv.TemporalAddress(t))
	proxiedDB := *pgTarget
	proxiedDB.Host = pgProxy.Addr
	apiURL, workerURL := "http://"+tcpproxy.FreeLoopbackAddr(t), "http://"+tcpproxy.FreeLoopbackAddr(t)
	env := []string{
		"DATABASE_URL=" + proxiedDB.String(), "TEMPORAL_ADDRESS=" + temporalProxy.Addr,
		// A namespace of its own: this worker's singletons (the schedule planner takes
		// over the schedules of *its* database) must not touch other tests'.
		"TEMPORAL_NAMESPACE=" + newNamespace(t), "TICKGATE_TASK_QUEUE=readiness",
		"TICKGATE_HTTP_ADDR=" + strings.TrimPrefix(apiURL, "http://"),
		"TICKGATE_WORKER_METRICS_ADDR=" + strings.TrimPrefix(workerURL, "http://"),
	}
	_, apiLog := startTickgate(t, bin, "api", env, "api")
	startTickgate(t, bin, "worker", env, "worker")
	processes := map[string]string{"api": apiURL, "worker": workerURL}

	// Neither dependency reachable: both processes serve at once; the worker says why.
	var r readyzAnswer
	require.Eventually(t, func() bool {
		r = getReadyz(t, workerURL)
		return r.code == http.StatusServiceUnavailable && r.Checks["postgres"].Error != readiness.ErrNotChecked.Error()
	}, 30*time.Second, 50*time.Millisecond, "worker: /readyz never said what it waits for")
	require.Equal(t, "application/problem+json", r.contentType)
	require.Equal(t, readiness.PhaseStarting, r.Phase)
	require.Contains(t, r.Detail, "not ready: postgres: ")
	require.False(t, r.Checks["postgres"].OK)
	require.Contains(t, r.Checks["postgres"].Error, "connection refused")
	require.Contains(t, r.Checks["postgres"].Error, pgProxy.Addr)
	require.NotEmpty(t, r.Checks["postgres"].For)
	require.Equal(t, "waiting for postgres", r.Checks["temporal"].Error)
	r = waitReadyz(t, apiURL, http.StatusServiceUnavailable)
	require.Equal(t, "application/problem+json", r.contentType)
	require.Equal(t, "not ready", r.Detail, "the API's /readyz gives no detail to a caller it cannot check")
	require.Empty(t, r.Checks)
	require.Empty(t, r.Phase)
	for name, base := range processes {
		_, err := probe(t, base).HealthWithResponse(context.Background())
		require.NoError(t, err, "%s: alive while not ready", name)
	}
	// The API's own routes, through the Go client (one attempt each: the test reads each answer).
	api := func(token string) *tickgate.Client {
		c, err := tickgate.New(apiURL, tickgate.WithToken(token), tickgate.WithRetries(1, 0), tickgate.WithHTTP(readyzHTTP))
		require.NoError(t, err)
		return c
	}
	ctx := context.Background()
	_, err = api("").ListSchedulesWithResponse(ctx, nil)
	var refused *tickgate.Error
	require.ErrorAs(t, err, &refused)
	require.Equal(t, http.StatusServiceUnavailable, refused.Status)
	require.Equal(t, "application/problem+json", refused.ContentType)
	require.NotEmpty(t, refused.RetryAfter)
	require.Equal(t, "not ready: waiting for postgres, temporal (the log says why)", refused.Detail)
	// Each retry is logged with the dependency, the error and the next delay.
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(apiLog)
		require.NoError(t, err)
		return strings.Contains(string(b), "waiting for postgres: ") && strings.Contains(string(b), "connection refused (retrying in 400ms)")
	}, 10*time.Second, 50*time.Millisecond)

	// The dependencies appear: both turn ready by themselves.
	cameUp := time.Now()
	pgProxy.Start()
	temporalProxy.Start()
	for _, name := range []string{"api", "worker"} {
		waitReadyz(t, processes[name], http.StatusOK)
		t.Logf("%s: /readyz 503→200 in %s after the proxies came up", name, time.Since(cameUp).Round(time.Millisecond))
	}

	// Real API calls, through both proxies (creating a schedule starts its workflow).
	st, err := store.Open(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(st.Close)
	_, token, err := st.CreateToken(context.Background(), store.NewToken{Role: domain.RoleAdmin, Note: "readiness e2e"})
	require.NoError(t, err)
	createSchedule := func(name string) {
		t.Helper()
		_, err := api(token).CreateScheduleWithBodyWithResponse(ctx, nil, "application/json", teststack.Body(t, map[string]any{
			"name": name, "spec": map[string]any{"interval": "1h"},
			"action": map[string]any{"kind": "event", "topic": "t", "type": "x"},
		}))
		require.NoError(t, err, name)
	}
	createSchedule("readiness-1")
	// Ready: the API's /readyz gives its checks to a reader's token, the status alone to anyone.
	require.Equal(t, http.StatusOK, getReadyz(t, apiURL).code)
	require.Empty(t, getReadyz(t, apiURL).Checks)
	require.True(t, getReadyzAs(t, apiURL, token).Checks["postgres"].OK)
	list, err := api(token).ListSchedulesWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Contains(t, string(list.Body), `"readiness-1"`)

	// PostgreSQL goes away (listener and live connections) and comes back. The worker names
	// it; so does the API to a reader's token while it can still check it (its cache stays
	// fresh a moment), and says "not ready" alone once it cannot.
	pgProxy.Stop()
	r = waitReadyz(t, workerURL, http.StatusServiceUnavailable)
	require.Equal(t, readiness.PhaseRunning, r.Phase)
	require.False(t, r.Checks["postgres"].OK)
	require.NotEmpty(t, r.Checks["postgres"].Error)
	require.Contains(t, r.Detail, "not ready: postgres: ")
	require.True(t, r.Checks["temporal"].OK)
	requireNamesOrSaysNotReady(t, waitReadyzAs(t, apiURL, token, http.StatusServiceUnavailable), "postgres")
	// Meanwhile a request is refused as worth resending — 503 with Retry-After — not
	// answered 500 as if the request itself had broken something.
	_, err = api(token).ListSchedulesWithResponse(ctx, nil)
	require.ErrorAs(t, err, &refused)
	require.Equal(t, http.StatusServiceUnavailable, refused.Status, "%v", err)
	require.Equal(t, "application/problem+json", refused.ContentType)
	require.Equal(t, "1", refused.RetryAfter)
	require.Contains(t, refused.Detail, "database unavailable")
	back := time.Now()
	pgProxy.Start()
	for _, name := range []string{"api", "worker"} {
		waitReadyz(t, processes[name], http.StatusOK)
		t.Logf("%s: /readyz 503→200 in %s after PostgreSQL came back", name, time.Since(back).Round(time.Millisecond))
	}
	_, err = api(token).ListSchedulesWithResponse(ctx, nil)
	require.NoError(t, err, "the pool reconnected")

	// Temporal goes away and comes back: each names it (the API to a reader's token).
	temporalProxy.Stop()
	for name, base := range processes {
		r := waitReadyzAs(t, base, token, http.StatusServiceUnavailable)
		require.False(t, r.Checks["temporal"].OK, name)
		require.NotEmpty(t, r.Checks["temporal"].Error, name)
		require.Contains(t, r.Detail, "temporal: ", name)
		require.True(t, r.Checks["postgres"].OK, name)
	}
	back = time.Now()
	temporalProxy.Start()
	for _, name := range []string{"api", "worker"} {
		waitReadyz(t, processes[name], http.StatusOK)
		t.Logf("%s: /readyz 503→200 in %s after Temporal came back", name, time.Since(back).Round(time.Millisecond))
	}
	createSchedule("readiness-2") // the Temporal client reconnected
}

// readyzAnswer is either answer of /readyz: a 503 problem (status 503) or the 200 body
// (status "ready"); both carry phase and checks.
type readyzAnswer struct {
	code        int
	contentType string
	Status      any                        `json:"status"`
	Detail      string                     `json:"detail"`
	Phase       string                     `json:"phase"`
	Checks      map[string]readiness.Check `json:"checks"`
}

// probe is the Go client of a process's /healthz and /readyz (the API's or the worker's:
// both serve them), one attempt a request, with token when one is given.
func probe(t *testing.T, base string, token ...string) *tickgate.Client {
	t.Helper()
	opts := []tickgate.Option{tickgate.WithRetries(1, 0), tickgate.WithHTTP(readyzHTTP)}
	if len(token) > 0 && token[0] != "" {
		opts = append(opts, tickgate.WithToken(token[0]))
	}
	c, err := tickgate.New(base, opts...)
	require.NoError(t, err)
	return c
}

// getReadyz asks base's /readyz without a token; code is 0 while nothing listens there yet.
func getReadyz(t *testing.T, base string) readyzAnswer {
	t.Helper()
	return getReadyzAs(t, base, "")
}

// getReadyzAs asks base's /readyz with token (none when empty).
func getReadyzAs(t *testing.T, base, token string) readyzAnswer {
	t.Helper()
	resp, err := probe(t, base, token).ReadyWithResponse(context.Background())
	var r readyzAnswer
	var body []byte
	var refused *tickgate.Error
	switch {
	case err == nil:
		r.code, r.contentType, body = resp.StatusCode(), resp.HTTPResponse.Header.Get("Content-Type"), resp.Body
	case errors.As(err, &refused):
		r.code, r.contentType, body = refused.Status, refused.ContentType, refused.Body
	default:
		return readyzAnswer{} // nothing listens there yet
	}
	require.NoError(t, json.Unmarshal(body, &r), "%s", body)
	return r
}

// waitReadyz waits until base's /readyz answers code and returns that answer.
func waitReadyz(t *testing.T, base string, code int) readyzAnswer {
	t.Helper()
	return waitReadyzAs(t, base, "", code)
}

// waitReadyzAs is waitReadyz with token.
func waitReadyzAs(t *testing.T, base, token string, code int) readyzAnswer {
	t.Helper()
	var r readyzAnswer
	require.Eventually(t, func() bool {
		r = getReadyzAs(t, base, token)
		return r.code == code
	}, 60*time.Second, 50*time.Millisecond, "%s/readyz never answered %d; last: %d %+v", base, code, r.code, r)
	return r
}

// requireNamesOrSaysNotReady: an API's /readyz answer to a reader's token while PostgreSQL
// is away names the failing dependency when the API could still check the token, and is
// the status alone when it could not.
func requireNamesOrSaysNotReady(t *testing.T, r readyzAnswer, dependency string) {
	t.Helper()
	if len(r.Checks) == 0 {
		require.Equal(t, "not ready", r.Detail, "%+v", r)
		return
	}
	require.False(t, r.Checks[dependency].OK, "%+v", r)
	require.Contains(t, r.Detail, dependency+": ", "%+v", r)
}

// readyzHTTP bounds every request: /readyz answers within its probe timeout.
var readyzHTTP = &http.Client{Timeout: 15 * time.Second}

// newNamespace registers a fresh Temporal namespace and waits until it serves requests.
func newNamespace(t *testing.T) string {
	t.Helper()
	tc := testenv.TemporalClient(t)
	ns := fmt.Sprintf("readiness-%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := tc.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: ns, WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour),
	})
	require.NoError(t, err)
	// The server's namespace registry picks a new namespace up after a moment; a worker
	// started before that would fail to start.
	require.Eventually(t, func() bool {
		_, err := tc.WorkflowService().ListWorkflowExecutions(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: ns, PageSize: 1})
		return err == nil
	}, 30*time.Second, 200*time.Millisecond)
	// The dev server registers tickgate's search attributes in "default" only; every
	// tickgate workflow sets them.
	require.NoError(t, worker.RegisterSearchAttributes(ctx, worker.Deps{Config: config.Config{TemporalNamespace: ns}, Temporal: tc}))
	require.Eventually(t, func() bool {
		have, err := tc.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
		return err == nil && len(have.GetCustomAttributes()) >= len(worker.SearchAttributes)
	}, 30*time.Second, 200*time.Millisecond)
	// Listed is not yet usable: the real server's frontend maps a namespace's search
	// attributes from a cache it refreshes on its own schedule, and refuses a start that
	// sets one it has not mapped yet. A probe start setting every one of them says when.
	probe, err := client.Dial(client.Options{HostPort: testenv.TemporalAddress(t), Namespace: ns})
	require.NoError(t, err)
	defer probe.Close()
	attrs := temporal.NewSearchAttributes(
		workflows.KindKey.ValueSet("probe"), workflows.ScheduleKey.ValueSet("probe"), workflows.RolloutKey.ValueSet("probe"),
		workflows.PCKey.ValueSet("probe"), workflows.TaskKey.ValueSet("probe"))
	require.Eventually(t, func() bool {
		run, err := probe.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID: "search-attribute-probe", TaskQueue: "search-attribute-probe", TypedSearchAttributes: attrs,
			WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING,
		}, "SearchAttributeProbe")
		if err != nil {
			return false
		}
		require.NoError(t, probe.TerminateWorkflow(ctx, run.GetID(), run.GetRunID(), "probe only"))
		return true
	}, 30*time.Second, 200*time.Millisecond, "search attributes never usable in %s", ns)
	return ns
}
