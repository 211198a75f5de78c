package deviceengine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/deviceengine"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

// TestMain stops the package's test services after its tests.
func TestMain(m *testing.M) { testenv.Main(m) }

// TestTaskAdvancer: a request after a commit activates the next task with the advancer's
// settings; Close finishes the queued request before it returns; an advance that changed
// the active task, or failed, notifies the dispatcher, and one that found nothing to do
// does not.
func TestTaskAdvancer(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	_, err := st.CreatePC(ctx, "pc1", 5)
	require.NoError(t, err)
	_, _, err = st.CreateDevice(ctx, "pc1", "pc1-d00")
	require.NoError(t, err)
	settings := domain.DeviceSettings{MaxAttempts: 4, Timeout: 7 * time.Minute}

	var mu sync.Mutex
	notified := 0
	notify := func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		notified++
		return nil
	}
	notifications := func() int {
		mu.Lock()
		defer mu.Unlock()
		return notified
	}
	adv, err := deviceengine.NewTaskAdvancer(st, deviceengine.TaskAdvancerOptions{Settings: settings, Notify: notify})
	require.NoError(t, err)
	t1, err := st.CreateDeviceTask(ctx, store.NewDeviceTask{})
	require.NoError(t, err)
	adv.AdvanceSoon("queued before Start")
	adv.Start()
	require.NoError(t, adv.Close(ctx))
	got, err := st.GetDeviceTask(ctx, t1.ID)
	require.NoError(t, err)
	require.Equal(t, domain.DeviceTaskRunning, got.Status, "Close drained the queued request")
	require.Equal(t, int32(4), *got.MaxAttempts)
	require.Equal(t, (7 * time.Minute).Milliseconds(), *got.DeviceTimeoutMs)
	require.Equal(t, 1, notifications())
	adv.AdvanceSoon("after Close: ignored, not a panic")
	require.Equal(t, 1, notifications())

	// The running task has work left: the advance changes nothing and tells no one.
	adv, err = deviceengine.NewTaskAdvancer(st, deviceengine.TaskAdvancerOptions{Settings: settings, Notify: notify})
	require.NoError(t, err)
	adv.Start()
	adv.AdvanceSoon("a result that left work")
	require.NoError(t, adv.Close(ctx))
	require.Equal(t, 1, notifications())

	// A store whose pool is closed fails every Advance: the dispatcher is told all the same,
	// and retries the step.
	broken := store.New(testenv.Store(t).Pool)
	broken.Pool.Close()
	adv, err = deviceengine.NewTaskAdvancer(broken, deviceengine.TaskAdvancerOptions{Settings: settings, Notify: notify})
	require.NoError(t, err)
	adv.Start()
	adv.AdvanceSoon("a result")
	require.NoError(t, adv.Close(ctx))
	require.Equal(t, 2, notifications(), "a failed advance is handed to the dispatcher")

	_, err = deviceengine.NewTaskAdvancer(st, deviceengine.TaskAdvancerOptions{})
	require.Error(t, err, "an advancer needs its settings")
}
