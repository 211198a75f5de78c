package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

// A device task's rate, windows and the global freeze (docs/progressive.md) bound when its
// executions are SENT; the slots (D2) are filled as ever, the executions held back wait
// CREATED.

// The rate counts sends across the farm, whatever the PC: 3 a minute lets three agents of
// two PCs, claiming at once, take three executions between them — not one more — while each
// PC's slots stay full (D2).
func TestDeviceTaskRateBoundsSendsAcrossTheFarm(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	devFarm(t, st, "pc-a", 5, 5)
	devFarm(t, st, "pc-b", 5, 5)
	task := activate(t, st, store.NewDeviceTask{Rate: &domain.Rate{PerMinute: intp(3)}})
	require.Equal(t, int64(5), slots(t, st, "pc-a").Running, "D2: the slots are filled as ever")

	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmds, err := st.Claim(ctx, []string{"pc-a", "pc-b"}[i%2], 5)
			require.NoError(t, err)
			mu.Lock()
			total += len(cmds)
			mu.Unlock()
		}()
	}
	wg.Wait()
	require.Equal(t, 3, total, "three sends this minute, across both PCs")
	require.Empty(t, claimed(t, st, "pc-a", 5))
	h, err := st.DeviceTaskGatesOf(ctx, task.ID)
	require.NoError(t, err)
	require.Equal(t, int64(3), h.Rate)
	require.LessOrEqual(t, h.RateRoom, int64(0))
	for _, pc := range []string{"pc-a", "pc-b"} {
		s := slots(t, st, pc)
		require.LessOrEqual(t, s.Running, s.Target, "D2 on %s", pc)
	}
}

// The exponential rate grows with successes: 2 a minute to begin with, 4 once 2 succeeded.
func TestDeviceTaskExponentialRateGrowsWithSuccesses(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	devFarm(t, st, "pc1", 10, 10)
	activate(t, st, store.NewDeviceTask{Rate: &domain.Rate{PerMinute: intp(8), Exponential: &domain.ExponentialRate{BasePerMinute: 2, Factor: 2, AfterSucceeded: 2}}})
	first := claimed(t, st, "pc1", 10)
	require.Len(t, first, 2, "the base rate")
	require.Empty(t, claimed(t, st, "pc1", 10))
	for _, c := range first {
		_, err := st.ReportResult(ctx, c.ID, store.Result{Succeeded: true})
		require.NoError(t, err)
	}
	require.Len(t, claimed(t, st, "pc1", 10), 2, "4 a minute after 2 succeeded, 2 of them sent already")
}

// Outside every window nothing is sent and the task's windows gate names the next opening; inside
// one, the claim sends.
func TestDeviceTaskWindowsGateSends(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	devFarm(t, st, "pc1", 2, 2)
	now := time.Now().UTC()
	opens := now.Truncate(time.Hour).Add(2 * time.Hour)
	task := activate(t, st, store.NewDeviceTask{Windows: []domain.Window{{Cron: fmt.Sprintf("0 %d * * *", opens.Hour()), Duration: "30m"}}})
	require.Empty(t, claimed(t, st, "pc1", 2), "outside its windows nothing is sent")
	h, err := st.DeviceTaskGatesOf(ctx, task.ID)
	require.NoError(t, err)
	require.True(t, h.OutsideWindows)
	require.Equal(t, opens, h.OpensAt.UTC())
	got, err := st.GetDeviceTask(ctx, task.ID)
	require.NoError(t, err)
	require.Equal(t, opens, got.WindowStart.UTC(), "the claim computed the span")
	require.Equal(t, int64(2), slots(t, st, "pc1").Running, "the executions wait in their slots")

	// A window open now (every minute, for an hour).
	st2 := testenv.Store(t)
	devFarm(t, st2, "pc2", 2, 2)
	activate(t, st2, store.NewDeviceTask{Windows: []domain.Window{{Cron: "* * * * *", Duration: "1h"}}})
	require.Len(t, claimed(t, st2, "pc2", 2), 2)
}

// While the global freeze holds, no agent's claim sends anything, and a success is recorded
// without handing out the slot's next execution; lifting it lets the claims through.
func TestGlobalFreezeStopsDeviceSends(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	devFarm(t, st, "pc1", 1, 3)
	activate(t, st, store.NewDeviceTask{})
	cmds := claimed(t, st, "pc1", 1)
	require.Len(t, cmds, 1)
	_, err := st.SetFreeze(ctx, nil, "incident", store.Actor{Label: "token 1 (ops)"})
	require.NoError(t, err)
	ans, err := st.RecordSuccesses(ctx, []store.SuccessReport{success(cmds[0], true)})
	require.NoError(t, err)
	require.Equal(t, domain.SuccessUndecided, ans[0].Verdict, "frozen: the general path records it, without a next")
	out, err := st.ReportResult(ctx, cmds[0].ID, store.Result{Succeeded: true})
	require.NoError(t, err)
	require.Len(t, out.Refilled, 1, "the slot is refilled (D2), CREATED")
	require.Empty(t, claimed(t, st, "pc1", 1), "nothing is sent while frozen")
	_, err = st.LiftFreeze(ctx, nil, store.Actor{Label: "token 1 (ops)"})
	require.NoError(t, err)
	require.Len(t, claimed(t, st, "pc1", 1), 1)
}
