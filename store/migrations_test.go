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

// TestMigration00105KeepsSecretsApart: an http action stored with its header values keeps
// their names only, the values moving to schedule_header_values; the history's old entries
// lose the values too; a tgs_ signing secret becomes whsec_ and the base64 of its text, the
// same HMAC key, so a receiver holding the old secret verifies with it. Down puts them back.
func TestMigration00105KeepsSecretsApart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(testenv.DatabaseURL(t))
	require.NoError(t, err)
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS)
	require.NoError(t, err)
	_, err = provider.DownTo(ctx, 104)
	require.NoError(t, err)

	const old = "tgs_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	var id int64
	require.NoError(t, db.QueryRowContext(ctx, `
		INSERT INTO schedules (name, spec, action, overlap, catchup_window_ms, skip_if_successful, paused, pause_note, retry)
		VALUES ('hook', '{"interval":"1h"}',
		        '{"kind":"http","url":"https://example.com","method":"POST","headers":{"X-b":"2","Authorization":"Bearer s3cret"},"timeout":"10s"}',
		        'skip', 0, false, false, '', '{"max_attempts":3}') RETURNING id`).Scan(&id))
	_, err = db.ExecContext(ctx, `INSERT INTO schedule_secrets (schedule_name, secret) VALUES ('hook', $1)`, old)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO schedule_history (schedule_id, kind, actor, door, changes) VALUES ($1, 'update', 'ops', 'api',
		'[{"field":"spec","from":{"interval":"2h"},"to":{"interval":"1h"}},
		  {"field":"action","from":{"kind":"http","url":"https://a","headers":{"Authorization":"Bearer older"}},"to":{"kind":"http","url":"https://example.com","headers":{"Authorization":"Bearer s3cret","X-b":"2"}}}]')`, id)
	require.NoError(t, err)

	_, err = provider.Up(ctx)
	require.NoError(t, err)
	var action, values, changes, secret string
	require.NoError(t, db.QueryRowContext(ctx, `SELECT action::text FROM schedules WHERE id = $1`, id).Scan(&action))
	require.NoError(t, db.QueryRowContext(ctx, `SELECT header_values::text FROM schedule_header_values WHERE schedule_name = 'hook'`).Scan(&values))
	require.NoError(t, db.QueryRowContext(ctx, `SELECT changes::text FROM schedule_history WHERE schedule_id = $1`, id).Scan(&changes))
	require.NoError(t, db.QueryRowContext(ctx, `SELECT secret FROM schedule_secrets WHERE schedule_name = 'hook'`).Scan(&secret))
	require.JSONEq(t, `{"kind":"http","url":"https://example.com","method":"POST","header_names":["Authorization","X-b"],"timeout":"10s"}`, action)
	require.JSONEq(t, `{"X-b":"2","Authorization":"Bearer s3cret"}`, values)
	require.NotContains(t, changes, "s3cret")
	require.NotContains(t, changes, "older")
	require.JSONEq(t, `[{"field":"spec","from":{"interval":"2h"},"to":{"interval":"1h"}},
		{"field":"action","from":{"kind":"http","url":"https://a","header_names":["Authorization"]},"to":{"kind":"http","url":"https://example.com","header_names":["Authorization","X-b"]}}]`, changes)
	key, err := domain.SigningKey(secret)
	require.NoError(t, err)
	require.Equal(t, old, string(key), "the same key bytes as before")

	_, err = provider.DownTo(ctx, 104)
	require.NoError(t, err)
	require.NoError(t, db.QueryRowContext(ctx, `SELECT action::text FROM schedules WHERE id = $1`, id).Scan(&action))
	require.NoError(t, db.QueryRowContext(ctx, `SELECT secret FROM schedule_secrets WHERE schedule_name = 'hook'`).Scan(&secret))
	require.JSONEq(t, `{"kind":"http","url":"https://example.com","method":"POST","headers":{"X-b":"2","Authorization":"Bearer s3cret"},"timeout":"10s"}`, action)
	require.Equal(t, old, secret)
	_, err = provider.Up(ctx)
	require.NoError(t, err)
}
