// Package outbound_test drives every door through which tickgate sends an HTTP request on a
// user's word — an http action, a rollout wave's HTTP health check, the rollout http
// executor — against every form of address the outbound rule refuses, on the whole product
// (real PostgreSQL, Temporal, worker and API). It is a package of its own because it sets
// HTTP_PROXY for the whole test binary, before any HTTP client reads it.
package outbound_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/client"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/outbound"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/internal/version"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/store"
)

// proxy is a forward proxy the environment names (HTTP_PROXY): no request may go through it.
var proxy = newCounter("proxy")

func TestMain(m *testing.M) {
	// Set before anything reads it: net/http reads the proxy variables once per process.
	if err := proxy.listen("127.0.0.1:0"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("HTTP_PROXY", "http://"+proxy.addr)
	os.Setenv("http_proxy", "http://"+proxy.addr)
	os.Unsetenv("NO_PROXY")
	os.Unsetenv("no_proxy")
	testenv.Main(m)
}

// counter is an HTTP server that counts the requests it gets and answers them with handle
// (200 when nil).
type counter struct {
	name   string
	addr   string
	hits   atomic.Int64
	handle http.HandlerFunc
}

func newCounter(name string) *counter { return &counter{name: name} }

func (c *counter) listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s: listen on %s: %w", c.name, addr, err)
	}
	c.addr = ln.Addr().String()
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.hits.Add(1)
		if c.handle != nil {
			c.handle(w, r)
			return
		}
		w.WriteHeader(http.StatusOK)
	})}
	go func() { _ = srv.Serve(ln) }()
	return nil
}

func (c *counter) port() string {
	_, p, _ := net.SplitHostPort(c.addr)
	return p
}

// outboundAddress is an address of this machine other than loopback, where the proxy row's
// receiver listens (a request to it is one the environment's proxy would carry).
func outboundAddress(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	t.Fatal("this machine has no IPv4 address but loopback: the HTTP_PROXY row needs one")
	return ""
}

// form is one way of naming an address. refusedAtCreate: the API refuses the URL (the
// address is in it); else it is accepted, and the send must still not reach what it must
// not (a name resolved to loopback, a redirect to loopback, a proxy from the environment).
type form struct {
	name            string
	url             string
	refusedAtCreate bool
	// reaches is true for the proxy row only: the request goes straight to its receiver.
	reaches bool
}

