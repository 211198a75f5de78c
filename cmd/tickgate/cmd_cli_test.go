package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

// TestDevAdminToken: make dev's hook writes a working admin token to .dev/admin-token
// (mode 0600) and keeps it across restarts; a revoked one is replaced.
func TestDevAdminToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := testenv.DatabaseURL(t)
	dir := t.TempDir()
	require.NoError(t, writeDevAdminToken(ctx, dbURL, dir))
	b, err := os.ReadFile(filepath.Join(dir, "admin-token"))
	require.NoError(t, err)
	first := strings.TrimSpace(string(b))
	fi, err := os.Stat(filepath.Join(dir, "admin-token"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	st, err := store.Open(ctx, dbURL)
	require.NoError(t, err)
	defer st.Close()
	row, err := st.Authenticate(ctx, first)
	require.NoError(t, err)
	require.Equal(t, domain.RoleAdmin, row.Role)

	require.NoError(t, writeDevAdminToken(ctx, dbURL, dir))
	b, _ = os.ReadFile(filepath.Join(dir, "admin-token"))
	require.Equal(t, first, strings.TrimSpace(string(b)), "a working token is kept")

	_, err = st.RevokeToken(ctx, row.ID)
	require.NoError(t, err)
	require.NoError(t, writeDevAdminToken(ctx, dbURL, dir))
	b, _ = os.ReadFile(filepath.Join(dir, "admin-token"))
	second := strings.TrimSpace(string(b))
	require.NotEqual(t, first, second)
	_, err = st.Authenticate(ctx, second)
	require.NoError(t, err)
}

// TestCreateTokenInDB: the bootstrap path migrates a fresh database and creates the token.
func TestCreateTokenInDB(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := testenv.DatabaseURL(t)
	id, token, err := createTokenInDB(ctx, dbURL, string(domain.RoleAgent), "pc-1", "bootstrap")
	require.NoError(t, err)
	require.Positive(t, id)
	st, err := store.Open(ctx, dbURL)
	require.NoError(t, err)
	defer st.Close()
	row, err := st.Authenticate(ctx, token)
	require.NoError(t, err)
	require.Equal(t, "pc-1", *row.Pc)
}
