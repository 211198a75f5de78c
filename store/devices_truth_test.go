package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

// TestDevicesTaskWithNoEligibleDeviceFails: a task that becomes active while no device is
// eligible ends failed with that reason (not success), and the next task activates at once.
func TestDevicesTaskWithNoEligibleDeviceFails(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	devFarm(t, st, "pc1", 5, 1)
	_, _, err := st.SetDeviceStatus(ctx, "pc1-d00", domain.DeviceOffline, "")
	require.NoError(t, err)
	t1, err := st.CreateDeviceTask(ctx, store.NewDeviceTask{})
	require.NoError(t, err)

	adv, err := st.Advance(ctx, oneMinute)
	require.NoError(t, err)
	require.Equal(t, []int64{t1.ID}, adv.Activated)
	require.Equal(t, []int64{t1.ID}, adv.Finished, "nothing can run it: it ends in the same step")
	got, err := st.GetDeviceTask(ctx, t1.ID)
	require.NoError(t, err)
	require.Equal(t, domain.DeviceTaskFailed, got.Status)
	require.Contains(t, got.Error, "no eligible device")
	require.NotNil(t, got.FinishedAt)

	// The device comes back: the next task activates and runs on it.
	_, _, err = st.SetDeviceStatus(ctx, "pc1-d00", domain.DeviceOnline, "")
	require.NoError(t, err)
	t2, err := st.CreateDeviceTask(ctx, store.NewDeviceTask{})
	require.NoError(t, err)
	adv, err = st.Advance(ctx, oneMinute)
	require.NoError(t, err)
	require.Equal(t, t2.ID, adv.ActiveTaskID)
	require.Equal(t, 1, adv.Refilled)
}

// TestDevicesTaskWhoseDevicesAllLeftFails: when every execution of the active task was
// canceled because its device left the eligible set, the task ends failed saying so.
func TestDevicesTaskWhoseDevicesAllLeftFails(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	devFarm(t, st, "pc1", 5, 1)
	task := activate(t, st, store.NewDeviceTask{})
	_, _, err := st.SetDeviceStatus(ctx, "pc1-d00", domain.DeviceOffline, "")
	require.NoError(t, err)

	adv, err := st.Advance(ctx, oneMinute)
	require.NoError(t, err)
	require.Equal(t, []int64{task.ID}, adv.Finished)
	got, err := st.GetDeviceTask(ctx, task.ID)
	require.NoError(t, err)
	require.Equal(t, domain.DeviceTaskFailed, got.Status)
	require.Contains(t, got.Error, "no eligible device left")
}

// TestDevicesStatusesTheEngineNeverSetsAreGone: devices are never 'busy' and tasks never
// 'retrying' (the engine has no step that sets them), so the schema refuses both.
func TestDevicesStatusesTheEngineNeverSetsAreGone(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	devFarm(t, st, "pc1", 5, 1)
	task, err := st.CreateDeviceTask(ctx, store.NewDeviceTask{})
	require.NoError(t, err)

	_, err = st.Pool.Exec(ctx, "UPDATE devices SET status = 'busy' WHERE serial = 'pc1-d00'")
	requireCheckViolation(t, err, "devices")
	_, err = st.Pool.Exec(ctx, "UPDATE tasks SET status = 'retrying' WHERE id = $1", task.ID)
	requireCheckViolation(t, err, "tasks")
}

// requireCheckViolation: err is a CHECK constraint of table refusing the row.
func requireCheckViolation(t *testing.T, err error, table string) {
	t.Helper()
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "want a check violation, got %v", err)
	require.Equal(t, "23514", pgErr.Code, "%v", err)
	require.Equal(t, table, pgErr.TableName)
}

// TestDevicesSettingsHaveNoSQLDefault: a device setting's default is written once, in
// domain/device_settings.go. No column carries a copy: a pending task has no attempt limit
// or timeout until it becomes active and takes the configuration's, and a PC or an
// execution is always given its capacity or attempt limit by the code.
func TestDevicesSettingsHaveNoSQLDefault(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	for _, col := range [][2]string{
		{"pcs", "device_capacity"}, {"tasks", "max_attempts"}, {"tasks", "device_timeout_ms"}, {"task_devices", "max_attempts"},
	} {
		var def *string
		require.NoError(t, st.Pool.QueryRow(ctx, `SELECT column_default FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = $1 AND column_name = $2`, col[0], col[1]).Scan(&def))
		require.Nil(t, def, "%s.%s has a default of its own", col[0], col[1])
	}
	task, err := st.CreateDeviceTask(ctx, store.NewDeviceTask{})
	require.NoError(t, err)
	require.Nil(t, task.MaxAttempts, "a pending task has no attempt limit yet")
	require.Nil(t, task.DeviceTimeoutMs)
	_, err = st.Pool.Exec(ctx, `UPDATE tasks SET max_attempts = 3 WHERE id = $1`, task.ID)
	requireCheckViolation(t, err, "tasks")
}

// TestDevicesAdvanceTakesTheSettingsItIsGiven: the task activated after another ended takes
// the settings in force, not the ended task's.
func TestDevicesAdvanceTakesTheSettingsItIsGiven(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	devFarm(t, st, "pc1", 5, 1)
	t1 := activate(t, st, store.NewDeviceTask{}) // 20 minutes, 3 attempts
	t2, err := st.CreateDeviceTask(ctx, store.NewDeviceTask{})
	require.NoError(t, err)
	_, err = st.CancelDeviceTask(ctx, t1.ID)
	require.NoError(t, err)
	adv, err := st.Advance(ctx, domain.DeviceSettings{MaxAttempts: 5, Timeout: 5 * time.Minute})
	require.NoError(t, err)
	require.Equal(t, []int64{t2.ID}, adv.Activated)
	got, err := st.GetDeviceTask(ctx, t2.ID)
	require.NoError(t, err)
	require.Equal(t, int32(5), *got.MaxAttempts)
	require.Equal(t, (5 * time.Minute).Milliseconds(), *got.DeviceTimeoutMs)

	_, err = st.Advance(ctx, domain.DeviceSettings{})
	require.ErrorContains(t, err, "max attempts")
}
