// Package testenv gives tests the real services they need and starts them itself: a
// PostgreSQL cluster (or the one TICKGATE_TEST_DATABASE_URL names) with a fresh migrated
// database per test, and a Temporal dev server per test package.
package testenv

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/dev/devstack"
	"github.com/tickgate/tickgate/migrations"
	"github.com/tickgate/tickgate/store"
)

// TestPostgresPort is where the harness's own cluster listens (make dev uses 55432).
const TestPostgresPort = 55433

var (
	adminOnce sync.Once
	adminURL  string
	adminErr  error
)

// AdminURL returns a superuser connection string to the test cluster, starting the
// harness's cluster under .dev/test when TICKGATE_TEST_DATABASE_URL is not set.
func AdminURL(t testing.TB) string {
	t.Helper()
	adminOnce.Do(func() { adminURL, adminErr = startCluster() })
	require.NoError(t, adminErr, "test PostgreSQL")
	return adminURL
}

// ClusterURL is AdminURL outside a test (make schema's command): a superuser connection
// string to the harness's cluster, started under .dev/test when it is not running and
// TICKGATE_TEST_DATABASE_URL is not set.
func ClusterURL() (string, error) {
	adminOnce.Do(func() { adminURL, adminErr = startCluster() })
	return adminURL, adminErr
}

func startCluster() (string, error) {
	if u := os.Getenv("TICKGATE_TEST_DATABASE_URL"); u != "" {
		return u, nil
	}
	root, err := devstack.RepoRoot()
	if err != nil {
		return "", err
	}
	unlock, err := devstack.LockFile(filepath.Join(root, ".dev", "test", "pg.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	bin, err := devstack.FindPostgresBinDir(true)
	if err != nil {
		return "", err
	}
	pg := &devstack.Postgres{BinDir: bin, DataDir: filepath.Join(root, ".dev", "test", "pg"), Port: TestPostgresPort, FindFreePort: true}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := pg.Start(ctx); err != nil {
		return "", err
	}
	return pg.URL("postgres"), nil
}

// DatabaseURL creates a fresh database, migrated to the latest schema, for this test and
// drops it when the test ends. It clones a template built once per migration set, so it
// costs one CREATE DATABASE.
func DatabaseURL(t testing.TB) string {
	t.Helper()
	admin := AdminURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	require.NoError(t, err)
	defer conn.Close(context.Background())

	template := "tickgate_tpl_" + migrationsHash(t)
	// Serialise template creation and cloning across test processes.
	_, err = conn.Exec(ctx, "SELECT pg_advisory_lock(7316)")
	require.NoError(t, err)
	var exists bool
	require.NoError(t, conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", template).Scan(&exists))
	if !exists {
		building := template + "_build"
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+building)
		_, err = conn.Exec(ctx, "CREATE DATABASE "+building)
		require.NoError(t, err)
		require.NoError(t, store.Migrate(ctx, withDatabase(t, admin, building)))
		_, err = conn.Exec(ctx, "ALTER DATABASE "+building+" RENAME TO "+template)
		require.NoError(t, err)
	}
	name := "tickgate_t_" + randomSuffix()
	_, err = conn.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s", name, template))
	_, _ = conn.Exec(ctx, "SELECT pg_advisory_unlock(7316)")
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	return withDatabase(t, admin, name)
}

// Store opens a pool on a fresh migrated database (see DatabaseURL), closed at cleanup.
func Store(t testing.TB) *store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := store.Open(ctx, DatabaseURL(t))
	require.NoError(t, err)
	t.Cleanup(st.Close)
	return st
}

func withDatabase(t testing.TB, rawURL, db string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	u.Path = "/" + db
	return u.String()
}

var (
	hashOnce sync.Once
	hashVal  string
)

// migrationsHash names the template after the migration files' contents, so a changed
// migration gets a new template instead of a stale one.
func migrationsHash(t testing.TB) string {
	hashOnce.Do(func() {
		h := sha256.New()
		_ = fs.WalkDir(migrations.FS, ".", func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, _ := fs.ReadFile(migrations.FS, path)
			h.Write([]byte(path))
			h.Write(b)
			return nil
		})
		hashVal = hex.EncodeToString(h.Sum(nil))[:12]
	})
	return hashVal
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return strings.ToLower(hex.EncodeToString(b))
}
