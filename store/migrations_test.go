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

// TestMigration00044SpellsCanceledOnce: rows stored with the old spelling ('cancelled' tasks,
// 'CANCELLED' executions and events) read 'canceled'/'CANCELED' after migration 00044, the
// CHECKs refuse the old spelling, and a canceled execution still does not count as the
// task's run on its device (devices_unrun_by).
func TestMigration00044SpellsCanceledOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(testenv.DatabaseURL(t))
	require.NoError(t, err)
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS)
	require.NoError(t, err)
	_, err = provider.DownTo(ctx, 43)
	require.NoError(t, err)

	var taskID, execID, deviceID int64
	require.NoError(t, db.QueryRowContext(ctx, `
		WITH p AS (INSERT INTO pcs (name, device_capacity) VALUES ('pc1', 1) RETURNING id)
		INSERT INTO devices (pc_id, serial) SELECT id, 'd1' FROM p RETURNING id`).Scan(&deviceID))
	require.NoError(t, db.QueryRowContext(ctx,
		`INSERT INTO tasks (status, finished_at) VALUES ('cancelled', now()) RETURNING id`).Scan(&taskID))
	require.NoError(t, db.QueryRowContext(ctx, `
		INSERT INTO task_devices (task_id, device_id, pc_id, status, max_attempts, completed_at)
		SELECT $1, d.id, d.pc_id, 'CANCELLED', 1, now() FROM devices d WHERE d.id = $2 RETURNING id`, taskID, deviceID).Scan(&execID))
	_, err = db.ExecContext(ctx, `INSERT INTO task_device_events (task_device_id, attempt, type) VALUES ($1, 1, 'CANCELLED')`, execID)
	require.NoError(t, err)

	_, err = provider.Up(ctx)
	require.NoError(t, err)
	var task, exec, event string
	require.NoError(t, db.QueryRowContext(ctx, `SELECT status FROM tasks WHERE id = $1`, taskID).Scan(&task))
	require.NoError(t, db.QueryRowContext(ctx, `SELECT status FROM task_devices WHERE id = $1`, execID).Scan(&exec))
	require.NoError(t, db.QueryRowContext(ctx, `SELECT type FROM task_device_events WHERE task_device_id = $1`, execID).Scan(&event))
	require.Equal(t, string(domain.DeviceTaskCanceled), task)
	require.Equal(t, string(domain.ExecutionCanceled), exec)
	require.Equal(t, string(domain.EvCanceled), event)

	var unrun int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM devices_unrun_by($1)`, taskID).Scan(&unrun))
	require.Equal(t, 1, unrun, "a canceled execution does not count as the task's run on its device")
	_, err = db.ExecContext(ctx, `UPDATE tasks SET status = 'cancelled' WHERE id = $1`, taskID)
	require.Error(t, err, "the old spelling is refused")
	_, err = db.ExecContext(ctx, `UPDATE task_devices SET status = 'CANCELLED' WHERE id = $1`, execID)
	require.Error(t, err, "the old spelling is refused")
}
