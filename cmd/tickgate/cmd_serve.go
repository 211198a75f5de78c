package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.temporal.io/sdk/client"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/deviceengine"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/readiness"
	"github.com/tickgate/tickgate/internal/telemetry"
	"github.com/tickgate/tickgate/metrics"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/worker"
)

func init() {
	register("migrate", "apply the database migrations (safe to run twice)", runMigrate)
	register("worker", "run a Temporal worker for all three engines", runWorker)
	register("api", "serve the HTTP API", runAPI)
}

func loadConfig(args []string, name string) (config.Config, error) {
	cfg, err := config.FromEnv()
	if err != nil {
		return cfg, err
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.StringVar(&cfg.DatabaseURL, "database-url", cfg.DatabaseURL, "PostgreSQL URL (DATABASE_URL)")
	fs.StringVar(&cfg.TemporalAddress, "temporal-address", cfg.TemporalAddress, "Temporal frontend (TEMPORAL_ADDRESS)")
	fs.StringVar(&cfg.TemporalNamespace, "temporal-namespace", cfg.TemporalNamespace, "Temporal namespace (TEMPORAL_NAMESPACE)")
	fs.StringVar(&cfg.TaskQueue, "task-queue", cfg.TaskQueue, "task queue (TICKGATE_TASK_QUEUE)")
	fs.StringVar(&cfg.HTTPAddr, "http-addr", cfg.HTTPAddr, "API listen address (TICKGATE_HTTP_ADDR)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if cfg.DatabaseURL == "" {
		return cfg, errors.New("DATABASE_URL (or --database-url) is required")
	}
	return cfg, nil
}

func runMigrate(ctx context.Context, args []string) error {
	cfg, err := loadConfig(args, "migrate")
	if err != nil {
		return err
	}
	if err := store.Migrate(ctx, cfg.DatabaseURL); err != nil {
		return err
	}
	log.Printf("migrations applied")
	return nil
}

func runWorker(ctx context.Context, args []string) error {
	cfg, err := loadConfig(args, "worker")
	if err != nil {
		return err
	}
	return serveWorker(ctx, cfg)
}

// connectAttemptTimeout bounds one attempt to open the pool or dial Temporal, so a
// black-holed address is retried (and reported on /readyz) instead of hanging the start.
// Migrations get no such bound: a long migration is not a failure.
const connectAttemptTimeout = 10 * time.Second

// errWaitingForPostgres is Temporal's state while PostgreSQL is awaited: it is dialled next.
var errWaitingForPostgres = errors.New("waiting for postgres")

// connect migrates the database and connects to PostgreSQL and Temporal, waiting with
// backoff for each to be reachable and recording each attempt in tr ("postgres",
// "temporal") for /readyz; closeAll releases both.
func connect(ctx context.Context, cfg config.Config, tr *readiness.Tracker, tel *telemetry.Telemetry) (st *store.Store, tc client.Client, closeAll func(), err error) {
	opts, err := cfg.ClientOptions()
	if err != nil { // a bad TLS file: waiting would not fix it
		return nil, nil, nil, err
	}
	// With tracing on, the client (and the worker made from it) carries the SDK's tracing
	// interceptor and the pool a pgx tracer; off, neither is installed.
	ti, err := tel.TemporalInterceptor()
	if err != nil {
		return nil, nil, nil, err
	}
	if ti != nil {
		opts.Interceptors = append(opts.Interceptors, ti)
	}
	tr.Set("temporal", errWaitingForPostgres)
	if err := tr.Wait(ctx, "postgres", func(ctx context.Context) error {
		return store.Migrate(ctx, cfg.DatabaseURL)
	}); err != nil {
		return nil, nil, nil, err
	}
	if err := tr.Wait(ctx, "postgres", func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, connectAttemptTimeout)
		defer cancel()
		st, err = store.Connect(ctx, cfg.DatabaseURL, store.WithQueryTracer(tel.QueryTracer()))
		return err
	}); err != nil {
		return nil, nil, nil, err
	}
	if err := tr.Wait(ctx, "temporal", func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, connectAttemptTimeout)
		defer cancel()
		tc, err = client.DialContext(ctx, opts)
		if err != nil {
			return fmt.Errorf("dial %s: %w", cfg.TemporalAddress, err)
		}
		return nil
	}); err != nil {
		st.Close()
		return nil, nil, nil, err
	}
	return st, tc, func() { tc.Close(); st.Close() }, nil
}

