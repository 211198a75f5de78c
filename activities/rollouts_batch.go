package activities

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store"
)

// BatchInput is a group of claimed tasks one activity runs side by side.
type BatchInput struct {
	Tasks []ClaimedTask
	// MaxAttempts is how many times each task's executor runs before the task is FAILED
	// (a non-retryable error fails it at once).
	MaxAttempts int32
	// StatusCheck is how often the batch re-reads its tasks' status, to stop the executor
	// of a task an operator canceled (default 2 s).
	StatusCheck time.Duration
	// Backoff is the first pause between two executor attempts of a task (default 1 s,
	// doubled each time, at most 30 s).
	Backoff time.Duration
	// Refill makes the batch the rollout's one runner (runRollout): after results are
	// written it promotes and claims RolloutID's next tasks itself, up to ClaimMax at once.
	Refill    bool  `json:",omitempty"`
	RolloutID int64 `json:",omitempty"`
	ClaimMax  int   `json:",omitempty"`
}

// BatchResult lists what the batch finished.
type BatchResult struct {
	Done, Failed, Canceled []int64
}

// KickDelay gathers the results of a moment into one write and one kick of the promoter.
const KickDelay = 5 * time.Millisecond

// RunRolloutTasks runs a batch of claimed tasks, each with its executor and up to
// MaxAttempts tries, writes each task's DONE/FAILED as soon as it ends and kicks the
// promoter so the next tasks are promoted without waiting for the whole batch. It
// heartbeats; a worker killed mid-batch misses its heartbeat, Temporal retries the
// activity elsewhere, and the retry runs only the tasks still RUNNING under the same claim.
func (a *RolloutActivities) RunRolloutTasks(ctx context.Context, in BatchInput) (BatchResult, error) {
	if in.Refill {
		return a.runRollout(ctx, in)
	}
	tasks := in.Tasks
	if activity.IsActivity(ctx) && activity.GetInfo(ctx).Attempt > 1 {
		var err error
		if tasks, err = a.stillRunning(ctx, tasks); err != nil {
			return BatchResult{}, err
		}
	}
	maxAttempts := max(in.MaxAttempts, 1)
	backoff := in.Backoff
	if backoff <= 0 {
		backoff = time.Second
	}
	check := in.StatusCheck
	if check <= 0 {
		check = 2 * time.Second
	}
	kicker := newKicker(a.Waker, KickDelay)
	defer kicker.flush()

	var (
		mu       sync.Mutex
		cancels  = make(map[int64]context.CancelFunc, len(tasks))
		inflight = make(map[int64]ClaimedTask, len(tasks))
		wg       sync.WaitGroup
		results  = make(chan store.TaskResult, len(tasks))
	)
	ctxs := make(map[int64]context.Context, len(tasks))
	for _, t := range tasks {
		ctxs[t.ID], cancels[t.ID] = context.WithCancel(ctx)
		inflight[t.ID] = t
	}
	for _, t := range tasks {
		tctx, cancel := ctxs[t.ID], cancels[t.ID]
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cancel()
			status, out, msg := a.runWithRetries(tctx, t, maxAttempts, backoff)
			mu.Lock()
			delete(inflight, t.ID)
			mu.Unlock()
			if ctx.Err() != nil || status == domain.TaskCanceled {
				// The activity was canceled (the workflow marks its tasks), or an operator
				// canceled this task and its row already says so.
				return
			}
			results <- store.TaskResult{ID: t.ID, Attempt: t.Attempt, Status: status, Error: msg, Output: out}
		}()
	}
	go func() { wg.Wait(); close(results) }()

	// The writer records the results of the tasks that end together in one statement and
	// kicks the promoter after each write.
	var res BatchResult
	var finErr error
	written := make(chan struct{})
	go func() {
		defer close(written)
		for first := range results {
			group := []store.TaskResult{first}
			timer := time.NewTimer(KickDelay)
		gather:
			for {
				select {
				case r, ok := <-results:
					if !ok {
						break gather
					}
					group = append(group, r)
				case <-timer.C:
					break gather
				}
			}
			timer.Stop()
			recorded, err := a.finishTasks(ctx, group, &res)
			if err != nil {
				finErr = errors.Join(finErr, err)
			}
			if recorded > 0 {
				kicker.kick()
			}
		}
	}()

	done := written
	heartbeat := time.NewTicker(min(check, time.Second))
	defer heartbeat.Stop()
	lastCheck := time.Now()
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-heartbeat.C:
			if activity.IsActivity(ctx) {
				activity.RecordHeartbeat(ctx)
			}
			if time.Since(lastCheck) >= check {
				lastCheck = time.Now()
				a.stopCanceled(ctx, &mu, inflight, cancels)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if finErr != nil {
		return res, fmt.Errorf("record task results: %w", finErr)
	}
	return res, nil
}

