package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/dev/devstack"
	"github.com/tickgate/tickgate/internal/dev/traceview"
)

func init() {
	register("dev", "run the whole stack locally: PostgreSQL, Temporal + UI, worker, API (no Docker)", runDev)
}

// devTemporalEnv picks make dev's Temporal: "dev" (default) or "server".
const devTemporalEnv = "TICKGATE_DEV_TEMPORAL"

// devTracesEnv=1 makes make dev start the trace viewer and export the worker's and the
// API's traces to it (docs/tracing.md).
const devTracesEnv = "TICKGATE_DEV_TRACES"

// Dev stack ports: PostgreSQL on its own port so it never meets a system cluster. The trace
// viewer takes Jaeger's UI port, so a viewer's trace links look alike.
const (
	devPostgresPort = 55432
	devTemporalPort = 7233
	devUIPort       = 8233
	devTracesPort   = 16686
)

func runDev(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	shape := os.Getenv(devTemporalEnv)
	if shape != "" && shape != "dev" && shape != "server" {
		return fmt.Errorf("%s: want dev (the CLI's dev server, the default) or server (the real server on PostgreSQL), got %q", devTemporalEnv, shape)
	}
	root, err := devstack.RepoRoot()
	if err != nil {
		return err
	}
	devDir := filepath.Join(root, ".dev")
	if err := os.MkdirAll(devDir, 0o755); err != nil { // #nosec G301 -- .dev holds the dev clusters, whose directories the postgres user must pass through
		return fmt.Errorf("create .dev: %w", err)
	}
	logf := func(f string, a ...any) { log.Printf("dev: "+f, a...) } // #nosec G706 -- the dev stack's own format strings, logged to its operator's terminal
	if os.Getenv(devTracesEnv) == "1" {
		stop, err := devTraceViewer(logf)
		if err != nil {
			return err
		}
		defer stop()
		if cfg.TraceURLTemplate == "" { // read before the viewer set it
			cfg.TraceURLTemplate = os.Getenv("TICKGATE_TRACE_URL_TEMPLATE")
		}
	}

	runTemporal := os.Getenv("TEMPORAL_ADDRESS") == ""
	// The real server keeps its persistence in the throwaway cluster even when tickgate's
	// own database is elsewhere.
	pg, stopPG, err := devPostgres(ctx, &cfg, devDir, runTemporal && shape == "server", logf)
	if err != nil {
		return err
	}
	defer stopPG()
	if err := writeDevAdminToken(ctx, cfg.DatabaseURL, devDir); err != nil {
		return err
	}
	if runTemporal {
		tmp, err := devTemporal(ctx, shape, root, devDir, pg, logf)
		if err != nil {
			return err
		}
		defer func() {
			logf("stopping temporal")
			_ = tmp.Close()
		}()
		cfg.TemporalAddress = tmp.Address()
	} else {
		logf("using TEMPORAL_ADDRESS=%s from the environment", cfg.TemporalAddress)
	}
	return serveDev(ctx, cfg)
}

// devPostgres starts make dev's cluster under devDir when tickgate needs a database
// (DATABASE_URL unset: cfg gets the cluster's) or forServer (the real Temporal server's
// persistence); otherwise it starts nothing and pg is nil. stop stops what it started.
func devPostgres(ctx context.Context, cfg *config.Config, devDir string, forServer bool, logf func(string, ...any)) (pg *devstack.Postgres, stop func(), err error) {
	stop = func() {}
	if cfg.DatabaseURL != "" && !forServer {
		logf("using DATABASE_URL from the environment")
		return nil, stop, nil
	}
	bin, err := devstack.FindPostgresBinDir(true)
	if err != nil {
		return nil, stop, err
	}
	pg = &devstack.Postgres{BinDir: bin, DataDir: filepath.Join(devDir, "pg"), Port: devPostgresPort, Log: logf}
	if err := pg.Start(ctx); err != nil {
		return nil, stop, err
	}
	stop = func() {
		logf("stopping postgres")
		if err := pg.Stop(); err != nil {
			logf("%v", err)
		}
	}
	if cfg.DatabaseURL != "" {
		logf("using DATABASE_URL from the environment")
		return pg, stop, nil
	}
	if err := pg.EnsureDatabase(ctx, "tickgate"); err != nil {
		stop()
		return nil, func() {}, err
	}
	cfg.DatabaseURL = pg.URL("tickgate")
	return pg, stop, nil
}

