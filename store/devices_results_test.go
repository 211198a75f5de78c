package store_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

func success(td store.ClaimedCommand, claimNext bool) store.SuccessReport {
	return store.SuccessReport{ID: td.ID, Attempt: &td.Attempt, ClaimNext: claimNext}
}

func executionStatus(t *testing.T, st *store.Store, id int64) domain.ExecutionStatus {
	t.Helper()
	td, err := st.GetDeviceExecution(context.Background(), id)
	require.NoError(t, err)
	return td.Status
}

// One statement records several results, of several PCs, each with its own answer: each
// freed slot is refilled with a device of its own PC (two results of one PC take two
// devices), and a request that asks gets its slot's next execution, already SENT.
func TestResultsOfABatchAreRecordedByOneStatement(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	devFarm(t, st, "ga", 3, 6)
	devFarm(t, st, "gb", 2, 3)
	activate(t, st, store.NewDeviceTask{})
	a, b := claimed(t, st, "ga", 3), claimed(t, st, "gb", 2)
	require.Len(t, a, 3)
	require.Len(t, b, 2)
	slotsBefore := map[string]map[int32]int64{"ga": heldSlots(t, st, "ga"), "gb": heldSlots(t, st, "gb")}

	answers, err := st.RecordSuccesses(ctx, []store.SuccessReport{
		success(a[0], true), success(a[1], false), success(a[2], true), success(b[0], true), success(b[1], true),
	})
	require.NoError(t, err)
	require.Len(t, answers, 5)
	for i, ans := range answers {
		require.Equal(t, domain.SuccessRecorded, ans.Verdict, "report %d", i)
		require.Equal(t, domain.ExecutionSucceeded, ans.Done.Status)
		require.Equal(t, domain.ExecutionSucceeded, executionStatus(t, st, ans.Done.ID), "the answer is what committed")
	}
	// ga: three freed slots, three new executions on three devices, each in the slot its
	// result freed; the two that were asked for are SENT to their requesters.
	devices := map[string]bool{}
	for i, ans := range answers[:3] {
		require.Len(t, ans.Outcome.Refilled, 1, "report %d", i)
		next, err := st.GetDeviceExecution(ctx, ans.Outcome.Refilled[0])
		require.NoError(t, err)
		require.Equal(t, *ans.Done.Slot, *next.Slot, "refilled in the slot it freed")
		require.False(t, devices[next.DeviceSerial], "two slots got device %s", next.DeviceSerial)
		devices[next.DeviceSerial] = true
		if i == 1 {
			require.Nil(t, ans.Next)
			require.Equal(t, domain.ExecutionCreated, next.Status, "not asked for: waits for a claim")
			require.Equal(t, []string{"CREATED#1"}, eventTypes(t, st, next.ID))
			continue
		}
		require.NotNil(t, ans.Next, "report %d", i)
		require.Equal(t, next.ID, ans.Next.ID)
		require.Equal(t, domain.ExecutionSent, next.Status)
		require.Equal(t, next.DeviceSerial, ans.Next.DeviceSerial)
		require.JSONEq(t, `{}`, string(ans.Next.Payload))
		require.Equal(t, []string{"CREATED#1", "SENT#1"}, eventTypes(t, st, next.ID))
		require.Equal(t, time.Duration(domain.DefaultDeviceTimeout), ans.Next.TimeoutAt.Sub(*ans.Next.SentAt), "its deadline started when it was handed out")
	}
	require.Len(t, claimed(t, st, "ga", 5), 1, "only the execution not handed out is left to claim")
	// gb: one device left for two freed slots: one refill, handed to its requester; the
	// other slot stays free, and the PC still runs the task (no check asked).
	refilled := 0
	for _, ans := range answers[3:] {
		refilled += len(ans.Outcome.Refilled)
		require.False(t, ans.Outcome.CheckTask)
		require.Equal(t, []string{"CREATED#1", "SENT#1", "SUCCEEDED#1"}, eventTypes(t, st, ans.Done.ID))
	}
	require.Equal(t, 1, refilled)
	for _, pc := range []string{"ga", "gb"} {
		s := slots(t, st, pc)
		require.LessOrEqual(t, s.Running, s.Target, "D2 on %s", pc)
		for n := range heldSlots(t, st, pc) {
			_, was := slotsBefore[pc][n]
			require.True(t, was, "%s: slot %d was not one the results freed", pc, n)
		}
	}

	// gb's last execution finishes its share of the task: the answer says so.
	var gbNext store.ClaimedCommand
	for _, ans := range answers[3:] {
		if ans.Next != nil {
			gbNext = *ans.Next
		}
	}
	last, err := st.RecordSuccesses(ctx, []store.SuccessReport{success(gbNext, true)})
	require.NoError(t, err)
	require.Equal(t, domain.SuccessRecorded, last[0].Verdict)
	require.Nil(t, last[0].Next)
	require.True(t, last[0].Outcome.CheckTask, "gb holds no execution of the task any more")
}