// listen binds addr at once, so a taken port fails the start instead of a background log.
// The server has the configured read, write and idle timeouts (api.NewHTTPServer).
func listen(addr string, h http.Handler, timeouts api.HTTPTimeouts) (*http.Server, <-chan error, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := api.NewHTTPServer(h, timeouts)
	errc := make(chan error, 1)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
	}()
	return srv, errc, nil
}

// httpTimeouts are the configured HTTP server timeouts, defaults filled in.
func httpTimeouts(cfg config.Config) api.HTTPTimeouts {
	return api.HTTPTimeouts{Read: cfg.APIReadTimeout, Write: cfg.APIWriteTimeout, Idle: cfg.APIIdleTimeout}.WithDefaults()
}

// errWorkerNotStarted is the SDK worker's state until it polls.
var errWorkerNotStarted = errors.New("not started: waiting for postgres and temporal")

// serveWorker runs the SDK worker. With TICKGATE_WORKER_METRICS_ADDR it serves /metrics,
// /healthz and /readyz there from the first moment, so a worker waiting for its
// dependencies says so.
func serveWorker(ctx context.Context, cfg config.Config) error {
	tel, err := startTelemetry(ctx, "worker")
	if err != nil {
		return err
	}
	defer stopTelemetry(tel, "worker")
	tr := readiness.New("postgres", "temporal", "worker")
	tr.Set("worker", errWorkerNotStarted)
	if cfg.WorkerMetricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{}))
		mux.HandleFunc("GET /healthz", readiness.Healthz)
		mux.Handle("GET /readyz", tr)
		srv, errc, err := listen(cfg.WorkerMetricsAddr, mux, httpTimeouts(cfg))
		if err != nil {
			return fmt.Errorf("worker metrics: %w", err)
		}
		defer srv.Close()
		go func() {
			// The worker goes on without its metrics port, as it always has; the log says so.
			select {
			case err := <-errc:
				log.Printf("worker metrics: %v", err)
			case <-ctx.Done():
			}
		}()
		log.Printf("worker metrics on http://%s/metrics (/healthz, /readyz)", cfg.WorkerMetricsAddr)
	}
	st, tc, closeAll, err := connect(ctx, cfg, tr, tel)
	if err != nil {
		if ctx.Err() != nil { // stopped while waiting: a normal stop
			return nil
		}
		return err
	}
	defer closeAll()
	tr.ProbeConnections(st.Pool, tc)
	d := worker.Deps{Config: cfg, Store: st, Temporal: tc, Telemetry: tel}
	w, err := worker.New(d)
	if err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	log.Printf("worker polling task queue %q on %s", cfg.TaskQueue, cfg.TemporalAddress)
	// Run returns the worker's fatal error (say, its namespace was deleted); Start above has
	// already started it, so Run only waits.
	stop := make(chan any)
	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(stop) }()
	if err := worker.StartSingletons(ctx, d); err != nil {
		log.Printf("worker: singletons: %v", err)
	}
	tr.Set("worker", nil)
	tr.Started()
	select {
	case <-ctx.Done():
		tr.Set("worker", errors.New("stopping"))
		close(stop)
		<-runErr
		return nil
	case err := <-runErr:
		// A worker that no longer polls must not look alive: exit, and the supervisor
		// (restart: unless-stopped) starts a fresh one.
		if err == nil {
			err = errors.New("stopped by the SDK")
		}
		tr.Set("worker", fmt.Errorf("stopped: %w", err))
		return fmt.Errorf("worker stopped: %w", err)
	}
}

func runAPI(ctx context.Context, args []string) error {
	cfg, err := loadConfig(args, "api")
	if err != nil {
		return err
	}
	return serveAPI(ctx, cfg)
}

