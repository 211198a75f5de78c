package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/dev/chaos/invariants"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/internal/version"
	"github.com/tickgate/tickgate/store"
)

// task builds a NewTaskRun (noop executor) for database/type/version.
func task(db, typ, v string) store.NewTaskRun {
	return store.NewTaskRun{Database: db, Type: domain.TaskType(typ), Version: v, VersionKey: version.MustKey(v), Executor: "noop"}
}

func newRollout(t *testing.T, st *store.Store, limit int32, tasks ...store.NewTaskRun) (store.Rollout, []store.TaskRun) {
	t.Helper()
	ctx := context.Background()
	r, err := st.CreateRollout(ctx, "r", limit, tasks)
	require.NoError(t, err)
	runs, err := st.ListTaskRuns(ctx, r.ID, 0, nil, 500)
	require.NoError(t, err)
	require.Len(t, runs, len(tasks))
	return r, runs
}

func promote(t *testing.T, st *store.Store) store.Promotion {
	t.Helper()
	p, err := st.PromoteRound(context.Background())
	require.NoError(t, err)
	breaches, err := invariants.RolloutBreaches(context.Background(), st.Pool)
	require.NoError(t, err)
	require.Empty(t, breaches)
	return p
}

func statusOf(t *testing.T, st *store.Store, id int64) store.TaskRun {
	t.Helper()
	tr, err := st.GetTaskRun(context.Background(), id)
	require.NoError(t, err)
	return tr
}

func cause(t *testing.T, st *store.Store, id int64) map[string]any {
	t.Helper()
	tr := statusOf(t, st, id)
	require.Equal(t, domain.TaskRunPending, tr.Status)
	var c map[string]any
	require.NoError(t, json.Unmarshal(tr.WaitingCause, &c), "waiting cause of %d: %s", id, tr.WaitingCause)
	return c
}

// runToDone claims and finishes every AVAILABLE task of rollout r.
func runToDone(t *testing.T, st *store.Store, r store.Rollout) []store.TaskRun {
	t.Helper()
	ctx := context.Background()
	claimed, err := st.ClaimTaskRuns(ctx, r.ID, 100)
	require.NoError(t, err)
	for _, c := range claimed {
		_, ok, err := st.FinishTaskRun(ctx, c.ID, c.Attempt, domain.TaskRunDone, "", nil)
		require.NoError(t, err)
		require.True(t, ok)
	}
	return claimed
}

func TestRolloutGateRunAt(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	future := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
	a := task("db1", "DML", "1")
	a.RunAt = &future
	_, runs := newRollout(t, st, 10, a)
	p := promote(t, st)
	require.Empty(t, p.Promoted)
	require.NotNil(t, p.NextRunAt)
	require.True(t, p.NextRunAt.Equal(future))
	require.Equal(t, "run_at", cause(t, st, runs[0].ID)["reason"])

	_, err := st.Pool.Exec(context.Background(), "UPDATE task_runs SET run_at = now() - interval '1s' WHERE id = $1", runs[0].ID)
	require.NoError(t, err)
	p = promote(t, st)
	require.Len(t, p.Promoted, 1)
	require.Nil(t, p.NextRunAt)
	tr := statusOf(t, st, runs[0].ID)
	require.Equal(t, domain.TaskRunAvailable, tr.Status)
	require.Nil(t, tr.WaitingCause)
}

func TestRolloutGateVersionOrderIsNatural(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	// Non-sequential tasks, so only the version gate orders them; given out of order.
	r, runs := newRollout(t, st, 10, task("db1", "DML", "1.10"), task("db1", "DML", "1.9"), task("db2", "DML", "2"))
	p := promote(t, st)
	require.ElementsMatch(t, []int64{runs[1].ID, runs[2].ID}, ids(p))
	c := cause(t, st, runs[0].ID)
	require.Equal(t, "version", c["reason"])
	require.EqualValues(t, runs[1].ID, c["blocked_by_task"])
	require.Equal(t, "1.9", c["blocked_by_version"])

	// A smaller version in ANOTHER rollout on the same database blocks as well.
	r2, runs2 := newRollout(t, st, 10, task("db1", "DML", "1.1"))
	runToDone(t, st, r)
	p = promote(t, st)
	require.Equal(t, []int64{runs2[0].ID}, ids(p))
	require.Equal(t, "version", cause(t, st, runs[0].ID)["reason"])
	runToDone(t, st, r2)
	p = promote(t, st)
	require.Equal(t, []int64{runs[0].ID}, ids(p))
}

