// Package benchstack starts what a benchmark needs on this machine: a throwaway PostgreSQL
// cluster under .dev/bench-<name> and a Temporal dev server, and hands out fresh databases.
package benchstack

import (
	"context"
	"fmt"
	"log"
	"path/filepath"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"

	"github.com/tickgate/tickgate/internal/dev/devstack"
	"github.com/tickgate/tickgate/store"
)

// Stack is a running PostgreSQL cluster and Temporal dev server.
type Stack struct {
	PG       *devstack.Postgres
	Temporal *testsuite.DevServer
}

// Start brings both up; Stop ends them. extraTemporalArgs are added to start-dev.
func Start(ctx context.Context, name string, pgPort int, extraTemporalArgs ...string) (*Stack, error) {
	root, err := devstack.RepoRoot()
	if err != nil {
		return nil, err
	}
	bin, err := devstack.FindPostgresBinDir(true)
	if err != nil {
		return nil, err
	}
	pg := &devstack.Postgres{BinDir: bin, DataDir: devstack.ClusterDir(filepath.Join(root, ".dev", "bench-"+name, "pg")),
		Port: pgPort, FindFreePort: true, Log: log.Printf}
	if err := pg.Start(ctx); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	tbin, err := devstack.TemporalBinary(ctx, root, log.Printf)
	if err != nil {
		_ = pg.Stop()
		return nil, err
	}
	args := append([]string{}, extraTemporalArgs...)
	for _, sa := range devstack.SearchAttributes {
		args = append(args, "--search-attribute", sa+"=Keyword")
	}
	dev, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
		ExistingPath: tbin, LogLevel: "error", ClientOptions: &client.Options{Namespace: "default"}, ExtraArgs: args,
	})
	if err != nil {
		_ = pg.Stop()
		return nil, fmt.Errorf("temporal dev server: %w", err)
	}
	return &Stack{PG: pg, Temporal: dev}, nil
}

// Stop ends the dev server and the cluster.
func (s *Stack) Stop() {
	_ = s.Temporal.Stop()
	_ = s.PG.Stop()
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
