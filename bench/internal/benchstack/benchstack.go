// Package benchstack starts what a benchmark needs on this machine, in the shape `make dev`
// runs: a throwaway PostgreSQL cluster under .dev/bench-<name> and Temporal with make dev's
// settings (the CLI's dev server on a SQLite file, or with TICKGATE_DEV_TEMPORAL=server the
// real server), and hands out fresh databases, tickgate's configuration and the processes'
// CPU time.
package benchstack

import (
	"context"
	"fmt"
	"log"
	"path/filepath"

	"github.com/jackc/pgx/v5"

	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/dev/devstack"
	"github.com/tickgate/tickgate/store"
)

// Options say which bench the stack is for and what it observes.
type Options struct {
	// Name places the cluster and Temporal's data under .dev/bench-<Name>.
	Name string
	// PGPort is the first port tried for PostgreSQL (the next free one is taken).
	PGPort int
	// CommitTimestamps turns on PostgreSQL's track_commit_timestamp, so a bench can read
	// when a row's transaction committed (pg_xact_commit_timestamp). It records, it does not
	// change what a transaction does; no other setting differs from make dev's.
	CommitTimestamps bool
	// StatementStats loads pg_stat_statements, so a bench can count the statements sent
	// (CREATE EXTENSION pg_stat_statements in its database). It records, it does not change
	// what a statement does.
	StatementStats bool
	// Durable runs PostgreSQL with fsync, synchronous_commit and full_page_writes on, as a
	// production server does, instead of make dev's off (devstack.Postgres.Durable).
	Durable bool
}

// Stack is a running PostgreSQL cluster and Temporal.
type Stack struct {
	PG       *devstack.Postgres
	Temporal Temporal
	// Durability is what the cluster runs with: "fsync=… synchronous_commit=…
	// full_page_writes=…", read from the server.
	Durability string
	dir        string
}

// Start brings both up; Stop ends them.
func Start(ctx context.Context, o Options) (*Stack, error) {
	root, err := devstack.RepoRoot()
	if err != nil {
		return nil, err
	}
	shape, err := ShapeFromEnv()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, ".dev", "bench-"+o.Name)
	bin, err := devstack.FindPostgresBinDir(true)
	if err != nil {
		return nil, err
	}
	pg := &devstack.Postgres{BinDir: bin, DataDir: filepath.Join(dir, "pg"),
		Port: o.PGPort, FindFreePort: true, Durable: o.Durable, Log: log.Printf}
	if err := pg.Start(ctx); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	durability, err := ensureDurability(ctx, pg)
	if err != nil {
		_ = pg.Stop()
		return nil, err
	}
	if o.CommitTimestamps {
		if err := enableCommitTimestamps(ctx, pg); err != nil {
			_ = pg.Stop()
			return nil, err
		}
	}
	if o.StatementStats {
		if err := enableStatementStats(ctx, pg); err != nil {
			_ = pg.Stop()
			return nil, err
		}
	}
	tmp, err := startTemporal(ctx, shape, root, dir, pg)
	if err != nil {
		_ = pg.Stop()
		return nil, err
	}
	log.Printf("benchstack: %s on %s (pid %d), postgres on :%d (%s)", tmp.Describe(), tmp.Address(), tmp.PID(), pg.Port, durability)
	return &Stack{PG: pg, Temporal: tmp, Durability: durability, dir: dir}, nil
}

// Stop ends Temporal and the cluster.
func (s *Stack) Stop() {
	if err := s.Temporal.Close(); err != nil {
		log.Printf("benchstack: stop temporal: %v", err)
	}
	if err := s.PG.Stop(); err != nil {
		log.Printf("benchstack: stop postgres: %v", err)
	}
}

// Config is tickgate's configuration as `make dev` builds it (FromEnv's defaults), pointed
// at database url and this stack's Temporal.
func (s *Stack) Config(url string) (config.Config, error) {
	cfg, err := config.FromEnv()
	if err != nil {
		return config.Config{}, err
	}
	cfg.DatabaseURL, cfg.TemporalAddress, cfg.TemporalNamespace = url, s.Temporal.Address(), "default"
	return cfg, nil
}

// FreshDatabase drops and recreates database name, migrates it and returns its URL.
func (s *Stack) FreshDatabase(ctx context.Context, name string) (string, error) {
	conn, err := pgx.Connect(ctx, s.PG.URL("postgres"))
	if err != nil {
		return "", fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return "", fmt.Errorf("drop %s: %w", name, err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create %s: %w", name, err)
	}
	url := s.PG.URL(name)
	if err := store.Migrate(ctx, url); err != nil {
		return "", err
	}
	return url, nil
}
