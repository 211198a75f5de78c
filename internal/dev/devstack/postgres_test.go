package devstack_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/dev/devstack"
)

// A checkout cloned into a directory the postgres user cannot enter (as root: ~/src under
// /root, or a `mktemp -d` directory, both 0700 and owned by root) must still get a working
// cluster. Callers name the directory they want and Start places it (ClusterDir): this asks
// for one under such a parent, then starts a real cluster, queries it and stops it. It also
// starts one where an earlier tickgate left the fallback directory 0700, and removes it.
func TestClusterStartsUnderAParentThePostgresUserCannotEnter(t *testing.T) {
	bin, err := devstack.FindPostgresBinDir(true)
	require.NoError(t, err)
	home := filepath.Join(t.TempDir(), "home")
	require.NoError(t, os.Mkdir(home, 0o700))
	require.NoError(t, os.Chmod(home, 0o700)) // whatever the umask
	checkoutPG := filepath.Join(home, "src", "tickgate", ".dev", "test", "pg")

	pg := &devstack.Postgres{BinDir: bin, DataDir: checkoutPG, Port: 55480, FindFreePort: true}
	t.Cleanup(func() { _ = pg.Stop(); _ = devstack.RemoveClusterDir(checkoutPG) })
	startQueryStop(t, pg)
	dir := pg.DataDir
	require.Equal(t, devstack.ClusterDir(checkoutPG), dir, "Start placed the cluster with ClusterDir")
	if os.Geteuid() == 0 {
		// The cluster runs as the postgres user, which cannot reach anything under home.
		require.False(t, strings.HasPrefix(dir, home+string(os.PathSeparator)), "cluster dir %s stays under the unreachable %s", dir, home)
	} else {
		require.Equal(t, checkoutPG, dir, "a cluster run as ourselves stays in the checkout")
	}

	if os.Geteuid() == 0 {
		// Before the fix, Start created the fallback directory 0700 and initdb failed on it;
		// a machine that ran that version still has it so. ClusterDir repairs it.
		require.NoError(t, os.Chmod(filepath.Dir(dir), 0o700))
		pg = &devstack.Postgres{BinDir: bin, DataDir: checkoutPG, Port: 55480, FindFreePort: true}
		startQueryStop(t, pg)
		require.Equal(t, dir, pg.DataDir, "the fallback is stable: the same cluster is reused")
	}

	require.NoError(t, devstack.RemoveClusterDir(checkoutPG))
	require.NoDirExists(t, dir, "RemoveClusterDir removes the cluster wherever it was placed")
	if os.Geteuid() == 0 {
		require.NoDirExists(t, filepath.Dir(dir), "and its fallback directory under /tmp")
	}
}

func startQueryStop(t *testing.T, pg *devstack.Postgres) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, pg.Start(ctx))
	require.True(t, pg.Running(), "a postmaster answers for %s", pg.DataDir)
	conn, err := pgx.Connect(ctx, pg.URL("postgres"))
	require.NoError(t, err)
	var one int
	require.NoError(t, conn.QueryRow(ctx, "SELECT 1").Scan(&one))
	require.Equal(t, 1, one)
	require.NoError(t, conn.Close(ctx))
	require.NoError(t, pg.Stop())
	require.False(t, pg.Running(), "the cluster stopped")
}

// The ports the project's clusters use lie in Linux's ephemeral range, so an outgoing
// connection may hold one as its local port: nothing listens there, yet the server cannot
// bind it. A cluster asked for such a port with FindFreePort takes the next free one (it
// once failed with "could not bind … Address already in use" in `make test`).
func TestClusterSkipsAPortAConnectionHoldsAsItsLocalPort(t *testing.T) {
	bin, err := devstack.FindPostgresBinDir(true)
	require.NoError(t, err)
	server, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer server.Close()
	go func() {
		for {
			c, err := server.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	held := probe.Addr().(*net.TCPAddr).Port
	require.NoError(t, probe.Close())
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: held}}
	conn, err := d.Dial("tcp", server.Addr().String())
	require.NoError(t, err)
	defer conn.Close()

	dataDir := filepath.Join(t.TempDir(), "pg")
	pg := &devstack.Postgres{BinDir: bin, DataDir: dataDir, Port: held, FindFreePort: true}
	t.Cleanup(func() { _ = pg.Stop(); _ = devstack.RemoveClusterDir(dataDir) })
	startQueryStop(t, pg)
	require.NotEqual(t, held, pg.Port, "the held port was skipped")
}
