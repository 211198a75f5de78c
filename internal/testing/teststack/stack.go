// Package teststack runs the whole of tickgate for an end-to-end test: a real PostgreSQL
// database and Temporal dev server (from testenv), a worker on its own task queue, and the
// HTTP API on a loopback port.
package teststack

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/deviceengine"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/telemetry"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/worker"
)

// Stack is one running tickgate.
type Stack struct {
	URL      string // API base, e.g. http://127.0.0.1:1234
	Store    *store.Store
	Temporal client.Client
	Config   config.Config
	// Headers are sent with every request made through Do: by default the admin token's
	// Authorization header.
	Headers map[string]string
	// AdminToken is the admin API token the stack created for itself.
	AdminToken string
}

// Options adjust the stack's configuration before it starts.
type Options struct {
	Configure func(*config.Config)
	// Workers is how many worker processes (in-process workers) poll the task queue; 1 by default.
	Workers int
	// NoWorker starts no worker at all: no workflow runs (the dispatcher neither), so what
	// changes is what the API itself does, or what the test does through the store.
	NoWorker bool
	// Telemetry turns tracing on as the binary does with OTEL_* set: the Temporal client
	// (and the workers made from it) carries the tracing interceptor, the pool the pgx
	// tracer, the API the HTTP middleware. nil: off.
	Telemetry *telemetry.Telemetry
}

// Start brings up a stack whose pieces stop at test cleanup. Each call gets its own
// database and task queue, and rollout ids of its own, so stacks of parallel tests do not
// see each other. (Schedules are named by their tests: parallel tests use distinct names.)
func Start(t *testing.T, opts Options) *Stack {
	t.Helper()
	dbURL := testenv.DatabaseURL(t)
	cfg := config.Config{
		DatabaseURL: dbURL, TemporalAddress: testenv.TemporalAddress(t), TemporalNamespace: "default",
		TaskQueue: "tq-" + t.Name(),
	}
	if opts.Configure != nil {
		opts.Configure(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tel := opts.Telemetry
	st, err := store.Open(ctx, dbURL, store.WithQueryTracer(tel.QueryTracer()))
	require.NoError(t, err)
	t.Cleanup(st.Close)
	// Every stack of a test binary shares one Temporal namespace, and a rollout's workflow
	// id is "rollout/<id>": ids drawn from a random offset keep parallel stacks' rollouts
	// (each database would otherwise start at 1) out of each other's workflows.
	_, err = st.Pool.Exec(ctx, fmt.Sprintf("ALTER TABLE rollouts ALTER COLUMN id RESTART WITH %d", 1+rand.Int64N(1<<40))) // #nosec G404 -- an id offset that keeps parallel test stacks apart, no secret
	require.NoError(t, err)
	copts, err := cfg.ClientOptions()
	require.NoError(t, err)
	ti, err := tel.TemporalInterceptor()
	require.NoError(t, err)
	if ti != nil {
		copts.Interceptors = append(copts.Interceptors, ti)
	}
	tc, err := client.DialContext(ctx, copts)
	require.NoError(t, err)
	t.Cleanup(tc.Close)

	workers := max(opts.Workers, 1)
	if opts.NoWorker {
		workers = 0
	}
	for i := 0; i < workers; i++ {
		w, err := worker.New(worker.Deps{Config: cfg, Store: st, Temporal: tc, Telemetry: tel})
		require.NoError(t, err)
		require.NoError(t, w.Start())
		t.Cleanup(w.Stop)
	}
	starter := &starter.Starter{Client: tc, TaskQueue: cfg.TaskQueue, ResidentSchedules: cfg.SchedulesResident}
	if workers > 0 {
		// The schedule planner arms the fires of schedules at rest (a singleton per task
		// queue, as a worker process starts it).
		require.NoError(t, starter.StartSchedulePlanners(ctx, 1))
		t.Cleanup(func() { _ = starter.StopSchedulePlanners(context.Background(), 1) })
	}
	advancer, err := deviceengine.NewTaskAdvancer(st, deviceengine.TaskAdvancerOptions{Settings: cfg.DeviceSettings(), Notify: starter.CheckDispatcher})
	require.NoError(t, err)
	advancer.Start()
	listener := st.StartListener(store.ListenerOptions{Logf: t.Logf})
	// The API as the binary serves it: its HTTP server's timeouts, failed-authentication
	// limit and trusted proxies from the configuration.
	timeouts := api.HTTPTimeouts{Read: cfg.APIReadTimeout, Write: cfg.APIWriteTimeout, Idle: cfg.APIIdleTimeout}.WithDefaults()
	engine := deviceengine.New(deviceengine.Options{Store: st, Starter: starter, Listener: listener, Advancer: advancer, Tracer: tel.Tracer(), Logf: t.Logf})
	app := &api.Server{Store: st, Temporal: tc, Starter: starter, Devices: engine, Listener: listener, Logf: t.Logf,
		Tracer: tel.Tracer(), TraceURL: cfg.TraceURLTemplate, HTTPAllow: cfg.HTTPAllow,
		WorkflowTaskQueues: cfg.WorkflowTaskQueues,
		AuthFailures:       cfg.APIAuthFailures, TrustedProxies: cfg.APITrustedProxies, Timeouts: timeouts,
		SchedulesResident: cfg.SchedulesResident}
	h := tel.HTTPHandler(api.New(app), "tickgate.api", nil)
	srv := httptest.NewUnstartedServer(h)
	srv.Config = api.NewHTTPServer(h, timeouts)
	srv.Start()
	t.Cleanup(listener.Close)
	// Cleanups run last-in first-out: the server stops, then the calls and the advances
	// its requests left behind finish.
	t.Cleanup(func() { require.NoError(t, engine.Close(context.Background())) })
	t.Cleanup(srv.Close)
	stack := &Stack{URL: srv.URL, Store: st, Temporal: tc, Config: cfg}
	stack.AdminToken = stack.NewToken(t, domain.RoleAdmin, "")
	stack.Headers = map[string]string{"Authorization": "Bearer " + stack.AdminToken}
	return stack
}

// NewToken creates an API token of role (pc names an agent's PC) straight in the database.
func (s *Stack) NewToken(t testing.TB, role domain.TokenRole, pc string) string {
	t.Helper()
	_, token, err := s.Store.CreateToken(context.Background(), store.NewToken{Role: role, PC: pc, Note: "teststack"})
	require.NoError(t, err)
	return token
}

// As returns a copy of the stack whose requests carry token instead of the admin's (an
// empty token sends no Authorization header).
func (s *Stack) As(token string) *Stack {
	c := *s
	c.Headers = map[string]string{}
	for k, v := range s.Headers {
		if k != "Authorization" {
			c.Headers[k] = v
		}
	}
	if token != "" {
		c.Headers["Authorization"] = "Bearer " + token
	}
	return &c
}