// serveDev runs the worker and the API until ctx ends or one of them fails, and says where
// everything is once the API is ready.
func serveDev(ctx context.Context, cfg config.Config) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, 2)
	for name, serve := range map[string]func(context.Context, config.Config) error{"worker": serveWorker, "api": serveAPI} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := serve(ctx, cfg); err != nil && !errors.Is(err, context.Canceled) {
				errc <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	go func() {
		if waitHTTP(ctx, "http://"+cfg.HTTPAddr+"/readyz") == nil {
			traces := ""
			if os.Getenv(devTracesEnv) == "1" {
				traces = fmt.Sprintf("  Traces       http://127.0.0.1:%d\n", devTracesPort)
			}
			fmt.Printf("\ntickgate is up:\n  API          http://%s/api/v1\n  Temporal UI  http://127.0.0.1:%d\n%s  PostgreSQL   %s\nCtrl-C stops everything.\n\n",
				cfg.HTTPAddr, devUIPort, traces, cfg.DatabaseURL)
		}
	}()
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	}
	cancel()
	wg.Wait()
	return runErr
}

func waitHTTP(ctx context.Context, url string) error {
	for {
		if ok := httpOK(ctx, url); ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// devTemporal starts make dev's Temporal: the CLI's dev server (SQLite, one shard), or with
// TICKGATE_DEV_TEMPORAL=server the production shape — the real server on the dev cluster's
// PostgreSQL with DefaultHistoryShards shards — both with the Web UI on :8233.
func devTemporal(ctx context.Context, shape, root, devDir string, pg *devstack.Postgres, logf func(string, ...any)) (devstack.TemporalService, error) {
	if shape == "server" {
		bins, err := devstack.BuildServerBinaries(ctx, root, logf)
		if err != nil {
			return nil, err
		}
		ports := devstack.DefaultServerPorts()
		ports.Frontend, ports.UI = devTemporalPort, devUIPort
		srv := &devstack.TemporalServer{Bins: bins, PG: pg, Dir: filepath.Join(devDir, "temporal-server"), Ports: ports,
			Shards: devstack.DefaultHistoryShards, Log: logf}
		if err := srv.Start(ctx); err != nil {
			_ = srv.Close()
			return nil, err
		}
		logf("Temporal server %s on PostgreSQL (databases temporal, temporal_visibility), %d history shards, UI http://%s, log %s",
			srv.Address(), srv.Shards, srv.UIAddress(), srv.LogFile())
		return srv, nil
	}
	bin, err := devstack.TemporalBinary(ctx, root, logf)
	if err != nil {
		return nil, err
	}
	tmp := &devstack.Temporal{Bin: bin, DBFile: filepath.Join(devDir, "temporal.db"), Port: devTemporalPort,
		UIPort: devUIPort, LogFile: filepath.Join(devDir, "temporal.log")}
	logf("starting Temporal dev server on %s (UI http://%s, log %s)", tmp.Address(), tmp.UIAddress(), tmp.LogFile)
	if err := tmp.Start(ctx); err != nil {
		return nil, err
	}
	return tmp, nil
}

// devTraceViewer starts make dev's trace viewer (internal/dev/traceview) on loopback, its
// page and its OTLP/HTTP receiver on one port, and points the worker's and the API's
// tracing at it: OTEL_EXPORTER_OTLP_ENDPOINT, spans sent every second, and the dashboard's
// trace links (TICKGATE_TRACE_URL_TEMPLATE, unless set).
func devTraceViewer(logf func(string, ...any)) (stop func(), err error) {
	addr := fmt.Sprintf("127.0.0.1:%d", devTracesPort)
	srv, errc, err := listen(addr, traceview.NewStore(5000).Handler(), api.DefaultHTTPTimeouts)
	if err != nil {
		return nil, fmt.Errorf("trace viewer: %w", err)
	}
	go func() {
		if err := <-errc; err != nil {
			logf("trace viewer: %v", err)
		}
	}()
	if prev := os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); prev != "" {
		logf("%s=1: exporting traces to the viewer instead of OTEL_EXPORTER_OTLP_ENDPOINT=%s", devTracesEnv, prev)
	}
	for k, v := range map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + addr, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
	} {
		if err := os.Setenv(k, v); err != nil {
			return nil, err
		}
	}
	if os.Getenv("OTEL_BSP_SCHEDULE_DELAY") == "" {
		_ = os.Setenv("OTEL_BSP_SCHEDULE_DELAY", "1000") // a trace shows within a second or so
	}
	if os.Getenv("TICKGATE_TRACE_URL_TEMPLATE") == "" {
		_ = os.Setenv("TICKGATE_TRACE_URL_TEMPLATE", "http://"+addr+"/trace/{trace_id}")
	}
	logf("trace viewer on http://%s (OTLP/HTTP at http://%s/v1/traces)", addr, addr)
	return func() { _ = srv.Close() }, nil
}
