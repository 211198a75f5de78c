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
	Tasks []ClaimedTaskRun
	// MaxAttempts is how many times each task's executor runs before the task is FAILED
	// (a non-retryable error fails it at once).
	MaxAttempts int32
	// StatusCheck is how often the batch re-reads its tasks' status, to stop the executor
	// of a task an operator canceled (default 2 s).
	StatusCheck time.Duration
	// Backoff is the first pause between two executor attempts of a task (default 1 s,
	// doubled each time, at most 30 s).
	Backoff time.Duration
	// AsRunner makes the batch the rollout's one runner (runRollout): after results are
	// written it promotes and claims RolloutID's next tasks itself, up to ClaimMax at once.
	AsRunner  bool  `json:"Refill,omitempty"` // its wire name before the rename
	RolloutID int64 `json:",omitempty"`
	ClaimMax  int   `json:",omitempty"`
}

// BatchResult lists what the batch finished.
type BatchResult struct {
	Done, Failed, Canceled []int64
}

// NudgeDelay gathers the results of a moment into one write and one nudge of the promoter.
const NudgeDelay = 5 * time.Millisecond

// RunRolloutTasks runs a batch of claimed tasks, each with its executor and up to
// MaxAttempts tries, writes each task's DONE/FAILED as soon as it ends and nudges the
// promoter so the next tasks are promoted without waiting for the whole batch. It
// heartbeats; a worker killed mid-batch misses its heartbeat, Temporal retries the
// activity elsewhere, and the retry runs only the tasks still RUNNING under the same claim.
// With AsRunner it is the rollout's runner instead (runRollout).
func (a *RolloutActivities) RunRolloutTasks(ctx context.Context, in BatchInput) (BatchResult, error) {
	if in.AsRunner {
		return a.runRollout(ctx, in)
	}
	tasks := in.Tasks
	if activityAttempt(ctx) > 1 {
		var err error
		if tasks, err = waitOutOutage(ctx, func() ([]ClaimedTaskRun, error) { return a.stillRunning(ctx, in.Tasks) }); err != nil {
			return BatchResult{}, err
		}
	}
	nudger := newNudger(a.Nudger, NudgeDelay)
	defer nudger.flush()
	b := a.newBatchRun(ctx, in)
	defer b.wait()
	b.start(tasks)
	b.recordUntilDone(func(recorded int) {
		if recorded > 0 {
			nudger.nudge()
		}
	})
	return b.outcome()
}

// batchRun is one call of RunRolloutTasks: the claimed tasks it runs side by side, each
// executor in a goroutine of its own, and what it recorded of their results.
type batchRun struct {
	a   *RolloutActivities
	ctx context.Context
	// maxAttempts, backoff: each task's executor tries (BatchInput.MaxAttempts, .Backoff);
	// check: how often the tasks' rows are read to stop the ones an operator canceled.
	maxAttempts    int32
	backoff, check time.Duration

	mu       sync.Mutex // guards cancels and inflight, shared with the status check
	cancels  map[int64]context.CancelFunc
	inflight map[int64]ClaimedTaskRun
	// results gets one message per started task, canceled ones included; running counts
	// the started tasks whose message has not been received.
	results chan taskOutcome
	running int
	wg      sync.WaitGroup

	res    BatchResult
	finErr error // the writes of results that failed
}

// taskOutcome is how one task's executor ended.
type taskOutcome struct {
	store.FinishedTaskRun
	skip         bool   // canceled, or no longer this batch's: nothing to record
	err          error  // a failed attempt could not be recorded: the batch stops
	traceContext string // the task run's trace, for the span of its finish
}

func (a *RolloutActivities) newBatchRun(ctx context.Context, in BatchInput) *batchRun {
	b := &batchRun{
		a: a, ctx: ctx, maxAttempts: max(in.MaxAttempts, 1), backoff: in.Backoff, check: in.StatusCheck,
		cancels: map[int64]context.CancelFunc{}, inflight: map[int64]ClaimedTaskRun{},
		results: make(chan taskOutcome, 256),
	}
	if b.backoff <= 0 {
		b.backoff = time.Second
	}
	if b.check <= 0 {
		b.check = 2 * time.Second
	}
	return b
}

