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

	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/dev/devstack"
)

func init() {
	register("dev", "run the whole stack locally: PostgreSQL, Temporal + UI, worker, API (no Docker)", runDev)
}

// Dev stack ports: PostgreSQL on its own port so it never meets a system cluster.
const (
	devPostgresPort = 55432
	devTemporalPort = 7233
	devUIPort       = 8233
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
	root, err := devstack.RepoRoot()
	if err != nil {
		return err
	}
	devDir := filepath.Join(root, ".dev")
	if err := os.MkdirAll(devDir, 0o755); err != nil {
		return fmt.Errorf("create .dev: %w", err)
	}
	logf := func(f string, a ...any) { log.Printf("dev: "+f, a...) }

	if cfg.DatabaseURL == "" {
		bin, err := devstack.FindPostgresBinDir(true)
		if err != nil {
			return err
		}
		pg := &devstack.Postgres{BinDir: bin, DataDir: devstack.ClusterDir(filepath.Join(devDir, "pg")), Port: devPostgresPort, Log: logf}
		if err := pg.Start(ctx); err != nil {
			return err
		}
		defer func() {
			logf("stopping postgres")
			if err := pg.Stop(); err != nil {
				logf("%v", err)
			}
		}()
		if err := pg.EnsureDatabase(ctx, "tickgate"); err != nil {
			return err
		}
		cfg.DatabaseURL = pg.URL("tickgate")
	} else {
		logf("using DATABASE_URL from the environment")
	}

	if err := writeDevAdminToken(ctx, cfg.DatabaseURL, devDir); err != nil {
		return err
	}

	if os.Getenv("TEMPORAL_ADDRESS") == "" {
		bin, err := devstack.TemporalBinary(ctx, root, logf)
		if err != nil {
			return err
		}
		tmp := &devstack.Temporal{Bin: bin, DBFile: filepath.Join(devDir, "temporal.db"), Port: devTemporalPort,
			UIPort: devUIPort, LogFile: filepath.Join(devDir, "temporal.log")}
		logf("starting Temporal dev server on %s (UI http://127.0.0.1:%d, log %s)", tmp.Address(), devUIPort, tmp.LogFile)
		if err := tmp.Start(ctx); err != nil {
			return err
		}
		defer func() {
			logf("stopping temporal")
			_ = tmp.Stop()
		}()
		cfg.TemporalAddress = tmp.Address()
	} else {
		logf("using TEMPORAL_ADDRESS=%s from the environment", cfg.TemporalAddress)
	}

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
			fmt.Printf("\ntickgate is up:\n  API          http://%s/api/v1\n  Temporal UI  http://127.0.0.1:%d\n  PostgreSQL   %s\nCtrl-C stops everything.\n\n",
				cfg.HTTPAddr, devUIPort, cfg.DatabaseURL)
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
