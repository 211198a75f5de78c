package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.temporal.io/sdk/client"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/internal/config"
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

// migrateWithRetry applies migrations, waiting for PostgreSQL to come up.
func migrateWithRetry(ctx context.Context, url string) error {
	backoff := 200 * time.Millisecond
	for {
		err := store.Migrate(ctx, url)
		if err == nil {
			return nil
		}
		log.Printf("migrate: %v (retrying in %s)", err, backoff)
		select {
		case <-ctx.Done():
			return fmt.Errorf("migrate: %w", err)
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
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

// connect migrates the database and connects to PostgreSQL and Temporal, waiting with
// backoff for each to be reachable; closeAll releases both.
func connect(ctx context.Context, cfg config.Config) (st *store.Store, tc client.Client, closeAll func(), err error) {
	if err := migrateWithRetry(ctx, cfg.DatabaseURL); err != nil {
		return nil, nil, nil, err
	}
	if st, err = store.Open(ctx, cfg.DatabaseURL); err != nil {
		return nil, nil, nil, err
	}
	if tc, err = cfg.DialTemporal(ctx); err != nil {
		st.Close()
		return nil, nil, nil, err
	}
	return st, tc, func() { tc.Close(); st.Close() }, nil
}

func serveWorker(ctx context.Context, cfg config.Config) error {
	st, tc, closeAll, err := connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeAll()
	w, err := worker.New(worker.Deps{Config: cfg, Store: st, Temporal: tc})
	if err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	log.Printf("worker polling task queue %q on %s", cfg.TaskQueue, cfg.TemporalAddress)
	if cfg.WorkerMetricsAddr != "" {
		srv := &http.Server{Addr: cfg.WorkerMetricsAddr, ReadHeaderTimeout: 10 * time.Second,
			Handler: promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{})}
		go func() {
			if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Printf("worker metrics: %v", err)
			}
		}()
		defer srv.Close()
		log.Printf("worker metrics on http://%s/metrics", cfg.WorkerMetricsAddr)
	}
	if err := worker.StartSingletons(ctx, worker.Deps{Config: cfg, Store: st, Temporal: tc}); err != nil {
		log.Printf("worker: singletons: %v", err)
	}
	<-ctx.Done()
	w.Stop()
	return nil
}

func runAPI(ctx context.Context, args []string) error {
	cfg, err := loadConfig(args, "api")
	if err != nil {
		return err
	}
	return serveAPI(ctx, cfg)
}

func serveAPI(ctx context.Context, cfg config.Config) error {
	st, tc, closeAll, err := connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeAll()
	e := api.New(&api.Server{Store: st, Temporal: tc, Starter: &starter.Starter{Client: tc, TaskQueue: cfg.TaskQueue}})
	srv := &http.Server{Addr: cfg.HTTPAddr, Handler: e, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Printf("api listening on http://%s", cfg.HTTPAddr)
	select {
	case err := <-errc:
		return fmt.Errorf("api: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutdownCtx)
}
