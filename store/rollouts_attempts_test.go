package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

// outcomesOf lists a task run's executor attempts as "claim.attempt:outcome" ("open" while
// it runs).
func outcomesOf(t *testing.T, st *store.Store, id int64) []string {
	t.Helper()
	as, err := st.ExecutorAttemptsOf(context.Background(), id)
	require.NoError(t, err)
	var out []string
	for _, a := range as {
		o := "open"
		if a.Outcome != nil {
			o = *a.Outcome
		}
		out = append(out, fmt.Sprintf("%d.%d:%s", a.Claim, a.Attempt, o))
	}
	return out
}

// Executor attempts are counted in PostgreSQL per claim: a failure counts, an attempt
// found started and never ended is lost and counts nothing, the claim is spent after
// max_attempts failures or one that cannot be retried (and says the last error), a
// retried task run is claimed again with its attempts again, and every end of a RUNNING
// task run writes the end of its attempt in flight.
func TestExecutorAttemptsAreCountedPerClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testenv.Store(t)
	r, _ := newRollout(t, st, 10, task("a", "DML", "1"), task("b", "DML", "1"), task("c", "DML", "1"), task("d", "DML", "1"), task("e", "DML", "1"))
	promote(t, st)
	claimed, err := st.ClaimTaskRuns(ctx, r.ID, 10)
	require.NoError(t, err)
	require.Len(t, claimed, 5)
	ref := func(i int) store.ClaimRef { return store.ClaimRef{ID: claimed[i].ID, Claim: claimed[i].Attempt} }
	begin := func(i int) store.AttemptStart {
		t.Helper()
		got, err := st.BeginExecutorAttempts(ctx, []store.ClaimRef{ref(i)}, 3)
		require.NoError(t, err)
		require.Contains(t, got, claimed[i].ID)
		return got[claimed[i].ID]
	}
	fail := func(i int, attempt int32, msg string, retryable bool) {
		t.Helper()
		ok, err := st.FailExecutorAttempt(ctx, ref(i), attempt, msg, retryable)
		require.NoError(t, err)
		require.True(t, ok)
	}

	// All five start in one statement.
	var refs []store.ClaimRef
	for i := range claimed {
		refs = append(refs, ref(i))
	}
	first, err := st.BeginExecutorAttempts(ctx, refs, 3)
	require.NoError(t, err)
	require.Len(t, first, 5)
	for _, c := range claimed {
		require.Equal(t, store.AttemptStart{Attempt: 1}, first[c.ID])
	}

	// a: fails, is lost twice (its runner died), fails twice more: spent after three
	// failures, whatever the lost ones.
	fail(0, 1, "boom 1", true)
	require.Equal(t, store.AttemptStart{Attempt: 2, Failed: 1, LastError: "boom 1"}, begin(0))
	require.Equal(t, store.AttemptStart{Attempt: 3, Failed: 1, LastError: "boom 1"}, begin(0), "attempt 2 was found open: lost")
	require.Equal(t, store.AttemptStart{Attempt: 4, Failed: 1, LastError: "boom 1"}, begin(0))
	fail(0, 4, "boom 4", true)
	require.Equal(t, store.AttemptStart{Attempt: 5, Failed: 2, LastError: "boom 4"}, begin(0))
	fail(0, 5, "boom 5", true)
	require.Equal(t, store.AttemptStart{Spent: true, Failed: 3, LastError: "boom 5"}, begin(0), "three failures: no attempt left")
	ok, err := st.FailExecutorAttempt(ctx, ref(0), 2, "late", true)
	require.NoError(t, err)
	require.False(t, ok, "a lost attempt's late failure is not recorded: it was another runner's")
	require.Equal(t, []string{"1.1:failed", "1.2:lost", "1.3:lost", "1.4:failed", "1.5:failed"}, outcomesOf(t, st, claimed[0].ID))

	// b: a failure that cannot be retried spends the claim at once.
	fail(1, 1, "refused", false)
	require.Equal(t, store.AttemptStart{Spent: true, Failed: 1, LastError: "refused"}, begin(1))

	// c: its attempt in flight ends with the task run, in the same statement.
	_, ok, err = st.FinishTaskRun(ctx, claimed[2].ID, claimed[2].Attempt, domain.TaskRunDone, "", nil)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []string{"1.1:succeeded"}, outcomesOf(t, st, claimed[2].ID))
	got, err := st.BeginExecutorAttempts(ctx, []store.ClaimRef{ref(2)}, 3)
	require.NoError(t, err)
	require.Empty(t, got, "a task run no longer RUNNING starts no attempt")

	// d: an operator's cancel ends it canceled; e: FAILED without its executor's word
	// (the workflow gave up on its batch) ends it lost.
	_, err = st.CancelRunningTaskRun(ctx, claimed[3].ID)
	require.NoError(t, err)
	require.Equal(t, []string{"1.1:canceled"}, outcomesOf(t, st, claimed[3].ID))
	_, ok, err = st.FinishTaskRun(ctx, claimed[4].ID, claimed[4].Attempt, domain.TaskRunFailed, "batch failed", nil)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []string{"1.1:lost"}, outcomesOf(t, st, claimed[4].ID))

	// A stale claim starts nothing; a. retried and claimed again, has three attempts again.
	got, err = st.BeginExecutorAttempts(ctx, []store.ClaimRef{{ID: claimed[1].ID, Claim: 7}}, 3)
	require.NoError(t, err)
	require.Empty(t, got)
	_, ok, err = st.FinishTaskRun(ctx, claimed[0].ID, claimed[0].Attempt, domain.TaskRunFailed, "boom 5", nil)
	require.NoError(t, err)
	require.True(t, ok)
	_, err = st.RetryTaskRun(ctx, claimed[0].ID)
	require.NoError(t, err)
	promote(t, st)
	again, err := st.ClaimTaskRuns(ctx, r.ID, 10)
	require.NoError(t, err)
	require.Len(t, again, 1)
	require.EqualValues(t, 2, again[0].Attempt)
	got, err = st.BeginExecutorAttempts(ctx, []store.ClaimRef{{ID: again[0].ID, Claim: 2}}, 3)
	require.NoError(t, err)
	require.Equal(t, store.AttemptStart{Attempt: 1}, got[again[0].ID], "the new claim's first attempt")
}

// Two runners start the same claim's attempt at once (one of them a zombie whose heartbeat
// timed out): exactly one records the attempt and runs it.
func TestExecutorAttemptStartedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testenv.Store(t)
	r, _ := newRollout(t, st, 10, task("a", "DML", "1"))
	promote(t, st)
	claimed, err := st.ClaimTaskRuns(ctx, r.ID, 1)
	require.NoError(t, err)
	ref := []store.ClaimRef{{ID: claimed[0].ID, Claim: claimed[0].Attempt}}
	const runners = 8
	starts := make(chan store.AttemptStart, runners)
	errs := make(chan error, runners)
	for range runners {
		go func() {
			got, err := st.BeginExecutorAttempts(ctx, ref, 3)
			errs <- err
			starts <- got[claimed[0].ID]
		}()
	}
	ran := map[int32]int{}
	for range runners {
		require.NoError(t, <-errs)
		s := <-starts
		require.False(t, s.Spent)
		if s.Attempt > 0 {
			ran[s.Attempt]++
		}
	}
	for n, times := range ran {
		require.Equal(t, 1, times, "attempt %d started by one runner", n)
	}
}