// The checks a result needs are made in its own statement: the agent's PC, the
// Idempotency-Key (a replay answers the first answer and changes nothing; the key with
// another body is refused), an unknown execution, and an attempt no longer in flight
// (left to the general path, unchanged).
func TestResultsChecksAndKeysInTheStatement(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	devFarm(t, st, "ka", 2, 4)
	devFarm(t, st, "kb", 1, 1)
	activate(t, st, store.NewDeviceTask{})
	a := claimed(t, st, "ka", 2)
	b := claimed(t, st, "kb", 1)
	tok, _, err := st.CreateToken(ctx, store.NewToken{Role: domain.RoleAgent, PC: "ka"})
	require.NoError(t, err)
	key := func(k string) store.IdempotencyKey {
		return store.IdempotencyKey{TokenID: tok.ID, Key: k, Method: "POST", Path: fmt.Sprintf("/api/v1/agent/task-devices/%d/result", a[0].ID)}
	}
	hash := func(body string) []byte { h := sha256.Sum256([]byte(body)); return h[:] }
	first := success(a[0], true)
	first.AgentPC, first.Key, first.RequestHash = "ka", key("k1"), hash("one")

	ans, err := st.RecordSuccesses(ctx, []store.SuccessReport{first})
	require.NoError(t, err)
	require.Equal(t, domain.SuccessRecorded, ans[0].Verdict)
	require.NotNil(t, ans[0].Next)

	replay, err := st.RecordSuccesses(ctx, []store.SuccessReport{first})
	require.NoError(t, err)
	require.Equal(t, domain.SuccessReplayed, replay[0].Verdict)
	require.Equal(t, ans[0].Done, replay[0].Done, "the first answer, again")
	require.Equal(t, ans[0].Next, replay[0].Next)
	require.Equal(t, domain.ExecutionSent, executionStatus(t, st, ans[0].Next.ID), "the replay handed nothing out again")

	other := first
	other.RequestHash = hash("two")
	stale := success(a[1], false)
	stale.AgentPC = "ka"
	wrongAttempt := a[1].Attempt + 1
	stale.Attempt = &wrongAttempt
	foreign := success(b[0], false)
	foreign.AgentPC = "ka"
	got, err := st.RecordSuccesses(ctx, []store.SuccessReport{other, stale, foreign, {ID: 987654321}})
	require.NoError(t, err)
	require.Equal(t, domain.SuccessKeyReused, got[0].Verdict)
	require.Equal(t, domain.SuccessUndecided, got[1].Verdict)
	require.Equal(t, "ka", got[1].PCName)
	require.Equal(t, domain.SuccessForbidden, got[2].Verdict)
	require.Equal(t, "kb", got[2].PCName)
	require.Equal(t, domain.SuccessNotFound, got[3].Verdict)
	require.Equal(t, domain.ExecutionSent, executionStatus(t, st, a[1].ID), "a stale attempt changed nothing")
	require.Equal(t, domain.ExecutionSent, executionStatus(t, st, b[0].ID), "another PC's execution changed nothing")

	// The general path stores its answers rendered; the statement replays those as stored.
	k2 := key("k2")
	require.NoError(t, func() error {
		_, err := st.BeginIdempotent(ctx, k2, hash("three"))
		return err
	}())
	r2 := success(a[1], false)
	r2.Key, r2.RequestHash = k2, hash("three")
	got, err = st.RecordSuccesses(ctx, []store.SuccessReport{r2})
	require.NoError(t, err)
	require.Equal(t, domain.SuccessKeyInProgress, got[0].Verdict, "its first request still runs")
	require.NoError(t, st.FinishIdempotent(ctx, k2, store.StoredResponse{Status: 409, ContentType: "application/problem+json", Body: []byte(`{"status":409}`)}))
	got, err = st.RecordSuccesses(ctx, []store.SuccessReport{r2})
	require.NoError(t, err)
	require.Equal(t, domain.SuccessReplayed, got[0].Verdict)
	require.Equal(t, &store.StoredResponse{Status: 409, ContentType: "application/problem+json", Body: []byte(`{"status":409}`)}, got[0].Stored)
	require.Equal(t, domain.ExecutionSent, executionStatus(t, st, a[1].ID))
}

