package testenv

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"

	"github.com/tickgate/tickgate/internal/dev/devstack"
)

var (
	temporalOnce   sync.Once
	temporalServer *testsuite.DevServer
	temporalErr    error
	// realServer is the production shape's server when TICKGATE_TEST_TEMPORAL=server.
	realServer     *devstack.TemporalServer
	realServerAddr string
)

// TemporalShapeEnv picks the Temporal the harness starts: unset, the CLI's dev server;
// "server", the real server on PostgreSQL with several history shards (make test-cluster).
const TemporalShapeEnv = "TICKGATE_TEST_TEMPORAL"

// TemporalAddress starts (once per test binary) a real Temporal dev server from the pinned
// CLI, with tickgate's search attributes, and returns its frontend address. Packages that
// use it call Main from TestMain so the server stops with the tests. With
// TICKGATE_TEST_TEMPORAL=server it starts the real server instead (see StartTemporalServer).
func TemporalAddress(t testing.TB) string {
	t.Helper()
	if os.Getenv(TemporalShapeEnv) == "server" {
		temporalOnce.Do(func() {
			realServer, temporalErr = startTemporalServer(t)
			if temporalErr == nil {
				realServerAddr = realServer.Address()
			}
		})
		require.NoError(t, temporalErr, "Temporal server (%s=server)", TemporalShapeEnv)
		return realServerAddr
	}
	temporalOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		root, err := devstack.RepoRoot()
		if err != nil {
			temporalErr = err
			return
		}
		bin, err := devstack.TemporalBinary(ctx, root, func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) })
		if err != nil {
			temporalErr = err
			return
		}
		var extra []string
		for _, sa := range devstack.SearchAttributes {
			extra = append(extra, "--search-attribute", sa+"=Keyword")
		}
		temporalServer, temporalErr = testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
			ExistingPath:  bin,
			LogLevel:      "error",
			ClientOptions: &client.Options{Namespace: "default"},
			ExtraArgs:     extra,
		})
	})
	require.NoError(t, temporalErr, "Temporal dev server")
	return temporalServer.FrontendHostPort()
}

// TemporalClient dials the package's dev server; the client is closed at cleanup.
func TemporalClient(t testing.TB) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: TemporalAddress(t), Namespace: "default"})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// StartTemporalServer starts a real Temporal server of its own for the test (databases of
// its own on the harness's PostgreSQL cluster, free ports); it stops, and its databases go,
// at cleanup.
func StartTemporalServer(t testing.TB) *devstack.TemporalServer {
	t.Helper()
	s, err := startTemporalServer(t)
	require.NoError(t, err, "Temporal server")
	t.Cleanup(func() { closeTemporalServer(s) })
	return s
}

func startTemporalServer(t testing.TB) (*devstack.TemporalServer, error) {
	admin := AdminURL(t)
	u, err := url.Parse(admin)
	if err != nil {
		return nil, fmt.Errorf("admin url: %w", err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return nil, fmt.Errorf("admin url port: %w", err)
	}
	root, err := devstack.RepoRoot()
	if err != nil {
		return nil, err
	}
	bins, err := devstack.BuildServerBinaries(context.Background(), root, func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) })
	if err != nil {
		return nil, err
	}
	ports, err := devstack.FreeServerPorts()
	if err != nil {
		return nil, err
	}
	suffix := randomSuffix()
	s := &devstack.TemporalServer{
		Bins: bins, PG: &devstack.Postgres{Port: port}, Ports: ports, Shards: devstack.DefaultHistoryShards,
		Dir: filepath.Join(root, ".dev", "test", "temporal-server-"+suffix), DBPrefix: "temporal_" + suffix,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		closeTemporalServer(s)
		return nil, err
	}
	return s, nil
}

// closeTemporalServer stops the server and drops its databases and directory.
func closeTemporalServer(s *devstack.TemporalServer) {
	_ = s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if conn, err := pgx.Connect(ctx, s.PG.URL("postgres")); err == nil {
		store, visibility := s.Databases()
		for _, db := range []string{store, visibility} {
			_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)")
		}
		_ = conn.Close(ctx)
	}
	_ = os.RemoveAll(s.Dir)
}

// Main runs the package's tests and then stops the dev server (or the real server) if one
// was started.
func Main(m *testing.M) {
	code := m.Run()
	if temporalServer != nil {
		_ = temporalServer.Stop()
	}
	if realServer != nil {
		closeTemporalServer(realServer)
	}
	os.Exit(code)
}
