package testenv

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"

	"github.com/tickgate/tickgate/internal/dev/devstack"
)

var (
	temporalOnce   sync.Once
	temporalServer *testsuite.DevServer
	temporalErr    error
)

// TemporalAddress starts (once per test binary) a real Temporal dev server from the pinned
// CLI, with tickgate's search attributes, and returns its frontend address. Packages that
// use it call Main from TestMain so the server stops with the tests.
func TemporalAddress(t testing.TB) string {
	t.Helper()
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

// Main runs the package's tests and then stops the dev server if one was started.
func Main(m *testing.M) {
	code := m.Run()
	if temporalServer != nil {
		_ = temporalServer.Stop()
	}
	os.Exit(code)
}