// Results sent concurrently through the batcher are group-committed: every one is
// recorded once, answered, and chained to its slot's next execution until the task is
// done, with D2 holding throughout.
func TestResultBatcherUnderConcurrency(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	devFarm(t, st, "ca", 4, 10)
	devFarm(t, st, "cb", 3, 9)
	task := activate(t, st, store.NewDeviceTask{})
	b := st.NewResultBatcher(store.ResultBatcherOptions{MaxBatch: 5})
	// Each PC's agent claims what waits, and answers every execution with its chain of
	// next ones; a slot whose refill lost its device to a concurrent one is refilled
	// afresh and waits for the agent's next claim.
	for round := 0; ; round++ {
		require.Less(t, round, 20, "the task never ran out of executions")
		var wg sync.WaitGroup
		errs := make(chan error, 32)
		sent := 0
		for _, pc := range []string{"ca", "cb"} {
			for _, cmd := range claimed(t, st, pc, 10) {
				sent++
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next := &cmd; next != nil; {
						ans, err := b.Report(ctx, success(*next, true))
						if err != nil {
							errs <- err
							return
						}
						if ans.Verdict != domain.SuccessRecorded {
							errs <- fmt.Errorf("execution %d: %s", next.ID, ans.Verdict)
							return
						}
						if s := slots(t, st, pc); s.Running > s.Target {
							errs <- fmt.Errorf("D2 on %s: %+v", pc, s)
						}
						next = ans.Next
					}
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		if sent == 0 {
			break
		}
	}
	counts, err := st.DeviceTaskCounts(ctx, task.ID)
	require.NoError(t, err)
	require.EqualValues(t, 19, counts.Succeeded, "every device ran the task once")
	require.Zero(t, counts.Active)
}

// A result's refill does not wait for whoever holds the running task's row (an Advance
// judging it): task rows are locked FOR NO KEY UPDATE, which the inserts' foreign-key
// checks do not wait for.
func TestResultsDoNotWaitForTheTaskLock(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	devFarm(t, st, "tl", 1, 2)
	activate(t, st, store.NewDeviceTask{})
	cmds := claimed(t, st, "tl", 1)
	tx, err := st.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = st.Q.WithTx(tx).LockRunningDeviceTask(ctx)
	require.NoError(t, err)

	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ans, err := st.RecordSuccesses(waitCtx, []store.SuccessReport{success(cmds[0], true)})
	require.NoError(t, err, "the result waited for the task's lock")
	require.Equal(t, domain.SuccessRecorded, ans[0].Verdict)
	require.NotNil(t, ans[0].Next, "refilled while the task row was held")
}
