package benchstack

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tickgate/tickgate/internal/dev/devstack"
)

// ShapeEnv picks Temporal's shape exactly as it does for `make dev`.
const ShapeEnv = "TICKGATE_DEV_TEMPORAL"

// Shapes of Temporal a bench can run on.
const (
	ShapeDev    = "dev"    // the CLI's dev server (SQLite, one shard): make dev's default
	ShapeServer = "server" // the real server on PostgreSQL: make dev's production shape
)

// ShapeFromEnv reads ShapeEnv: empty or "dev" is the dev server, "server" the real server.
func ShapeFromEnv() (string, error) {
	switch v := os.Getenv(ShapeEnv); v {
	case "", ShapeDev:
		return ShapeDev, nil
	case ShapeServer:
		return ShapeServer, nil
	default:
		return "", fmt.Errorf("%s: want dev (the CLI's dev server, the default) or server (the real server on PostgreSQL), got %q", ShapeEnv, v)
	}
}

// Temporal is the Temporal a stack runs, whichever its shape.
type Temporal interface {
	// Address is the frontend's host:port.
	Address() string
	// PID is the server process, whose CPU time a bench reads.
	PID() int
	// Describe names the shape and its settings for a bench's table.
	Describe() string
	// StorageBytes is how much its persistence holds now: the SQLite file and its
	// write-ahead log, or the server's databases in PostgreSQL.
	StorageBytes(ctx context.Context) (int64, error)
	Close() error
}

// startTemporal is the one switch between shapes.
func startTemporal(ctx context.Context, shape, root, dir string, pg *devstack.Postgres) (Temporal, error) {
	switch shape {
	case ShapeDev:
		return startDevServer(ctx, root, dir)
	case ShapeServer:
		return startServer(ctx, root, dir, pg)
	}
	return nil, fmt.Errorf("temporal shape %q", shape)
}

// devServer is make dev's Temporal: devstack.Temporal with make dev's arguments, on free
// ports and a fresh SQLite file of the bench's own.
type devServer struct {
	*devstack.Temporal
	pid int
}

func startDevServer(ctx context.Context, root, dir string) (*devServer, error) {
	bin, err := devstack.TemporalBinary(ctx, root, nil)
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	ui, err := freePort()
	if err != nil {
		return nil, err
	}
	db := filepath.Join(dir, "temporal.db")
	// Every run starts from an empty server: no workflows of an earlier run to replay.
	for _, f := range []string{db, db + "-wal", db + "-shm"} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("temporal: remove old %s: %w", f, err)
		}
	}
	t := &devstack.Temporal{Bin: bin, DBFile: db, Port: port, UIPort: ui, LogFile: filepath.Join(dir, "temporal.log")}
	if err := t.Start(ctx); err != nil {
		return nil, err
	}
	// devstack.Temporal keeps its process to itself; the one whose arguments name this
	// bench's own database file is it.
	pid, err := pidWithArg(db)
	if err != nil {
		_ = t.Stop()
		return nil, err
	}
	return &devServer{Temporal: t, pid: pid}, nil
}

func (d *devServer) PID() int { return d.pid }

func (d *devServer) Describe() string {
	var pragmas []string
	args := d.Args()
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--sqlite-pragma" {
			pragmas = append(pragmas, args[i+1])
		}
	}
	return "Temporal dev server, make dev's settings (SQLite file, " + strings.Join(pragmas, ", ") + ")"
}

func (d *devServer) Close() error { return d.Stop() }

func (d *devServer) StorageBytes(context.Context) (int64, error) {
	var total int64
	for _, f := range []string{d.DBFile, d.DBFile + "-wal"} {
		fi, err := os.Stat(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("temporal storage: %w", err)
		}
		total += fi.Size()
	}
	return total, nil
}

// realServer is make dev's production shape: the real server with its persistence in the
// bench's own cluster, in databases emptied first (as the dev server starts from a new file).
type realServer struct {
	*devstack.TemporalServer
}

func startServer(ctx context.Context, root, dir string, pg *devstack.Postgres) (*realServer, error) {
	bins, err := devstack.BuildServerBinaries(ctx, root, log.Printf)
	if err != nil {
		return nil, err
	}
	ports, err := devstack.FreeServerPorts()
	if err != nil {
		return nil, err
	}
	srv := &devstack.TemporalServer{Bins: bins, PG: pg, Dir: filepath.Join(dir, "temporal-server"),
		Ports: ports, Shards: devstack.DefaultHistoryShards, Log: log.Printf}
	conn, err := pgx.Connect(ctx, pg.URL("postgres"))
	if err != nil {
		return nil, fmt.Errorf("temporal server: connect: %w", err)
	}
	defer conn.Close(ctx)
	storeDB, visibilityDB := srv.Databases()
	for _, db := range []string{storeDB, visibilityDB} {
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)"); err != nil {
			return nil, fmt.Errorf("temporal server: drop %s: %w", db, err)
		}
	}
	if err := srv.Start(ctx); err != nil {
		_ = srv.Close()
		return nil, err
	}
	return &realServer{TemporalServer: srv}, nil
}

func (r *realServer) StorageBytes(ctx context.Context) (int64, error) {
	conn, err := pgx.Connect(ctx, r.PG.URL("postgres"))
	if err != nil {
		return 0, fmt.Errorf("temporal storage: %w", err)
	}
	defer conn.Close(ctx)
	storeDB, visibilityDB := r.Databases()
	var n int64
	err = conn.QueryRow(ctx, "SELECT pg_database_size($1) + pg_database_size($2)", storeDB, visibilityDB).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("temporal storage: %w", err)
	}
	return n, nil
}

func (r *realServer) Describe() string {
	return fmt.Sprintf("Temporal server (tools/temporal pin) on PostgreSQL, %d history shards, make dev's settings", r.Shards)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// pidWithArg finds the one process with arg among its command-line arguments.
func pidWithArg(arg string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("read /proc: %w", err)
	}
	var found []int
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, a := range strings.Split(string(b), "\x00") {
			if a == arg {
				found = append(found, pid)
				break
			}
		}
	}
	if len(found) != 1 {
		return 0, fmt.Errorf("find the process started with %s: %d processes match", arg, len(found))
	}
	return found[0], nil
}