// stopCanceled cancels the executors of in-flight tasks whose row is no longer their RUNNING claim.
func (a *RolloutActivities) stopCanceled(ctx context.Context, mu *sync.Mutex, inflight map[int64]ClaimedTask, cancels map[int64]context.CancelFunc) {
	mu.Lock()
	ids := make([]int64, 0, len(inflight))
	for id := range inflight {
		ids = append(ids, id)
	}
	mu.Unlock()
	if len(ids) == 0 {
		return
	}
	states, err := a.Store.TaskStates(ctx, ids)
	if err != nil {
		return // checked again at the next tick
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		t, ok := inflight[id]
		st, found := states[id]
		if ok && (!found || st.Status != domain.TaskRunning || st.Attempt != t.Attempt) {
			cancels[id]()
		}
	}
}

// stillRunning keeps the tasks whose row is still RUNNING under the claim they were given.
func (a *RolloutActivities) stillRunning(ctx context.Context, tasks []ClaimedTask) ([]ClaimedTask, error) {
	ids := make([]int64, len(tasks))
	for i, t := range tasks {
		ids[i] = t.ID
	}
	states, err := a.Store.TaskStates(ctx, ids)
	if err != nil {
		return nil, err
	}
	var out []ClaimedTask
	for _, t := range tasks {
		if st, ok := states[t.ID]; ok && st.Status == domain.TaskRunning && st.Attempt == t.Attempt {
			out = append(out, t)
		}
	}
	return out, nil
}

// runWithRetries runs t's executor up to maxAttempts times and says how the task ends:
// DONE with its output, FAILED with the last error, or CANCELED when ctx was canceled.
func (a *RolloutActivities) runWithRetries(ctx context.Context, t ClaimedTask, maxAttempts int32, backoff time.Duration) (domain.TaskStatus, []byte, string) {
	var lastErr error
	for attempt := int32(1); attempt <= maxAttempts; attempt++ {
		out, err := a.execute(ctx, t)
		if err == nil {
			return domain.TaskDone, out, ""
		}
		if ctx.Err() != nil {
			return domain.TaskCanceled, nil, "canceled"
		}
		lastErr = err
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) && appErr.NonRetryable() {
			break
		}
		if attempt == maxAttempts {
			break
		}
		select {
		case <-ctx.Done():
			return domain.TaskCanceled, nil, "canceled"
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
	return domain.TaskFailed, nil, lastErr.Error()
}

// kicker coalesces the kicks of the promoter that a burst of finishes asks for.
type kicker struct {
	waker RolloutWaker
	delay time.Duration
	mu    sync.Mutex
	armed bool
	wg    sync.WaitGroup
}

func newKicker(w RolloutWaker, delay time.Duration) *kicker { return &kicker{waker: w, delay: delay} }

func (k *kicker) kick() {
	if k.waker == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.armed {
		return
	}
	k.armed = true
	k.wg.Add(1)
	time.AfterFunc(k.delay, func() {
		defer k.wg.Done()
		k.mu.Lock()
		k.armed = false
		k.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = k.waker.KickPromoter(ctx) // the promoter's safety poll covers a lost kick
	})
}

// flush waits for the kicks in flight.
func (k *kicker) flush() { k.wg.Wait() }

// FailInput ends the tasks of a batch that are still RUNNING under their claim.
type FailInput struct {
	Tasks  []ClaimedTask
	Status domain.TaskStatus // FAILED or CANCELED
	Error  string
	// RunnerOf, when set, also ends every RUNNING non-external task of that rollout: the
	// tasks its runner claimed, which the workflow does not know one by one.
	RunnerOf int64 `json:",omitempty"`
}

// EndRolloutTasks marks the given tasks that are still their RUNNING claim FAILED or
// CANCELED (a batch that exhausted its retries, or a canceled rollout) and returns how
// many it changed.
func (a *RolloutActivities) EndRolloutTasks(ctx context.Context, in FailInput) (int, error) {
	if in.Status != domain.TaskFailed && in.Status != domain.TaskCanceled {
		return 0, temporal.NewNonRetryableApplicationError(fmt.Sprintf("cannot end tasks as %q", in.Status), "BadStatus", nil)
	}
	n := 0
	tasks := slices.Clone(in.Tasks)
	if in.RunnerOf != 0 {
		rows, err := a.Store.RunningRunnableTasks(ctx, in.RunnerOf)
		if err != nil {
			return 0, err
		}
		for _, t := range rows {
			tasks = append(tasks, claimedFrom(t))
		}
	}
	for _, t := range tasks {
		_, ok, err := a.Store.FinishTask(ctx, t.ID, t.Attempt, in.Status, in.Error, nil)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	if n > 0 && a.Waker != nil {
		_ = a.Waker.KickPromoter(ctx)
	}
	return n, nil
}