func TestRolloutGateDatabaseExclusion(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	// Two DDL tasks of the same version on db1: one at a time. The SDL on db2 is alone.
	r, runs := newRollout(t, st, 10, task("db1", "DDL", "1"), task("db1", "DDL", "1"), task("db2", "SDL", "1"))
	p := promote(t, st)
	require.ElementsMatch(t, []int64{runs[0].ID, runs[2].ID}, ids(p))
	c := cause(t, st, runs[1].ID)
	require.Equal(t, "database_busy", c["reason"])
	require.EqualValues(t, runs[0].ID, c["busy_task"])

	// A DML of the same version waits for the running DDL too (R1), and a DDL waits for a DML.
	_, runs2 := newRollout(t, st, 10, task("db1", "DML", "1"))
	runToDone(t, st, r) // finishes runs[0] and runs[2]
	p = promote(t, st)
	require.Equal(t, []int64{runs[1].ID}, ids(p), "the older DDL goes first")
	require.Equal(t, "database_busy", cause(t, st, runs2[0].ID)["reason"])
	runToDone(t, st, r)
	p = promote(t, st)
	require.Equal(t, []int64{runs2[0].ID}, ids(p))

	// Several DML tasks on one database may run together.
	_, runs3 := newRollout(t, st, 10, task("db3", "DML", "1"), task("db3", "OTHER", "1"), task("db3", "DDL", "1"))
	p = promote(t, st)
	require.ElementsMatch(t, []int64{runs3[0].ID, runs3[1].ID}, ids(p))
	require.Equal(t, "database_busy", cause(t, st, runs3[2].ID)["reason"])
}

func TestRolloutGateParallelLimit(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	var tasks []store.NewTaskRun
	for i := 0; i < 5; i++ {
		tasks = append(tasks, task(fmt.Sprintf("db%d", i), "DDL", "1"))
	}
	r, runs := newRollout(t, st, 2, tasks...)
	p := promote(t, st)
	require.Equal(t, []int64{runs[0].ID, runs[1].ID}, ids(p))
	require.Equal(t, map[string]any{"reason": "parallel_limit", "limit": float64(2)}, cause(t, st, runs[4].ID))
	// Claimed tasks still count against the limit.
	claimed, err := st.ClaimTaskRuns(context.Background(), r.ID, 10)
	require.NoError(t, err)
	require.Len(t, claimed, 2)
	require.Empty(t, promote(t, st).Promoted)
	_, ok, err := st.FinishTaskRun(context.Background(), claimed[0].ID, claimed[0].Attempt, domain.TaskRunFailed, "boom", nil)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []int64{runs[2].ID}, ids(promote(t, st)))
}

func TestRolloutPauseSkipCancelRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testenv.Store(t)
	r, runs := newRollout(t, st, 10, task("db1", "DDL", "1"), task("db1", "DDL", "2"))
	_, err := st.SetRolloutStatus(ctx, r.ID, domain.RolloutPaused, domain.RolloutRunning)
	require.NoError(t, err)
	require.Empty(t, promote(t, st).Promoted)
	require.Equal(t, "rollout_paused", cause(t, st, runs[0].ID)["reason"])
	_, err = st.SetRolloutStatus(ctx, r.ID, domain.RolloutPaused, domain.RolloutRunning)
	require.ErrorIs(t, err, store.ErrTaskState)

	_, err = st.SetRolloutStatus(ctx, r.ID, domain.RolloutRunning, domain.RolloutPaused)
	require.NoError(t, err)
	require.Equal(t, []int64{runs[0].ID}, ids(promote(t, st)))
	// Pause also stops claims.
	_, err = st.SetRolloutStatus(ctx, r.ID, domain.RolloutPaused, domain.RolloutRunning)
	require.NoError(t, err)
	claimed, err := st.ClaimTaskRuns(ctx, r.ID, 10)
	require.NoError(t, err)
	require.Empty(t, claimed)
	_, err = st.SetRolloutStatus(ctx, r.ID, domain.RolloutRunning, domain.RolloutPaused)
	require.NoError(t, err)

	// Skipping the blocker unblocks version 2.
	_, err = st.SkipTaskRun(ctx, runs[0].ID)
	require.NoError(t, err)
	require.Equal(t, []int64{runs[1].ID}, ids(promote(t, st)))
	_, err = st.SkipTaskRun(ctx, runs[0].ID)
	require.ErrorIs(t, err, store.ErrTaskState)

	// Cancel an AVAILABLE task, retry it back to PENDING, fail it, retry again.
	_, err = st.CancelTaskRun(ctx, runs[1].ID)
	require.NoError(t, err)
	_, err = st.RetryTaskRun(ctx, runs[1].ID)
	require.NoError(t, err)
	require.Equal(t, []int64{runs[1].ID}, ids(promote(t, st)))
	done := runToDone(t, st, r)
	require.Len(t, done, 1)
	_, err = st.RetryTaskRun(ctx, runs[1].ID)
	require.ErrorIs(t, err, store.ErrTaskState, "a DONE task cannot be retried")
	_, err = st.RetryTaskRun(ctx, 999999)
	require.ErrorIs(t, err, store.ErrNotFound)

	// Cancel the rollout: its unstarted tasks are canceled, the rollout cannot be resumed.
	r3, runs3 := newRollout(t, st, 10, task("db9", "DML", "1"), task("db9", "DML", "2"))
	promote(t, st)
	_, canceled, err := st.CancelRollout(ctx, r3.ID)
	require.NoError(t, err)
	require.ElementsMatch(t, []int64{runs3[0].ID, runs3[1].ID}, canceled)
	_, err = st.SetRolloutStatus(ctx, r3.ID, domain.RolloutRunning, domain.RolloutPaused)
	require.ErrorIs(t, err, store.ErrTaskState)
	_, err = st.RetryTaskRun(ctx, runs3[0].ID)
	require.ErrorIs(t, err, store.ErrTaskState)
}

func TestRolloutFinishIgnoresStaleAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testenv.Store(t)
	r, runs := newRollout(t, st, 10, task("db1", "DML", "1"))
	promote(t, st)
	claimed, err := st.ClaimTaskRuns(ctx, r.ID, 10)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.EqualValues(t, 1, claimed[0].Attempt)
	_, ok, err := st.FinishTaskRun(ctx, runs[0].ID, 2, domain.TaskRunDone, "", nil)
	require.NoError(t, err)
	require.False(t, ok)
	tr, ok, err := st.FinishTaskRun(ctx, runs[0].ID, 1, domain.TaskRunDone, "", json.RawMessage(`{"rows":3}`))
	require.NoError(t, err)
	require.True(t, ok)
	require.NotNil(t, tr.FinishedAt)
	_, ok, err = st.FinishTaskRun(ctx, runs[0].ID, 1, domain.TaskRunFailed, "late", nil)
	require.NoError(t, err)
	require.False(t, ok, "a finished task is not finished twice")
}

// Two promoters, two claimers and a finisher race over the same rows of several rollouts
// sharing databases; after every promotion round R1–R3 must hold, and no task may be
// claimed twice (R4).
func TestRolloutConcurrentPromotersAndClaimers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testenv.Store(t)
	rng := rand.New(rand.NewPCG(1, 2))
	types := []string{"DDL", "SDL", "DML", "OTHER"}
	var rollouts []store.Rollout
	total := 0
	for ri := 0; ri < 4; ri++ {
		var tasks []store.NewTaskRun
		for i := 0; i < 60; i++ {
			tasks = append(tasks, task(fmt.Sprintf("db%d", rng.IntN(8)), types[rng.IntN(4)], fmt.Sprintf("1.%d", rng.IntN(12))))
		}
		r, err := st.CreateRollout(ctx, fmt.Sprintf("r%d", ri), int32(2+ri), tasks)
		require.NoError(t, err)
		rollouts = append(rollouts, r)
		total += len(tasks)
	}

	var (
		mu      sync.Mutex
		claimed = map[int64]int{}
		errs    = make(chan error, 16)
		stop    = make(chan struct{})
		wg      sync.WaitGroup
		running = make(chan store.TaskRun, total)
	)
	fail := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	for p := 0; p < 2; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := st.PromoteRound(ctx); err != nil {
					fail(err)
					return
				}
				breaches, err := invariants.RolloutBreaches(ctx, st.Pool)
				if err != nil {
					fail(err)
					return
				}
				if len(breaches) > 0 {
					fail(fmt.Errorf("after a promotion round: %v", breaches))
					return
				}
			}
		}()
	}
	for c := 0; c < 2; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, r := range rollouts {
					got, err := st.ClaimTaskRuns(ctx, r.ID, 3)
					if err != nil {
						fail(err)
						return
					}
					mu.Lock()
					for _, g := range got {
						claimed[g.ID]++
						if claimed[g.ID] > 1 {
							fail(fmt.Errorf("R4: task %d claimed twice", g.ID))
						}
						running <- g
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // the finisher: one in ten fails, and is then skipped
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case g := <-running:
				status := domain.TaskRunDone
				if rng.IntN(10) == 0 {
					status = domain.TaskRunFailed
				}
				if _, ok, err := st.FinishTaskRun(ctx, g.ID, g.Attempt, status, "", nil); err != nil || !ok {
					fail(fmt.Errorf("finish %d: ok=%v err=%v", g.ID, ok, err))
					return
				}
				if status == domain.TaskRunFailed {
					if _, err := st.SkipTaskRun(ctx, g.ID); err != nil {
						fail(err)
						return
					}
				}
			}
		}
	}()

	deadline := time.Now().Add(2 * time.Minute)
	for {
		var left int64
		for _, r := range rollouts {
			n, err := st.CountUnfinished(ctx, r.ID)
			require.NoError(t, err)
			left += n
		}
		select {
		case err := <-errs:
			close(stop)
			wg.Wait()
			t.Fatal(err)
		default:
		}
		if left == 0 || time.Now().After(deadline) {
			close(stop)
			wg.Wait()
			require.Zero(t, left, "tasks left unfinished")
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	require.Len(t, claimed, total, "every task was claimed exactly once")
}

func ids(p store.Promotion) []int64 {
	out := make([]int64, 0, len(p.Promoted))
	for _, r := range p.Promoted {
		out = append(out, r.ID)
	}
	return out
}

// TestClaimTasksTakesAtMostMax: a claim moves at most max AVAILABLE tasks to RUNNING, in
// version order, and the next claim takes the rest.
func TestClaimTasksTakesAtMostMax(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testenv.Store(t)
	r, runs := newRollout(t, st, 10, task("m1", "DML", "1"), task("m2", "DML", "1"), task("m3", "DML", "1"))
	require.Len(t, promote(t, st).Promoted, 3)
	claimed, err := st.ClaimTaskRuns(ctx, r.ID, 1)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.Equal(t, runs[0].ID, claimed[0].ID)
	claimed, err = st.ClaimTaskRuns(ctx, r.ID, 2)
	require.NoError(t, err)
	require.Len(t, claimed, 2)
	claimed, err = st.ClaimTaskRuns(ctx, r.ID, 2)
	require.NoError(t, err)
	require.Empty(t, claimed)
}

// TestRolloutRoundWritesOnlyChangedCauses: a round writes the waiting cause of a task run
// only when it changed. The first round writes every cause; a round with nothing changed
// writes none and leaves the rows alone; once the blocker ends, the tasks whose cause moved
// get their new one, and a task still waiting for the same reason is left alone — version 3
// waits for version 2 (the version right before it) before and after version 1 ended.
func TestRolloutRoundWritesOnlyChangedCauses(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	later := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
	timed := task("db3", "DML", "1")
	timed.RunAt = &later
	r, runs := newRollout(t, st, 1,
		task("db1", "DDL", "1"), task("db1", "DDL", "2"), task("db1", "DDL", "3"), task("db2", "DML", "1"), timed)
	p := promote(t, st)
	require.Equal(t, []int64{runs[0].ID}, ids(p))
	require.EqualValues(t, 4, p.CausesWritten, "the first round writes every cause")
	// xmin names the transaction that last wrote a row: unchanged, the row was not rewritten.
	xmin := func(id int64) string {
		var x string
		require.NoError(t, st.Pool.QueryRow(context.Background(), "SELECT xmin::text FROM task_runs WHERE id = $1", id).Scan(&x))
		return x
	}
	timedBefore := xmin(runs[4].ID)
	c := cause(t, st, runs[2].ID)
	require.EqualValues(t, runs[1].ID, c["blocked_by_task"], "version 3 waits for version 2, the one right before it")
	require.Equal(t, "2", c["blocked_by_version"])
	v3Before := xmin(runs[2].ID)

	p = promote(t, st)
	require.Empty(t, p.Promoted)
	require.Zero(t, p.CausesWritten, "nothing changed: no cause written")

	runToDone(t, st, r)
	p = promote(t, st)
	// The smaller version goes first within the limit of 1: db2's task.
	require.Equal(t, []int64{runs[3].ID}, ids(p))
	// db1's version 2 now heads its database and waits on the limit; version 3 still waits
	// on version 2, and the timed task for its run_at: neither is rewritten.
	require.EqualValues(t, 1, p.CausesWritten)
	require.Equal(t, "parallel_limit", cause(t, st, runs[1].ID)["reason"])
	c = cause(t, st, runs[2].ID)
	require.Equal(t, "version", c["reason"])
	require.EqualValues(t, runs[1].ID, c["blocked_by_task"])
	require.Equal(t, v3Before, xmin(runs[2].ID), "an unchanged cause is not rewritten")
	require.Equal(t, "run_at", cause(t, st, runs[4].ID)["reason"])
	require.Equal(t, timedBefore, xmin(runs[4].ID), "an unchanged cause is not rewritten")
}