// TestEveryDoorRefusesEveryRefusedForm: for each door and each form, the API refuses the URL
// at create (a 400 naming the field) when the URL names the address, and a send made anyway
// — a schedule or rollout stored past the API, as one stored before the rule would be — is
// refused again when it connects, after DNS resolution, on every redirect, and never through
// a proxy from the environment. Nothing reaches the loopback victim.
func TestEveryDoorRefusesEveryRefusedForm(t *testing.T) {
	victim4, victim6 := newCounter("victim v4"), newCounter("victim v6")
	require.NoError(t, victim4.listen("127.0.0.1:0"))
	require.NoError(t, victim6.listen("[::1]:0"))
	// The redirector is allowed (127.0.0.2, listed below) and sends every request on to the
	// victim.
	redirector := newCounter("redirector")
	redirector.handle = func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+victim4.addr+"/internal-admin", http.StatusFound)
	}
	require.NoError(t, redirector.listen("127.0.0.2:0"))
	direct := newCounter("direct receiver")
	require.NoError(t, direct.listen(net.JoinHostPort(outboundAddress(t), "0")))
	directHost, _, _ := net.SplitHostPort(direct.addr)

	p4, p6 := victim4.port(), victim6.port()
	forms := []form{
		{name: "loopback v4", url: "http://127.0.0.1:" + p4 + "/internal-admin", refusedAtCreate: true},
		{name: "loopback v6", url: "http://[::1]:" + p6 + "/internal-admin", refusedAtCreate: true},
		{name: "mapped v4", url: "http://[::ffff:127.0.0.1]:" + p4 + "/internal-admin", refusedAtCreate: true},
		{name: "link-local", url: "http://169.254.10.10:" + p4 + "/", refusedAtCreate: true},
		{name: "cloud metadata", url: "http://169.254.169.254/latest/meta-data/", refusedAtCreate: true},
		{name: "private", url: "http://10.20.30.40:" + p4 + "/", refusedAtCreate: true},
		{name: "private 192.168", url: "http://192.168.1.1/", refusedAtCreate: true},
		{name: "CGNAT", url: "http://100.100.100.200/latest/meta-data/", refusedAtCreate: true},
		{name: "IETF 192.0.0.0/24", url: "http://192.0.0.170/", refusedAtCreate: true},
		{name: "benchmarking", url: "http://198.18.0.1/", refusedAtCreate: true},
		{name: "reserved", url: "http://240.0.0.1/", refusedAtCreate: true},
		{name: "NAT64", url: "http://[64:ff9b::7f00:1]:" + p4 + "/", refusedAtCreate: true},
		{name: "6to4", url: "http://[2002:7f00:1::1]:" + p4 + "/", refusedAtCreate: true},
		{name: "unspecified", url: "http://0.0.0.0:" + p4 + "/internal-admin", refusedAtCreate: true},
		{name: "unspecified v6", url: "http://[::]:" + p6 + "/internal-admin", refusedAtCreate: true},
		{name: "decimal", url: "http://2130706433:" + p4 + "/internal-admin", refusedAtCreate: true},
		{name: "octal", url: "http://0177.0.0.1:" + p4 + "/internal-admin", refusedAtCreate: true},
		{name: "localhost", url: "http://localhost:" + p4 + "/internal-admin", refusedAtCreate: true},
		{name: "a name resolving to loopback", url: "http://intranet.example.test:" + p4 + "/internal-admin"},
		{name: "a redirect to loopback", url: "http://" + redirector.addr + "/go"},
		{name: "HTTP_PROXY set", url: "http://" + direct.addr + "/hook", reaches: true},
	}

	st := teststack.Start(t, teststack.Options{Configure: func(c *config.Config) {
		rule, err := outbound.Parse("127.0.0.2," + directHost)
		require.NoError(t, err)
		// The test's own DNS: a name that resolves to loopback; any other name, the system's.
		c.HTTPAllow = rule.WithResolver(func(ctx context.Context, host string) ([]netip.Addr, error) {
			if host == "intranet.example.test" {
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			}
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		})
	}})
	starts := &starter.Starter{Client: st.Temporal, TaskQueue: st.Config.TaskQueue}

	doors := []struct {
		name  string
		field string
		// create asks the API to take url (answers the status and the problem's field).
		create func(i int, url string) (int, string)
		// send stores a send to url past the API and starts it; wait answers how it ended.
		send func(i int, url string) (wait func() (failed bool, why string))
	}{
		{"http action", "action.url", func(i int, url string) (int, string) {
			return createProblem(t, st, httpSchedule(fmt.Sprintf("create-%d", i), url))
		}, func(i int, url string) func() (bool, string) {
			return sendHTTPAction(t, st, fmt.Sprintf("send-%d", i), url)
		}},
		{"health check", "strategy.health.http", func(i int, url string) (int, string) {
			return createRolloutProblem(t, st, healthRollout(fmt.Sprintf("create-health-%d", i), url))
		}, func(i int, url string) func() (bool, string) { return sendHealthCheck(t, st, starts, i, url) }},
		{"rollout http executor", "tasks[0].payload.url", func(i int, url string) (int, string) {
			return createRolloutProblem(t, st, executorRollout(fmt.Sprintf("create-exec-%d", i), url))
		}, func(i int, url string) func() (bool, string) { return sendExecutor(t, st, starts, i, url) }},
	}

	type pending struct {
		door, form string
		f          form
		wait       func() (bool, string)
	}
	var sends []pending
	for _, d := range doors {
		for i, f := range forms {
			status, field := d.create(i, f.url)
			if f.refusedAtCreate {
				if status != http.StatusBadRequest || field != d.field {
					t.Errorf("%s, %s (%s): create answered %d naming %q, want a 400 naming %s", d.name, f.name, f.url, status, field, d.field)
				}
			} else if status >= 300 {
				t.Errorf("%s, %s (%s): create answered %d naming %q, want it accepted (the rule judges it at the connection)", d.name, f.name, f.url, status, field)
			}
			sends = append(sends, pending{door: d.name, form: f.name, f: f, wait: d.send(i, f.url)})
		}
	}
	for _, s := range sends {
		failed, why := s.wait()
		t.Logf("%s, %s: failed=%v %s", s.door, s.form, failed, why)
		switch {
		case s.f.reaches:
			if failed {
				t.Errorf("%s, %s: the send failed (%s), want it delivered straight to the receiver", s.door, s.form, why)
			}
		case !failed:
			t.Errorf("%s, %s (%s): the send succeeded, want it refused", s.door, s.form, s.f.url)
		case s.form == "a redirect to loopback" && strings.Contains(why, "a redirect, which is not followed"):
			// An http action and the executor follow no redirect at all.
		case !strings.Contains(why, outbound.ErrRefused.Error()):
			t.Errorf("%s, %s (%s): the send failed with %q, want the outbound rule's refusal", s.door, s.form, s.f.url, why)
		}
	}
	require.Zero(t, victim4.hits.Load(), "nothing reached the loopback victim")
	require.Zero(t, victim6.hits.Load(), "nothing reached the loopback victim (v6)")
	require.Zero(t, proxy.hits.Load(), "no request went through the environment's proxy")
	require.NotZero(t, direct.hits.Load(), "the proxy row's requests went straight to their receiver")
	require.NotZero(t, redirector.hits.Load(), "the redirect row's requests reached the redirector")
}