// start records the start of each task's executor attempt (one statement for all: the
// attempts a lost runner recorded count, its attempts in flight are lost) and runs each
// executor, with its retries, in a goroutine of its own. A task that is no longer its
// RUNNING claim, or whose next attempt another runner recorded, is left alone; one whose
// attempts are spent ends FAILED with its last error. A start that cannot be recorded
// stops the batch (Temporal retries it, and the retry takes the tasks over).
func (b *batchRun) start(tasks []ClaimedTaskRun) {
	if len(tasks) == 0 {
		return
	}
	refs := make([]store.ClaimRef, len(tasks))
	for i, t := range tasks {
		refs[i] = store.ClaimRef{ID: t.ID, Claim: t.Attempt}
	}
	began, err := waitOutOutage(b.ctx, func() (map[int64]store.AttemptStart, error) {
		return b.a.Store.BeginExecutorAttempts(b.ctx, refs, b.maxAttempts)
	})
	if err != nil {
		b.finErr = errors.Join(b.finErr, err)
		return
	}
	for _, t := range tasks {
		first, ok := began[t.ID]
		if !ok || (first.Attempt == 0 && !first.Spent) {
			continue
		}
		tctx, cancel := context.WithCancel(b.ctx)
		b.mu.Lock()
		b.cancels[t.ID], b.inflight[t.ID] = cancel, t
		b.mu.Unlock()
		b.running++
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			defer cancel()
			end := b.runAttempts(b.a.resumeTaskRun(tctx, t), t, first)
			b.mu.Lock()
			delete(b.inflight, t.ID)
			delete(b.cancels, t.ID)
			b.mu.Unlock()
			// The activity was canceled (the workflow marks its tasks), an operator canceled
			// this task and its row already says so, or another runner holds it now.
			end.skip = end.skip || b.ctx.Err() != nil || end.Status == domain.TaskRunCanceled
			end.traceContext = t.TraceContext
			b.results <- end
		}()
	}
}

// wait returns once every executor goroutine has ended.
func (b *batchRun) wait() { b.wg.Wait() }

// recordUntilDone receives results until every started task has reported, writing the
// results of the tasks that end together (within NudgeDelay) in one statement and calling
// afterWrite with how many it recorded (afterWrite may start more tasks). Meanwhile it
// heartbeats and stops the executors of tasks an operator canceled.
func (b *batchRun) recordUntilDone(afterWrite func(recorded int)) {
	heartbeat := time.NewTicker(min(b.check, time.Second))
	defer heartbeat.Stop()
	lastCheck := time.Now()
	for b.running > 0 {
		select {
		case first := <-b.results:
			b.running--
			afterWrite(b.record(b.gather(first)))
		case <-heartbeat.C:
			if activity.IsActivity(b.ctx) {
				activity.RecordHeartbeat(b.ctx)
			}
			if time.Since(lastCheck) >= b.check {
				lastCheck = time.Now()
				b.stopCanceled()
			}
		}
	}
}

// gather collects, after first, the results that arrive within NudgeDelay.
func (b *batchRun) gather(first taskOutcome) []taskOutcome {
	group := []taskOutcome{first}
	timer := time.NewTimer(NudgeDelay)
	defer timer.Stop()
	for b.running > 0 {
		select {
		case r := <-b.results:
			b.running--
			group = append(group, r)
		case <-timer.C:
			return group
		}
	}
	return group
}

// record writes the group's results in one statement and returns how many it recorded.
func (b *batchRun) record(group []taskOutcome) int {
	var rs []store.FinishedTaskRun
	for _, r := range group {
		if r.err != nil {
			b.finErr = errors.Join(b.finErr, r.err)
		}
		if !r.skip {
			rs = append(rs, r.FinishedTaskRun)
		}
	}
	if len(rs) == 0 {
		return 0
	}
	// (finishTasks tallies into b.res only what it recorded, so a retried call counts once.)
	start := time.Now()
	n, err := waitOutOutage(b.ctx, func() (int, error) { return b.a.finishTasks(b.ctx, rs, &b.res) })
	b.a.traceFinished(group, start, err)
	if err != nil {
		b.finErr = errors.Join(b.finErr, err)
	}
	return n
}

