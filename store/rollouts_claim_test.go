package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

// Claimers of every kind race over one rollout's AVAILABLE tasks, in batches: each task is
// claimed exactly once (R4), a runnable claim never takes an external task and an external
// claim never takes another.
func TestClaimTasksOfKindsUnderConcurrentClaimers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testenv.Store(t)
	var tasks []store.NewTaskRun
	for i := 0; i < 300; i++ {
		tk := task(fmt.Sprintf("db%03d", i), "DML", "1")
		if i%3 == 0 {
			tk.Executor = domain.ExecutorExternal
		}
		tasks = append(tasks, tk)
	}
	r, err := st.CreateRollout(ctx, "kinds", 1000, tasks)
	require.NoError(t, err)
	p, err := st.PromoteRound(ctx)
	require.NoError(t, err)
	require.Len(t, p.Promoted, len(tasks))

	var (
		mu      sync.Mutex
		claimed = map[int64]int{}
		wg      sync.WaitGroup
		errs    = make(chan error, 8)
	)
	fail := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	kinds := []store.ClaimKind{store.ClaimRunnable, store.ClaimRunnable, store.ClaimExternal, store.ClaimAll, store.ClaimRunnable, store.ClaimExternal}
	for _, kind := range kinds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, err := st.ClaimTaskRunsOf(ctx, r.ID, 7, kind)
				if err != nil {
					fail(err)
					return
				}
				if len(got) == 0 {
					return
				}
				if len(got) > 7 {
					fail(fmt.Errorf("claimed %d tasks, max 7", len(got)))
				}
				mu.Lock()
				for _, g := range got {
					claimed[g.ID]++
					ext := g.Executor == domain.ExecutorExternal
					if (kind == store.ClaimRunnable && ext) || (kind == store.ClaimExternal && !ext) {
						fail(fmt.Errorf("claim kind %d took task %d of executor %s", kind, g.ID, g.Executor))
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, claimed, len(tasks), "every task claimed")
	for id, n := range claimed {
		require.Equal(t, 1, n, "task %d claimed %d times", id, n)
	}
}