// createProblem creates a schedule from body through the Go client and answers the status
// and the problem's field ("" when none).
func createProblem(t *testing.T, st *teststack.Stack, body any) (int, string) {
	t.Helper()
	r, err := st.Client(t).CreateScheduleWithBodyWithResponse(context.Background(), nil, "application/json", teststack.Body(t, body))
	if status, field, ok := problemOf(err); ok {
		return status, field
	}
	require.NoError(t, err)
	return r.StatusCode(), ""
}

// createRolloutProblem is createProblem for a rollout.
func createRolloutProblem(t *testing.T, st *teststack.Stack, body any) (int, string) {
	t.Helper()
	r, err := st.Client(t).CreateRolloutWithBodyWithResponse(context.Background(), nil, "application/json", teststack.Body(t, body))
	if status, field, ok := problemOf(err); ok {
		return status, field
	}
	require.NoError(t, err)
	return r.StatusCode(), ""
}

// problemOf is the status and field of the API's problem answer that err is (ok false when
// it is none).
func problemOf(err error) (status int, field string, ok bool) {
	var p *client.Error
	if errors.As(err, &p) {
		return p.Status, p.Field, true
	}
	return 0, "", false
}

func httpSchedule(name, url string) map[string]any {
	return map[string]any{"name": name, "spec": map[string]any{"interval": "1h"},
		"action": map[string]any{"kind": "http", "url": url, "timeout": "2s"}, "retry": map[string]any{"max_attempts": 1}}
}

func healthRollout(name, url string) map[string]any {
	return map[string]any{"name": name, "parallel_limit": 2, "tasks": []map[string]any{
		{"database": "a", "type": "DML", "version": "1", "executor": "noop"},
		{"database": "b", "type": "DML", "version": "1", "executor": "noop"},
	}, "strategy": map[string]any{"waves": []map[string]any{{"databases": []string{"a"}}, {"databases": []string{"b"}}},
		"health": map[string]any{"http": url, "timeout": "2s"}}}
}

func executorRollout(name, url string) map[string]any {
	return map[string]any{"name": name, "parallel_limit": 1, "tasks": []map[string]any{
		{"database": "a", "type": "DML", "version": "1", "executor": "http", "payload": map[string]any{"url": url}},
	}}
}