// stopped reports whether the batch takes no new work: the activity was canceled or a
// write of results failed.
func (b *batchRun) stopped() bool { return b.ctx.Err() != nil || b.finErr != nil }

// outcome is the activity's answer once every task has reported.
func (b *batchRun) outcome() (BatchResult, error) {
	if err := b.ctx.Err(); err != nil {
		return b.res, err
	}
	if b.finErr != nil {
		return b.res, fmt.Errorf("record task results: %w", b.finErr)
	}
	return b.res, nil
}

// stopCanceled cancels the executors of in-flight tasks whose row is no longer their
// RUNNING claim (an operator canceled the task, or the rollout).
func (b *batchRun) stopCanceled() {
	b.mu.Lock()
	ids := make([]int64, 0, len(b.inflight))
	for id := range b.inflight {
		ids = append(ids, id)
	}
	b.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	states, err := b.a.Store.TaskRunStates(b.ctx, ids)
	if err != nil {
		return // checked again at the next tick
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, id := range ids {
		t, ok := b.inflight[id]
		st, found := states[id]
		if ok && (!found || st.Status != domain.TaskRunRunning || st.Attempt != t.Attempt) {
			b.cancels[id]()
		}
	}
}

// stillRunning keeps the tasks whose row is still RUNNING under the claim they were given.
func (a *RolloutActivities) stillRunning(ctx context.Context, tasks []ClaimedTaskRun) ([]ClaimedTaskRun, error) {
	ids := make([]int64, len(tasks))
	for i, t := range tasks {
		ids[i] = t.ID
	}
	states, err := a.Store.TaskRunStates(ctx, ids)
	if err != nil {
		return nil, err
	}
	var out []ClaimedTaskRun
	for _, t := range tasks {
		if st, ok := states[t.ID]; ok && st.Status == domain.TaskRunRunning && st.Attempt == t.Attempt {
			out = append(out, t)
		}
	}
	return out, nil
}

// runAttempts runs t's executor from the attempt BeginExecutorAttempts recorded (first)
// until it succeeds or its claim's attempts are spent, and says how the task ends: DONE
// with its output, FAILED with the last error, or skip. Each failure is recorded at once
// (FailExecutorAttempt), before the backoff, and each next attempt's start before it runs:
// what counts is what PostgreSQL recorded, so a runner that takes over after this one was
// lost spends only the attempts that failed. The success is recorded with the task's DONE.
func (b *batchRun) runAttempts(ctx context.Context, t ClaimedTaskRun, first store.AttemptStart) taskOutcome {
	a, claim := b.a, store.ClaimRef{ID: t.ID, Claim: t.Attempt}
	end := func(status domain.TaskRunStatus, out []byte, msg string) taskOutcome {
		return taskOutcome{FinishedTaskRun: store.FinishedTaskRun{ID: t.ID, Attempt: t.Attempt, TaskRunResult: domain.TaskRunResult{Status: status, Error: msg, Output: out}}}
	}
	backoff := b.backoff
	at := first
	for {
		if at.Spent {
			return end(domain.TaskRunFailed, nil, at.LastError)
		}
		if at.Attempt == 0 {
			return taskOutcome{skip: true} // another runner recorded its attempt first
		}
		out, err := a.executeTraced(ctx, t, at.Attempt)
		if err == nil {
			return end(domain.TaskRunDone, out, "")
		}
		if ctx.Err() != nil {
			// Canceled: the task's end (CANCELED, by an operator or the workflow) writes the
			// attempt's. Nothing is recorded here, as nothing is by a worker that died.
			return end(domain.TaskRunCanceled, nil, "canceled")
		}
		var appErr *temporal.ApplicationError
		retryable := !errors.As(err, &appErr) || !appErr.NonRetryable()
		recorded, rerr := waitOutOutage(ctx, func() (bool, error) {
			return a.Store.FailExecutorAttempt(context.WithoutCancel(ctx), claim, at.Attempt, err.Error(), retryable)
		})
		if rerr != nil {
			return taskOutcome{skip: true, err: rerr}
		}
		if !recorded {
			return taskOutcome{skip: true} // a runner that took over marked it lost: it is that runner's
		}
		if !retryable || at.Failed+1 >= b.maxAttempts {
			return end(domain.TaskRunFailed, nil, err.Error())
		}
		select {
		case <-ctx.Done():
			return end(domain.TaskRunCanceled, nil, "canceled")
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
		began, berr := waitOutOutage(ctx, func() (map[int64]store.AttemptStart, error) {
			return a.Store.BeginExecutorAttempts(context.WithoutCancel(ctx), []store.ClaimRef{claim}, b.maxAttempts)
		})
		if berr != nil {
			return taskOutcome{skip: true, err: berr}
		}
		next, ok := began[t.ID]
		if !ok {
			return taskOutcome{skip: true} // no longer its RUNNING claim (canceled meanwhile)
		}
		at = next
	}
}

// nudger coalesces the nudges of the promoter that a burst of finishes asks for.
type nudger struct {
	to    RolloutNudger
	delay time.Duration
	mu    sync.Mutex
	armed bool
	wg    sync.WaitGroup
}

func newNudger(w RolloutNudger, delay time.Duration) *nudger { return &nudger{to: w, delay: delay} }

func (k *nudger) nudge() {
	if k.to == nil {
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
		_ = k.to.NudgePromoter(ctx) // the promoter's safety poll covers a lost nudge
	})
}

// flush waits for the nudges in flight.
func (k *nudger) flush() { k.wg.Wait() }

// FailInput ends the tasks of a batch that are still RUNNING under their claim.
type FailInput struct {
	Tasks  []ClaimedTaskRun
	Status domain.TaskRunStatus // FAILED or CANCELED
	Error  string
	// RunnerOf, when set, also ends every RUNNING non-external task of that rollout: the
	// tasks its runner claimed, which the workflow does not know one by one.
	RunnerOf int64 `json:",omitempty"`
}

// EndRolloutTasks marks the given tasks that are still their RUNNING claim FAILED or
// CANCELED (a batch that exhausted its retries, or a canceled rollout) and returns how
// many it changed.
func (a *RolloutActivities) EndRolloutTasks(ctx context.Context, in FailInput) (int, error) {
	if in.Status != domain.TaskRunFailed && in.Status != domain.TaskRunCanceled {
		return 0, temporal.NewNonRetryableApplicationError(fmt.Sprintf("cannot end tasks as %q", in.Status), "BadStatus", nil)
	}
	n := 0
	tasks := slices.Clone(in.Tasks)
	if in.RunnerOf != 0 {
		held, err := claimedRows(a.Store.RunningRunnableTaskRuns(ctx, in.RunnerOf))
		if err != nil {
			return 0, err
		}
		tasks = append(tasks, held...)
	}
	for _, t := range tasks {
		_, ok, err := a.Store.FinishTaskRun(ctx, t.ID, t.Attempt, in.Status, in.Error, nil)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	if n > 0 && a.Nudger != nil {
		_ = a.Nudger.NudgePromoter(ctx)
	}
	return n, nil
}

// OutageWait bounds how long a batch waits out a database that cannot be reached before it
// gives up on a write (a variable so tests may shorten it). A restart of PostgreSQL takes
// seconds to tens of seconds; failing the attempt instead would spend Temporal's retries
// of the batch (TaskMaxAttempts, seconds apart) in the outage and end its tasks FAILED
// although their executors succeeded — which the chaos run's waves scenario showed.
var OutageWait = 5 * time.Minute

// waitOutOutage runs fn, again while its error says the database cannot be reached (store.
// IsUnavailable), backing off from 200 ms to 5 s and heartbeating, for up to OutageWait.
func waitOutOutage[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	deadline := time.Now().Add(OutageWait)
	for backoff := 200 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
		v, err := fn()
		if err == nil || !store.IsUnavailable(err) || time.Now().After(deadline) {
			return v, err
		}
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx)
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(backoff):
		}
	}
}
