package testenv_test

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/dev/devstack"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/internal/testing/treecopy"
)

// TestStoreGivesAMigratedDatabase: a test's store is a database of its own, migrated to the
// latest schema and writable.
func TestStoreGivesAMigratedDatabase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st := testenv.Store(t)
	var applied int
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT count(*) FROM goose_db_version WHERE is_applied AND version_id > 0`).Scan(&applied))
	require.Positive(t, applied, "the migrations were applied")
	_, err := st.Pool.Exec(ctx, `CREATE TABLE scratch (id int)`)
	require.NoError(t, err, "the database is the test's own and writable")
}

// TestHarnessRunsFromACheckoutThePostgresUserCannotEnter copies the checkout into a 0700
// directory of a temporary home (as a clone under /root or in a `mktemp -d` directory is)
// and runs a test there that needs the harness's PostgreSQL cluster. As root, the cluster
// runs as the postgres user, which cannot enter the copy: the harness must place the cluster
// elsewhere (devstack.ClusterDir, applied by Postgres.Start) and the test must pass.
func TestHarnessRunsFromACheckoutThePostgresUserCannotEnter(t *testing.T) {
	root, err := devstack.RepoRoot()
	require.NoError(t, err)
	bin, err := devstack.FindPostgresBinDir(true)
	require.NoError(t, err)
	home := filepath.Join(t.TempDir(), "home")
	require.NoError(t, os.Mkdir(home, 0o700))
	require.NoError(t, os.Chmod(home, 0o700)) // whatever the umask
	checkout := filepath.Join(home, "tickgate")
	// The module's files: not .git, the .dev state nor built binaries.
	require.NoError(t, treecopy.Copy(root, checkout, func(rel string, d fs.DirEntry) bool {
		return d.IsDir() && (rel == ".git" || rel == ".dev" || rel == "bin" || d.Name() == "node_modules")
	}))

	wanted := filepath.Join(checkout, ".dev", "test", "pg")
	t.Cleanup(func() {
		// The child's cluster outlives the child (as the harness's always does): stop it.
		pg := &devstack.Postgres{BinDir: bin, DataDir: devstack.ClusterDir(wanted)}
		_ = pg.Stop()
		_ = devstack.RemoveClusterDir(wanted)
	})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-run", "^TestStoreGivesAMigratedDatabase$", "./internal/testing/testenv/")
	cmd.Dir = checkout
	for _, kv := range os.Environ() {
		// The child starts its own cluster, as `make test` from a fresh clone does.
		if !strings.HasPrefix(kv, "TICKGATE_TEST_DATABASE_URL=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go test in %s:\n%s", checkout, out)
	require.Contains(t, string(out), "ok ", "the test ran and passed:\n%s", out)

	placed := devstack.ClusterDir(wanted)
	require.FileExists(t, filepath.Join(placed, "PG_VERSION"), "the child's cluster is where ClusterDir says")
	if os.Geteuid() == 0 {
		require.NotEqual(t, wanted, placed, "as root the cluster cannot live in the checkout")
		require.NoDirExists(t, wanted)
	}
}
