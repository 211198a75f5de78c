package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/client"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/tcpproxy"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/store"
)

// TestTwoAPIsAndTwoWorkersShareOneState runs tickgate as a load-balanced deployment does:
// two `tickgate api` and two `tickgate worker` processes on one database and one Temporal
// namespace, with the clients spread over both APIs. Nothing one API knows may be missing
// from the other:
//   - an Idempotency-Key replay sent to the other API returns the first answer and creates
//     nothing more, and the same key sent to both at once creates once;
//   - a token created through one API works on the other, and revoking it through the other
//     locks it out of both;
//   - each API's /readyz tells its own truth: the API whose PostgreSQL is cut says 503
//     naming postgres while the other says 200 and serves;
//   - the work a client hands to either API is done: a rollout created through one finishes,
//     and schedules created through both fire.
func TestTwoAPIsAndTwoWorkersShareOneState(t *testing.T) {
	t.Parallel()
	bin := buildTickgate(t)
	dbURL := testenv.DatabaseURL(t)
	address := testenv.TemporalAddress(t)
	ns := newNamespace(t)
	queue := fmt.Sprintf("two-apis-%d", time.Now().UnixNano())
	// The second API reaches PostgreSQL through a proxy, so the test can cut it alone.
	pgTarget, err := url.Parse(dbURL)
	require.NoError(t, err)
	pgProxy := tcpproxy.New(t, pgTarget.Host)
	pgProxy.Start()
	proxied := *pgTarget
	proxied.Host = pgProxy.Addr
	common := []string{"TEMPORAL_ADDRESS=" + address, "TEMPORAL_NAMESPACE=" + ns, "TICKGATE_TASK_QUEUE=" + queue}
	env := func(db string, extra ...string) []string {
		return append(append([]string{"DATABASE_URL=" + db}, common...), extra...)
	}
	apis := []string{"http://" + tcpproxy.FreeLoopbackAddr(t), "http://" + tcpproxy.FreeLoopbackAddr(t)}
	workers := []string{"http://" + tcpproxy.FreeLoopbackAddr(t), "http://" + tcpproxy.FreeLoopbackAddr(t)}
	startTickgate(t, bin, "api-1", env(dbURL, "TICKGATE_HTTP_ADDR="+strings.TrimPrefix(apis[0], "http://")), "api")
	startTickgate(t, bin, "api-2", env(proxied.String(), "TICKGATE_HTTP_ADDR="+strings.TrimPrefix(apis[1], "http://")), "api")
	for i, w := range workers {
		startTickgate(t, bin, fmt.Sprintf("worker-%d", i+1), env(dbURL, "TICKGATE_WORKER_METRICS_ADDR="+strings.TrimPrefix(w, "http://")), "worker")
	}
	for _, base := range append(append([]string{}, apis...), workers...) {
		waitReadyz(t, base, http.StatusOK)
	}

	ctx := context.Background()
	st, err := store.Open(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(st.Close)
	_, admin, err := st.CreateToken(ctx, store.NewToken{Role: domain.RoleAdmin, Note: "two-apis e2e"})
	require.NoError(t, err)

	// Each API through the Go client, as a token's holder: every request sent once (no
	// retries), so the test sees each API's own answer.
	as := func(base, token string) *client.Client {
		c, err := client.New(base, client.WithToken(token), client.WithRetries(1, 0), client.WithHTTP(readyzHTTP))
		require.NoError(t, err)
		return c
	}
	// Idempotency-Key: the replay reaches the other API.
	schedule := func(name string) client.CreateScheduleRequest {
		interval, topic, typ := client.Spec_Interval{}, "two-apis", "tick"
		require.NoError(t, interval.FromDuration("1s"))
		return client.CreateScheduleRequest{Name: name, Spec: client.Spec{Interval: &interval},
			Action: client.Action{Kind: client.ActionKindEvent, Topic: &topic, Type: &typ}}
	}
	create := func(base, key, name string) *client.CreateScheduleResponse {
		t.Helper()
		r, err := as(base, admin).CreateScheduleWithResponse(ctx, nil, schedule(name), client.WithIdempotencyKey(key))
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, r.StatusCode(), "%s", r.Body)
		return r
	}
	first := create(apis[0], "create-across-1", "across-1")
	replay := create(apis[1], "create-across-1", "across-1")
	require.Equal(t, "true", replay.HTTPResponse.Header.Get("Idempotent-Replayed"), "the other API replays the stored answer")
	require.JSONEq(t, string(first.Body), string(replay.Body))

	// The same key at both APIs at once: one creates, the other replays or is told the
	// first is in flight (409); never two.
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i, base := range apis {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := as(base, admin).CreateRolloutWithBodyWithResponse(ctx, nil, "application/json",
				teststack.Body(t, map[string]any{"name": "across", "parallel_limit": 4, "tasks": noopTasks(8)}), client.WithIdempotencyKey("rollout-across"))
			codes[i] = client.StatusOf(err)
			if err == nil {
				codes[i] = r.StatusCode()
			}
		}()
	}
	wg.Wait()
	for _, c := range codes {
		require.Contains(t, []int{http.StatusCreated, http.StatusConflict}, c, "codes %v", codes)
	}
	require.Contains(t, codes, http.StatusCreated, "codes %v", codes)
	var schedules, rollouts int
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM schedules WHERE name = 'across-1'),
		(SELECT count(*) FROM rollouts WHERE name = 'across')`).Scan(&schedules, &rollouts))
	require.Equal(t, 1, schedules, "one schedule for one key")
	require.Equal(t, 1, rollouts, "one rollout for one key")

	// Tokens: created through API 1, used on API 2, revoked through API 2, refused by both.
	tok, err := as(apis[0], admin).CreateTokenWithResponse(ctx, client.CreateTokenRequest{Role: client.CreateTokenRequestRoleViewer})
	require.NoError(t, err)
	viewer := *tok.JSON201
	for _, base := range apis {
		_, err := as(base, *viewer.Token).ListSchedulesWithResponse(ctx, nil)
		require.NoError(t, err, base)
		_, err = as(base, *viewer.Token).CreateScheduleWithResponse(ctx, nil, schedule("viewer-may-not"))
		require.Equal(t, http.StatusForbidden, client.StatusOf(err), "%s: a viewer cannot create", base)
	}
	_, err = as(apis[1], admin).RevokeTokenWithResponse(ctx, int64(*viewer.Id))
	require.NoError(t, err)
	for _, base := range apis {
		_, err := as(base, *viewer.Token).ListSchedulesWithResponse(ctx, nil)
		require.Equal(t, http.StatusUnauthorized, client.StatusOf(err), "%s: a revoked token is refused at once", base)
	}

	// The work handed to either API gets done by the two workers.
	create(apis[1], "create-across-2", "across-2")
	require.Eventually(t, func() bool {
		var fired int
		require.NoError(t, st.Pool.QueryRow(ctx, `SELECT count(DISTINCT s.name) FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id
			WHERE s.name IN ('across-1', 'across-2') AND r.fired_at IS NOT NULL`).Scan(&fired))
		return fired == 2
	}, time.Minute, 200*time.Millisecond, "both schedules fire")
	require.Eventually(t, func() bool {
		var done int
		require.NoError(t, st.Pool.QueryRow(ctx, `SELECT count(*) FROM task_runs t JOIN rollouts r ON r.id = t.rollout_id
			WHERE r.name = 'across' AND t.status = 'DONE'`).Scan(&done))
		return done == 8
	}, 2*time.Minute, 200*time.Millisecond, "the rollout created through either API finishes")

	// /readyz: API 2 loses PostgreSQL, API 1 does not; each says so.
	pgProxy.Stop()
	r := waitReadyzAs(t, apis[1], admin, http.StatusServiceUnavailable)
	requireNamesOrSaysNotReady(t, r, "postgres")
	require.Equal(t, http.StatusOK, getReadyz(t, apis[0]).code, "API 1 still reaches PostgreSQL")
	require.True(t, getReadyzAs(t, apis[0], admin).Checks["postgres"].OK, "API 1 tells a reader its checks")
	_, err = as(apis[0], admin).ListSchedulesWithResponse(ctx, nil)
	require.NoError(t, err, "API 1 serves meanwhile")
	pgProxy.Start()
	waitReadyz(t, apis[1], http.StatusOK)
	_, err = as(apis[1], admin).ListSchedulesWithResponse(ctx, nil)
	require.NoError(t, err, "API 2 serves again")
}

// noopTasks are n DML task runs on four databases that the noop executor finishes at once.
func noopTasks(n int) []map[string]any {
	tasks := make([]map[string]any, n)
	for i := range tasks {
		tasks[i] = map[string]any{"database": fmt.Sprintf("db%d", i%4), "type": "DML", "version": fmt.Sprintf("1.%d", i),
			"executor": "noop", "payload": map[string]any{}}
	}
	return tasks
}