// serveAPI listens at once: until PostgreSQL and Temporal are reached, /healthz answers 200,
// /readyz 503 saying what is awaited and why, and every other route 503 with Retry-After;
// then the application takes over the same listener.
func serveAPI(ctx context.Context, cfg config.Config) error {
	tel, err := startTelemetry(ctx, "api")
	if err != nil {
		return err
	}
	// Deferred first, so it runs last: the spans of the requests drained below are flushed.
	defer stopTelemetry(tel, "api")
	tr := readiness.New("postgres", "temporal")
	var h readiness.Switch
	h.Set(tr.NotReady())
	srv, errc, err := listen(cfg.HTTPAddr, &h, httpTimeouts(cfg))
	if err != nil {
		return fmt.Errorf("api: %w", err)
	}
	log.Printf("api listening on http://%s (not ready until postgres and temporal answer)", cfg.HTTPAddr)

	type connection struct {
		st       *store.Store
		tc       client.Client
		closeAll func()
		err      error
	}
	connCtx, cancelConnect := context.WithCancel(ctx)
	defer cancelConnect()
	done := make(chan connection, 1)
	go func() {
		st, tc, closeAll, err := connect(connCtx, cfg, tr, tel)
		done <- connection{st, tc, closeAll, err}
	}()
	var conn connection
	var engine *deviceengine.Engine
	var listener *store.Listener
	// In-flight requests finish, then the Temporal calls and device task advances they
	// left behind, before the connections they use are closed.
	defer func() {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if listener != nil { // agents' long-polls answer now instead of holding the shutdown
			listener.Close()
		}
		_ = srv.Shutdown(shutdownCtx)
		if engine != nil {
			if err := engine.Close(shutdownCtx); err != nil {
				log.Printf("api: %v", err)
			}
		}
		if conn.closeAll != nil {
			conn.closeAll()
		}
	}()
	select {
	case err := <-errc:
		cancelConnect()
		conn = <-done
		return fmt.Errorf("api: %w", err)
	case conn = <-done:
	}
	if conn.err != nil {
		if ctx.Err() != nil { // stopped while waiting: a normal stop
			return nil
		}
		return conn.err
	}
	st := &starter.Starter{Client: conn.tc, TaskQueue: cfg.TaskQueue}
	advancer, err := deviceengine.NewTaskAdvancer(conn.st, deviceengine.TaskAdvancerOptions{
		Settings: cfg.DeviceSettings(), Notify: st.CheckDispatcher, Logger: slog.Default(),
	})
	if err != nil {
		return err
	}
	advancer.Start()
	listener = conn.st.StartListener(store.ListenerOptions{Logf: log.Printf})
	engine = deviceengine.New(deviceengine.Options{Store: conn.st, Starter: st, Listener: listener, Advancer: advancer, Tracer: tel.Tracer()})
	app := &api.Server{Store: conn.st, Temporal: conn.tc, Readiness: tr, Starter: st, Devices: engine, Listener: listener,
		Tracer: tel.Tracer(), TraceURL: cfg.TraceURLTemplate, HTTPAllow: cfg.HTTPAllow,
		WorkflowTaskQueues: cfg.WorkflowTaskQueues,
		AuthFailures:       cfg.APIAuthFailures, TrustedProxies: cfg.APITrustedProxies, Timeouts: httpTimeouts(cfg),
		SchedulesResident: cfg.SchedulesResident}
	h.Set(tel.HTTPHandler(api.New(app), "tickgate.api", untracedRequest))
	log.Printf("api ready on http://%s", cfg.HTTPAddr)
	select {
	case err := <-errc:
		return fmt.Errorf("api: %w", err)
	case <-ctx.Done():
		return nil
	}
}

// startTelemetry turns tracing on for the role when the OTEL_* variables ask for it
// (internal/telemetry), and says so.
func startTelemetry(ctx context.Context, role string) (*telemetry.Telemetry, error) {
	tel, err := telemetry.FromEnv(ctx, role)
	if err != nil {
		return nil, fmt.Errorf("%s: tracing: %w", role, err)
	}
	if tel.On() {
		endpoint := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
		if endpoint == "" {
			endpoint = os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
		}
		log.Printf("%s: tracing on, exporting OTLP to %s", role, endpoint) // #nosec G706 -- the operator's own OTLP endpoint setting, logged at start
	}
	return tel, nil
}

// stopTelemetry flushes the spans still batched, within a few seconds.
func stopTelemetry(tel *telemetry.Telemetry, role string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		log.Printf("%s: %v", role, err)
	}
}

// untracedRequest names the requests that get no span: probes, metrics scrapes and the
// dashboard's static files.
func untracedRequest(r *http.Request) bool {
	p := r.URL.Path
	return p == "/healthz" || p == "/readyz" || p == "/metrics" || p == "/" || strings.HasPrefix(p, "/ui/")
}
