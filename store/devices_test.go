package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

// oneMinute are device settings whose timeout differs from the default.
var oneMinute = domain.DeviceSettings{MaxAttempts: 3, Timeout: time.Minute}

// devFarm creates a PC with n devices and returns its name.
func devFarm(t *testing.T, st *store.Store, name string, capacity int32, n int) store.PC {
	t.Helper()
	ctx := context.Background()
	pc, err := st.CreatePC(ctx, name, capacity)
	require.NoError(t, err)
	for i := 0; i < n; i++ {
		_, _, err := st.CreateDevice(ctx, name, fmt.Sprintf("%s-d%02d", name, i))
		require.NoError(t, err)
	}
	return pc
}

// activate queues a task, makes it active and fills every PC's slots.
func activate(t *testing.T, st *store.Store, nt store.NewDeviceTask) store.DeviceTask {
	t.Helper()
	ctx := context.Background()
	task, err := st.CreateDeviceTask(ctx, nt)
	require.NoError(t, err)
	adv, err := st.Advance(ctx, domain.DefaultDeviceSettings())
	require.NoError(t, err)
	require.Equal(t, task.ID, adv.ActiveTaskID)
	_, err = st.RefillAll(ctx)
	require.NoError(t, err)
	return task
}

// claimed is an agent's claim of up to max commands of pc, which must succeed.
func claimed(t *testing.T, st *store.Store, pc string, max int) []store.ClaimedCommand {
	t.Helper()
	cmds, err := st.Claim(context.Background(), pc, max)
	require.NoError(t, err)
	return cmds
}

func slots(t *testing.T, st *store.Store, pc string) store.PCSummary {
	t.Helper()
	d, err := st.GetPCDetail(context.Background(), pc)
	require.NoError(t, err)
	return d.Slots
}

func eventTypes(t *testing.T, st *store.Store, id int64) []string {
	t.Helper()
	evs, err := st.DeviceExecutionEvents(context.Background(), id)
	require.NoError(t, err)
	var out []string
	for _, e := range evs {
		out = append(out, fmt.Sprintf("%s#%d", e.Type, e.Attempt))
	}
	return out
}

func TestDevicesRefillCreatesOnePerFreedSlot(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	devFarm(t, st, "pc1", 3, 5)
	task := activate(t, st, store.NewDeviceTask{})

	s := slots(t, st, "pc1")
	require.Equal(t, store.PCSummary{PcID: s.PcID, PcName: "pc1", DeviceCapacity: 3, Eligible: 5, Running: 3, Target: 3}, s)
	// A second refill finds no free slot: no fan-out.
	ids, err := st.RefillAll(ctx)
	require.NoError(t, err)
	require.Zero(t, ids)

	cmds := claimed(t, st, "pc1", 10)
	require.Len(t, cmds, 3)
	out, err := st.ReportResult(ctx, cmds[0].ID, store.Result{Succeeded: true})
	require.NoError(t, err)
	require.Equal(t, domain.ExecutionSucceeded, out.Status)
	require.Len(t, out.Refilled, 1, "one freed slot, one new execution")
	require.Equal(t, int64(3), slots(t, st, "pc1").Running)

	out, err = st.ReportResult(ctx, cmds[1].ID, store.Result{Succeeded: true})
	require.NoError(t, err)
	require.Len(t, out.Refilled, 1)
	// All five devices have an execution now; the next freed slot has nothing to refill.
	out, err = st.ReportResult(ctx, cmds[2].ID, store.Result{Succeeded: true})
	require.NoError(t, err)
	require.Empty(t, out.Refilled)
	require.Equal(t, int64(2), slots(t, st, "pc1").Running)

	tds, err := st.DeviceExecutions(ctx, task.ID, 0, 100)
	require.NoError(t, err)
	require.Len(t, tds, 5, "each device once")
}

