package store_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/migrations"
	"github.com/tickgate/tickgate/store"
)

// TestMigrationsRollBackAndReapply: every migration's Down undoes its Up — the schema rolls
// back to nothing and is built again, rollout_summaries and all.
func TestMigrationsRollBackAndReapply(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testenv.DatabaseURL(t)
	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS)
	require.NoError(t, err)

	_, err = provider.DownTo(ctx, 0)
	require.NoError(t, err)
	var tables int
	require.NoError(t, db.QueryRowContext(ctx,
		`SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public' AND table_name <> 'goose_db_version'`).Scan(&tables))
	require.Zero(t, tables)

	_, err = provider.Up(ctx)
	require.NoError(t, err)
	st, err := store.Open(ctx, url)
	require.NoError(t, err)
	defer st.Close()
	r, err := st.CreateRollout(ctx, "again", 1, []store.NewTaskRun{task("db", "DML", "1")})
	require.NoError(t, err)
	sum, err := st.GetRolloutSummary(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, domain.RolloutRunning, sum.Status)
	require.EqualValues(t, 1, sum.Counts[string(domain.TaskRunPending)])
}