// eventually polls done every 100 ms for a minute.
func eventually(t *testing.T, what string, done func() (bool, string, bool)) (bool, string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		failed, why, ok := done()
		if ok {
			return failed, why
		}
		if time.Now().After(deadline) {
			return true, what + ": no outcome within a minute"
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sendHTTPAction creates a schedule through the API with a URL the rule allows, then
// changes its URL in the database (as a schedule stored before the rule would hold it) and
// triggers it; its run's outcome is the send's.
func sendHTTPAction(t *testing.T, st *teststack.Stack, name, url string) func() (bool, string) {
	ctx := context.Background()
	st.CreateSchedule(t, httpSchedule(name, "https://example.com/placeholder"))
	_, err := st.Store.Pool.Exec(ctx, `UPDATE schedules SET action = jsonb_set(action, '{url}', to_jsonb($1::text)) WHERE name = $2`, url, name)
	require.NoError(t, err)
	trig := st.Trigger(t, name)
	require.NotNil(t, trig.Run)
	return func() (bool, string) {
		return eventually(t, name, func() (bool, string, bool) {
			var status, why string
			require.NoError(t, st.Store.Pool.QueryRow(ctx, `SELECT status, error FROM schedule_runs WHERE id = $1`, trig.Run.ID).Scan(&status, &why))
			return status != string(domain.RunSucceeded), why, status != string(domain.RunRunning)
		})
	}
}

// newTask is a task of a rollout stored past the API.
func newTask(t *testing.T, db string, executor domain.Executor, payload string) store.NewTaskRun {
	key, err := version.Parse("1")
	require.NoError(t, err)
	return store.NewTaskRun{Database: db, Type: domain.TaskDML, Version: "1", VersionKey: key, Executor: executor, Payload: json.RawMessage(payload)}
}

// startRollout stores a rollout past the API and starts it, as the API would.
func startRollout(t *testing.T, st *teststack.Stack, starts *starter.Starter, r store.NewRollout) int64 {
	ctx := context.Background()
	created, err := st.Store.CreateRolloutWith(ctx, r)
	require.NoError(t, err)
	require.NoError(t, starts.StartRollout(ctx, created.ID))
	require.NoError(t, starts.NudgePromoter(ctx))
	return created.ID
}

// sendHealthCheck runs a two-wave rollout whose health check GETs url after wave 1: the
// first wave's outcome is the send's.
func sendHealthCheck(t *testing.T, st *teststack.Stack, starts *starter.Starter, i int, url string) func() (bool, string) {
	id := startRollout(t, st, starts, store.NewRollout{Name: fmt.Sprintf("health-%d", i), ParallelLimit: 2,
		Strategy: &domain.Strategy{Waves: []domain.Wave{{Databases: []string{"a"}}, {Databases: []string{"b"}}},
			Health: &domain.HealthCheck{HTTP: url, Timeout: "2s"}},
		Tasks: []store.NewTaskRun{newTask(t, "a", domain.ExecutorNoop, `{}`), newTask(t, "b", domain.ExecutorNoop, `{}`)}})
	return func() (bool, string) {
		return eventually(t, fmt.Sprintf("health rollout %d", id), func() (bool, string, bool) {
			var status, reason string
			require.NoError(t, st.Store.Pool.QueryRow(context.Background(),
				`SELECT status, reason FROM rollout_waves WHERE rollout_id = $1 AND wave = 1`, id).Scan(&status, &reason))
			return status == "FAILED", reason, status == "FAILED" || status == "PASSED"
		})
	}
}

// sendExecutor runs a rollout of one http task POSTing to url: the task's outcome is the
// send's.
func sendExecutor(t *testing.T, st *teststack.Stack, starts *starter.Starter, i int, url string) func() (bool, string) {
	payload, _ := json.Marshal(map[string]any{"url": url})
	id := startRollout(t, st, starts, store.NewRollout{Name: fmt.Sprintf("exec-%d", i), ParallelLimit: 1,
		Tasks: []store.NewTaskRun{newTask(t, "a", domain.ExecutorHTTP, string(payload))}})
	return func() (bool, string) {
		return eventually(t, fmt.Sprintf("executor rollout %d", id), func() (bool, string, bool) {
			var status string
			var why *string
			require.NoError(t, st.Store.Pool.QueryRow(context.Background(),
				`SELECT status, error FROM task_runs WHERE rollout_id = $1`, id).Scan(&status, &why))
			text := ""
			if why != nil {
				text = *why
			}
			return status != "DONE", text, status == "DONE" || status == "FAILED"
		})
	}
}