func TestDevicesClaimRaceTwoAgentsSamePC(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	devFarm(t, st, "pc1", 20, 20)
	activate(t, st, store.NewDeviceTask{})

	var mu sync.Mutex
	seen := map[int64]int{}
	var wg sync.WaitGroup
	for agent := 0; agent < 2; agent++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				cmds, err := st.Claim(ctx, "pc1", 3)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, c := range cmds {
					seen[c.ID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Len(t, seen, 20, "every command handed out")
	for id, n := range seen {
		require.Equal(t, 1, n, "command %d handed to two agents", id)
	}
	cmds := claimed(t, st, "pc1", 20)
	require.Empty(t, cmds)
}

func TestDevicesRetriesThenFailedFinalDeviceError(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	devFarm(t, st, "pc1", 1, 2)
	activate(t, st, store.NewDeviceTask{})

	var id int64
	for attempt := int32(1); attempt <= 3; attempt++ {
		cmds := claimed(t, st, "pc1", 5)
		require.Len(t, cmds, 1)
		require.Equal(t, attempt, cmds[0].Attempt)
		if id == 0 {
			id = cmds[0].ID
		}
		require.Equal(t, id, cmds[0].ID, "a retry runs again on the same device")
		out, err := st.ReportResult(ctx, id, store.Result{Error: "boom", Attempt: &attempt})
		require.NoError(t, err)
		if attempt < 3 {
			require.Equal(t, domain.ExecutionRetryScheduled, out.Status)
			require.Equal(t, attempt+1, out.Attempt)
			require.Empty(t, out.Refilled, "a retry keeps its slot")
		} else {
			require.Equal(t, domain.ExecutionFailedFinal, out.Status)
			require.Len(t, out.Refilled, 1, "the slot goes to the PC's other device")
		}
	}
	td, err := st.GetDeviceExecution(ctx, id)
	require.NoError(t, err)
	dev, err := st.GetDevice(ctx, td.DeviceSerial)
	require.NoError(t, err)
	require.Equal(t, domain.DeviceError, dev.Status)
	require.Equal(t, []string{"CREATED#1", "SENT#1", "FAILED#1", "RETRY_SCHEDULED#2", "SENT#2", "FAILED#2",
		"RETRY_SCHEDULED#3", "SENT#3", "FAILED#3", "FAILED_FINAL#3"}, eventTypes(t, st, id))
	s := slots(t, st, "pc1")
	require.Equal(t, int64(1), s.Eligible)
	require.Equal(t, int64(1), s.Target)
}

func TestDevicesNotRetryableGoesFinal(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	devFarm(t, st, "pc1", 5, 1)
	activate(t, st, store.NewDeviceTask{})
	cmds := claimed(t, st, "pc1", 5)
	out, err := st.ReportResult(ctx, cmds[0].ID, store.Result{Error: "unsupported model", NotRetryable: true})
	require.NoError(t, err)
	require.Equal(t, domain.ExecutionFailedFinal, out.Status)
	require.True(t, out.CheckTask)
	require.Equal(t, []string{"CREATED#1", "SENT#1", "FAILED#1", "FAILED_FINAL#1"}, eventTypes(t, st, cmds[0].ID))
}

func TestDevicesTimeoutThenLateResultConflict(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	devFarm(t, st, "pc1", 5, 1)
	activate(t, st, store.NewDeviceTask{})
	cmds := claimed(t, st, "pc1", 5)
	require.Equal(t, 20*time.Minute, cmds[0].TimeoutAt.Sub(*cmds[0].SentAt), "deadline is 20 minutes after SENT")
	id := cmds[0].ID

	out, err := st.TimeoutAttempt(ctx, id, 1)
	require.NoError(t, err)
	require.Equal(t, domain.ExecutionRetryScheduled, out.Status)
	// The timeout of the same attempt again is a no-op (one winner).
	again, err := st.TimeoutAttempt(ctx, id, 1)
	require.NoError(t, err)
	require.True(t, again.Stale)

	one := int32(1)
	_, err = st.ReportResult(ctx, id, store.Result{Succeeded: true, Attempt: &one})
	require.ErrorIs(t, err, store.ErrNotInFlight)
	require.Equal(t, []string{"CREATED#1", "SENT#1", "TIMEOUT#1", "RETRY_SCHEDULED#2", "LATE_RESULT#1"}, eventTypes(t, st, id))
	td, err := st.GetDeviceExecution(ctx, id)
	require.NoError(t, err)
	require.Equal(t, domain.ExecutionRetryScheduled, td.Status)

	// A result that wins the race makes the timeout a no-op.
	cmds = claimed(t, st, "pc1", 5)
	require.Equal(t, int32(2), cmds[0].Attempt)
	_, err = st.ReportResult(ctx, id, store.Result{Succeeded: true})
	require.NoError(t, err)
	out, err = st.TimeoutAttempt(ctx, id, 2)
	require.NoError(t, err)
	require.True(t, out.Stale)
	require.Equal(t, domain.ExecutionSucceeded, out.Status)
}

func TestDevicesOneRunningTaskOldestFirst(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	devFarm(t, st, "pc1", 5, 2)
	t1 := activate(t, st, store.NewDeviceTask{Payload: json.RawMessage(`{"n":1}`)})
	t2, err := st.CreateDeviceTask(ctx, store.NewDeviceTask{Payload: json.RawMessage(`{"n":2}`)})
	require.NoError(t, err)

	// D1 in the database itself: a second running row is rejected.
	_, err = st.Pool.Exec(ctx, "UPDATE tasks SET status = 'running', started_at = now() WHERE id = $1", t2.ID)
	require.Error(t, err)

	adv, err := st.Advance(ctx, oneMinute)
	require.NoError(t, err)
	require.Equal(t, t1.ID, adv.ActiveTaskID, "the first task stays active while it has work")
	cmds := claimed(t, st, "pc1", 5)
	require.Len(t, cmds, 2)
	_, err = st.ReportResult(ctx, cmds[0].ID, store.Result{Succeeded: true})
	require.NoError(t, err)
	adv, err = st.Advance(ctx, oneMinute)
	require.NoError(t, err)
	require.Equal(t, t1.ID, adv.ActiveTaskID, "one execution still in flight")
	out, err := st.ReportResult(ctx, cmds[1].ID, store.Result{Succeeded: true})
	require.NoError(t, err)
	require.True(t, out.CheckTask)
	adv, err = st.Advance(ctx, oneMinute)
	require.NoError(t, err)
	require.Equal(t, []int64{t1.ID}, adv.Finished)
	require.Equal(t, []int64{t2.ID}, adv.Activated)
	got, err := st.GetDeviceTask(ctx, t1.ID)
	require.NoError(t, err)
	require.Equal(t, domain.DeviceTaskSuccess, got.Status)
}

func TestDevicesTargetShrinksWhenDevicesLeave(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	devFarm(t, st, "pc1", 3, 3)
	activate(t, st, store.NewDeviceTask{})
	cmds := claimed(t, st, "pc1", 5)
	require.Len(t, cmds, 3)

	// An operator takes a device with a command out offline: its execution is canceled and
	// the target shrinks with it.
	_, _, err := st.SetDeviceStatus(ctx, cmds[0].DeviceSerial, domain.DeviceOffline, "")
	require.NoError(t, err)
	s := slots(t, st, "pc1")
	require.Equal(t, int64(2), s.Target)
	require.Equal(t, int64(2), s.Running)
	_, err = st.ReportResult(ctx, cmds[0].ID, store.Result{Succeeded: true})
	require.ErrorIs(t, err, store.ErrNotInFlight)

	// A final failure turns the device error: target 1.
	_, err = st.ReportResult(ctx, cmds[1].ID, store.Result{Error: "dead", NotRetryable: true})
	require.NoError(t, err)
	s = slots(t, st, "pc1")
	require.Equal(t, int64(1), s.Target)
	require.Equal(t, int64(1), s.Running)

	// Reset: both devices come back and get the task at once (the offline one had its
	// execution canceled, so it still owes one run).
	_, ids, err := st.SetDeviceStatus(ctx, cmds[0].DeviceSerial, domain.DeviceOnline, "")
	require.NoError(t, err)
	require.Len(t, ids, 1)
	s = slots(t, st, "pc1")
	require.Equal(t, int64(2), s.Target)
	require.Equal(t, int64(2), s.Running)
}

func TestDevicesTargetCountAndAbortRule(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	devFarm(t, st, "pcA", 2, 4)
	devFarm(t, st, "pcB", 2, 4)
	n := int32(3)
	task := activate(t, st, store.NewDeviceTask{TargetCount: &n})
	tds, err := st.DeviceExecutions(ctx, task.ID, 0, 100)
	require.NoError(t, err)
	require.Len(t, tds, 3, "target_count caps the executions")

	// Abort: at least 2 executed and more than 50% failed.
	min, pct := int32(2), 50.0
	devFarm(t, st, "pcC", 4, 4)
	_, err = st.CancelDeviceTask(ctx, task.ID)
	require.NoError(t, err)
	ab, err := st.CreateDeviceTask(ctx, store.NewDeviceTask{AbortMinExecuted: &min, AbortFailedPercent: &pct})
	require.NoError(t, err)
	adv, err := st.Advance(ctx, oneMinute)
	require.NoError(t, err)
	require.Equal(t, ab.ID, adv.ActiveTaskID)
	_, err = st.RefillAll(ctx)
	require.NoError(t, err)
	cmds := claimed(t, st, "pcC", 2)
	require.Len(t, cmds, 2)
	_, err = st.ReportResult(ctx, cmds[0].ID, store.Result{Error: "x", NotRetryable: true})
	require.NoError(t, err)
	out, err := st.ReportResult(ctx, cmds[1].ID, store.Result{Error: "x", NotRetryable: true})
	require.NoError(t, err)
	require.True(t, out.Aborted)
	got, err := st.GetDeviceTask(ctx, ab.ID)
	require.NoError(t, err)
	require.Equal(t, domain.DeviceTaskFailed, got.Status)
	all, err := st.DeviceExecutions(ctx, ab.ID, 0, 100)
	require.NoError(t, err)
	var statuses []string
	for _, td := range all {
		statuses = append(statuses, td.PcName+":"+string(td.Status))
	}
	sort.Strings(statuses)
	// pcC's two unsent executions are canceled; pcA/pcB's (unsent too) as well.
	for _, s := range statuses {
		require.Contains(t, []string{"pcC:FAILED_FINAL", "pcA:CANCELED", "pcB:CANCELED", "pcC:CANCELED"}, s)
	}
}

func TestDevicesActivationFillsSlotsInTheSameCommit(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	devFarm(t, st, "pc1", 4, 6)
	devFarm(t, st, "pc2", 4, 2)
	task, err := st.CreateDeviceTask(ctx, store.NewDeviceTask{})
	require.NoError(t, err)
	adv, err := st.Advance(ctx, oneMinute)
	require.NoError(t, err)
	require.Equal(t, []int64{task.ID}, adv.Activated)
	require.Equal(t, 6, adv.Refilled, "min(4, 6) + min(4, 2) executions with the activation")
	require.Equal(t, int64(4), slots(t, st, "pc1").Running)
	require.Equal(t, int64(2), slots(t, st, "pc2").Running)
}

// TestDevicesD2UnderConcurrency races agents claiming and reporting on three PCs against
// full refills, dispatcher steps and devices flapping offline/online: no sample ever sees a
// PC running more than its target, no device runs a task twice, and both tasks finish.
func TestDevicesD2UnderConcurrency(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pcs := []string{"pa", "pb", "pc"}
	for _, pc := range pcs {
		devFarm(t, st, pc, 4, 7)
	}
	var taskIDs []int64
	for i := 0; i < 2; i++ {
		task, err := st.CreateDeviceTask(ctx, store.NewDeviceTask{})
		require.NoError(t, err)
		taskIDs = append(taskIDs, task.ID)
	}
	done := func() bool {
		for _, id := range taskIDs {
			task, err := st.GetDeviceTask(ctx, id)
			require.NoError(t, err)
			if task.Status == domain.DeviceTaskPending || task.Status == domain.DeviceTaskRunning {
				return false
			}
		}
		return true
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var violations []string
	errs := make(chan error, 16)
	run := func(f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := f(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	// Two agents per PC: one reports every result through the general path; the other
	// reports its successes to the group commit, going on with the next execution each
	// answer hands it.
	batcher := st.NewResultBatcher(store.ResultBatcherOptions{})
	for _, pc := range pcs {
		for agent := 0; agent < 2; agent++ {
			run(func() error {
				cmds, err := st.Claim(ctx, pc, 3)
				if err != nil {
					return err
				}
				for i, c := range cmds {
					for next := &c; next != nil; {
						cur := *next
						next = nil
						if agent == 1 && i%3 != 0 {
							ans, err := batcher.Report(ctx, store.SuccessReport{ID: cur.ID, Attempt: &cur.Attempt, ClaimNext: true})
							if err != nil {
								return err
							}
							if ans.Verdict == domain.SuccessRecorded {
								next = ans.Next
								continue
							}
						}
						r := store.Result{Succeeded: i%3 != 0, Error: "flaky", Attempt: &cur.Attempt}
						if _, err := st.ReportResult(ctx, cur.ID, r); err != nil && !errors.Is(err, store.ErrNotInFlight) {
							return err
						}
					}
				}
				return nil
			})
		}
	}
	run(func() error {
		if _, err := st.Advance(ctx, oneMinute); err != nil {
			return err
		}
		_, err := st.RefillAll(ctx)
		return err
	})
	run(func() error {
		// pa-d00 flaps between offline and online.
		if _, _, err := st.SetDeviceStatus(ctx, "pa-d00", domain.DeviceOffline, ""); err != nil {
			return err
		}
		_, _, err := st.SetDeviceStatus(ctx, "pa-d00", domain.DeviceOnline, "")
		return err
	})
	run(func() error {
		sums, err := st.PCSummaries(ctx)
		if err != nil {
			return err
		}
		for _, s := range sums {
			if s.Running > s.Target {
				mu.Lock()
				violations = append(violations, fmt.Sprintf("%+v", s))
				mu.Unlock()
			}
		}
		// Every slot held is one of the PC's numbered slots.
		var outside int
		if err := st.Pool.QueryRow(ctx, `SELECT count(*) FROM task_devices td JOIN pcs p ON p.id = td.pc_id
			WHERE td.holds_slot AND (td.slot IS NULL OR td.slot > p.device_capacity)`).Scan(&outside); err != nil {
			return err
		}
		if outside > 0 {
			mu.Lock()
			violations = append(violations, fmt.Sprintf("%d executions outside their PC's slots", outside))
			mu.Unlock()
		}
		return nil
	})
	require.Eventually(t, func() bool {
		select {
		case err := <-errs:
			require.NoError(t, err)
		default:
		}
		return done()
	}, time.Minute, 20*time.Millisecond)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Empty(t, violations)
	for _, id := range taskIDs {
		tds, err := st.DeviceExecutions(ctx, id, 0, 1000)
		require.NoError(t, err)
		seen := map[string]bool{}
		for _, td := range tds {
			if td.Status == domain.ExecutionCanceled {
				continue
			}
			require.False(t, seen[td.DeviceSerial], "task %d ran twice on %s", id, td.DeviceSerial)
			seen[td.DeviceSerial] = true
			require.True(t, domain.ExecutionFinal(td.Status), "execution %d is %s", td.ID, td.Status)
		}
	}
}

// heldSlots maps each slot of pc held by an execution to that execution.
func heldSlots(t *testing.T, st *store.Store, pc string) map[int32]int64 {
	t.Helper()
	rows, err := st.Pool.Query(context.Background(), `
		SELECT td.slot, td.id FROM task_devices td JOIN pcs p ON p.id = td.pc_id
		WHERE p.name = $1 AND td.holds_slot`, pc)
	require.NoError(t, err)
	out := map[int32]int64{}
	for rows.Next() {
		var slot int32
		var id int64
		require.NoError(t, rows.Scan(&slot, &id))
		out[slot] = id
	}
	require.NoError(t, rows.Err())
	return out
}

// Each execution holding a slot holds a numbered one, 1..capacity, and a result refills
// the very slot it freed.
func TestDevicesSlotsAreNumberedAndAResultRefillsItsOwn(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	devFarm(t, st, "pc1", 3, 5)
	activate(t, st, store.NewDeviceTask{})
	held := heldSlots(t, st, "pc1")
	require.Len(t, held, 3)
	for n := int32(1); n <= 3; n++ {
		require.NotZero(t, held[n], "slot %d is held", n)
	}
	cmds := claimed(t, st, "pc1", 3)
	require.Len(t, cmds, 3)
	var inSlot2 store.ClaimedCommand
	for _, c := range cmds {
		if c.Slot == 2 {
			inSlot2 = c
		}
	}
	require.Equal(t, held[2], inSlot2.ID, "the claim reports the slot")
	out, err := st.ReportResult(ctx, inSlot2.ID, store.Result{Succeeded: true})
	require.NoError(t, err)
	require.Len(t, out.Refilled, 1)
	after := heldSlots(t, st, "pc1")
	require.Equal(t, out.Refilled[0], after[2], "the freed slot 2 holds the next execution")
	require.Equal(t, held[1], after[1])
	require.Equal(t, held[3], after[3])

	// Two executions in one slot are refused by the table itself.
	_, err = st.Pool.Exec(ctx, `
		INSERT INTO task_devices (task_id, device_id, pc_id, slot, max_attempts)
		SELECT td.task_id, d.id, td.pc_id, 1, td.max_attempts FROM task_devices td, devices d
		WHERE td.id = $1 AND d.serial = 'pc1-d04'`, after[1])
	require.ErrorContains(t, err, "task_devices_pc_slot")
}

// A result frees and refills its own slot without the PC's refill lock, so results for
// different slots of one PC do not queue behind each other (nor behind a bulk refill).
func TestDevicesAResultDoesNotWaitForThePCLock(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	devFarm(t, st, "pc1", 2, 4)
	activate(t, st, store.NewDeviceTask{})
	cmds := claimed(t, st, "pc1", 2)
	require.Len(t, cmds, 2)

	// Hold the PC's refill lock (what LockPC takes) in another transaction.
	tx, err := st.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, "SELECT id FROM pcs WHERE name = 'pc1' FOR NO KEY UPDATE")
	require.NoError(t, err)

	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	outs := make([]store.Outcome, len(cmds))
	errs := make([]error, len(cmds))
	for i, c := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = st.ReportResult(rctx, c.ID, store.Result{Succeeded: true})
		}()
	}
	wg.Wait()
	for i := range cmds {
		require.NoError(t, errs[i], "result %d finished while the PC lock was held", i)
		require.Len(t, outs[i].Refilled, 1)
	}
	require.NotEqual(t, outs[0].Refilled[0], outs[1].Refilled[0])
	require.Len(t, heldSlots(t, st, "pc1"), 2)
}

// The common success is one statement (RecordSuccesses): the attempt succeeds and the
// slot it frees holds the next execution, numbered the same, without a retry; a task with
// a target_count or an abort rule is left to the general path.
func TestDevicesSuccessRefillsItsSlotInOneStatement(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	devFarm(t, st, "pc1", 1, 2)
	activate(t, st, store.NewDeviceTask{})
	cmds := claimed(t, st, "pc1", 1)
	require.Len(t, cmds, 1)
	ans, err := st.RecordSuccesses(ctx, []store.SuccessReport{success(cmds[0], false)})
	require.NoError(t, err)
	require.Equal(t, domain.SuccessRecorded, ans[0].Verdict)
	require.Len(t, ans[0].Outcome.Refilled, 1, "refilled by the statement itself")
	created := ans[0].Outcome.Refilled[0]
	require.Equal(t, map[int32]int64{1: created}, heldSlots(t, st, "pc1"))
	require.Equal(t, []string{"CREATED#1", "SENT#1", "SUCCEEDED#1"}, eventTypes(t, st, cmds[0].ID))
	require.Equal(t, []string{"CREATED#1"}, eventTypes(t, st, created))

	// Not in flight any more: left to the general path, nothing changed.
	ans, err = st.RecordSuccesses(ctx, []store.SuccessReport{success(cmds[0], false)})
	require.NoError(t, err)
	require.Equal(t, domain.SuccessUndecided, ans[0].Verdict)
	require.Equal(t, []string{"CREATED#1", "SENT#1", "SUCCEEDED#1"}, eventTypes(t, st, cmds[0].ID))

	// A task with a target_count goes through the general path (its quota needs the task lock).
	st2 := testenv.Store(t)
	devFarm(t, st2, "pc2", 1, 2)
	two := int32(2)
	activate(t, st2, store.NewDeviceTask{TargetCount: &two})
	cmds = claimed(t, st2, "pc2", 1)
	ans, err = st2.RecordSuccesses(ctx, []store.SuccessReport{success(cmds[0], true)})
	require.NoError(t, err)
	require.Equal(t, domain.SuccessUndecided, ans[0].Verdict)
	require.Equal(t, domain.ExecutionSent, executionStatus(t, st2, cmds[0].ID))
	out, err := st2.ReportResult(ctx, cmds[0].ID, store.Result{Succeeded: true})
	require.NoError(t, err)
	require.Len(t, out.Refilled, 1)
}

// The one-statement success answers with the execution as it left it, the same view a
// read afterwards gives.
func TestDevicesSuccessAnswersWithTheExecutionAsItLeftIt(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	devFarm(t, st, "pc1", 2, 3)
	activate(t, st, store.NewDeviceTask{})
	cmds := claimed(t, st, "pc1", 2)
	require.Len(t, cmds, 2)
	ans, err := st.RecordSuccesses(ctx, []store.SuccessReport{success(cmds[0], false)})
	require.NoError(t, err)
	require.NotNil(t, ans[0].Done)
	read, err := st.GetDeviceExecution(ctx, cmds[0].ID)
	require.NoError(t, err)
	done := *ans[0].Done
	require.Equal(t, inUTC(read), inUTC(done))
	require.Equal(t, domain.ExecutionSucceeded, done.Status)
}

// inUTC is v with its times in UTC (a view read from JSON and one read from a row name the
// same instants in different locations).
func inUTC(v store.DeviceExecutionView) store.DeviceExecutionView {
	utc := func(t *time.Time) *time.Time {
		if t == nil {
			return nil
		}
		u := t.UTC()
		return &u
	}
	v.CreatedAt = v.CreatedAt.UTC()
	v.SentAt, v.AckedAt, v.CompletedAt, v.TimeoutAt = utc(v.SentAt), utc(v.AckedAt), utc(v.CompletedAt), utc(v.TimeoutAt)
	return v
}

// The one-statement success never waits for its execution's row: while another
// transaction holds it, the statement changes nothing and leaves it to the general path
// (which waits, then reads with a fresh snapshot).
func TestDevicesSuccessOfAHeldExecutionTakesTheGeneralPath(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	devFarm(t, st, "pc1", 1, 2)
	activate(t, st, store.NewDeviceTask{})
	cmds := claimed(t, st, "pc1", 1)
	tx, err := st.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT 1 FROM task_devices WHERE id = $1 FOR UPDATE`, cmds[0].ID)
	require.NoError(t, err)
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ans, err := st.RecordSuccesses(waitCtx, []store.SuccessReport{success(cmds[0], true)})
	require.NoError(t, err, "skipped, not waited for")
	require.Equal(t, domain.SuccessUndecided, ans[0].Verdict)
	require.NoError(t, tx.Rollback(ctx))

	out, err := st.ReportResult(ctx, cmds[0].ID, store.Result{Succeeded: true})
	require.NoError(t, err)
	require.Equal(t, domain.ExecutionSucceeded, out.Status)
	require.Len(t, out.Refilled, 1)
}

// A claim reads its PC in the same statement: an unknown PC is ErrNotFound, a known one
// with nothing to send (no active task, or every command out) is an empty claim, and
// nothing changes either way.
func TestDevicesClaimOfAnUnknownOrIdlePC(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	_, err := st.Claim(ctx, "nope", 5)
	require.ErrorIs(t, err, store.ErrNotFound)

	devFarm(t, st, "pc1", 2, 2)
	require.Empty(t, claimed(t, st, "pc1", 5), "no active task")
	activate(t, st, store.NewDeviceTask{})
	cmds := claimed(t, st, "pc1", 5)
	require.Len(t, cmds, 2)
	for _, c := range cmds {
		require.NotZero(t, c.ID)
		td, err := st.GetDeviceExecution(ctx, c.ID)
		require.NoError(t, err)
		require.Equal(t, domain.ExecutionSent, td.Status)
	}
	require.Empty(t, claimed(t, st, "pc1", 5), "every command is out")
	_, err = st.Claim(ctx, "nope", 5)
	require.ErrorIs(t, err, store.ErrNotFound)
}
