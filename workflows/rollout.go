package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/store"
)

// Workflow type names of the rollout engine.
const (
	RolloutWorkflowType  = "RolloutWorkflow"
	PromoterWorkflowType = "RolloutPromoterWorkflow"
)

// PromoterWorkflowID is the promoter singleton's fixed id for the deployment that runs on
// taskQueue: "rollout-promoter" on the default queue ("tickgate"), "rollout-promoter/<queue>"
// otherwise, so stacks sharing a Temporal namespace (tests, staging) keep their own promoter.
func PromoterWorkflowID(taskQueue string) string {
	if taskQueue == "" || taskQueue == "tickgate" {
		return "rollout-promoter"
	}
	return "rollout-promoter/" + taskQueue
}

// RolloutWorkflowID is the one workflow id of a rollout.
func RolloutWorkflowID(rolloutID int64) string { return "rollout/" + strconv.FormatInt(rolloutID, 10) }

// Signals of the rollout engine. Other services may send them directly.
const (
	// SignalPromoted (no payload) tells a rollout's workflow that tasks became AVAILABLE.
	SignalPromoted = "promoted"
	// SignalTaskResult (payload TaskResult) reports an external task's result.
	SignalTaskResult = "task-result"
	// SignalCancelRollout (no payload) stops a rollout's workflow after its RUNNING tasks are
	// canceled (the API has already canceled the rest in Postgres).
	SignalCancelRollout = "cancel"
	// SignalCancelTask (payload int64 task id) cancels one RUNNING task.
	SignalCancelTask = "cancel-task"
	// SignalKick (no payload) asks the promoter for a round.
	SignalKick = "kick"
)

// TaskResult is an external task's result.
type TaskResult struct {
	TaskID int64           `json:"task_id"`
	Status string          `json:"status"` // DONE or FAILED
	Output json.RawMessage `json:"output,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// RolloutInput starts a rollout's workflow.
type RolloutInput struct {
	RolloutID int64
	// Results are external results received but not yet applied, carried over continue-as-new.
	Results []TaskResult `json:",omitempty"`
}

// Rollout engine tuning (variables so tests may shrink them).
var (
	// RolloutSafetyPoll is how often a rollout's workflow claims without being woken.
	RolloutSafetyPoll = 30 * time.Second
	// PromoterSafetyPoll is how often the promoter runs a round without being kicked.
	PromoterSafetyPoll = 30 * time.Second
	// TaskStartToClose bounds one executor attempt; TaskHeartbeat notices a killed worker.
	TaskStartToClose = 10 * time.Minute
	TaskHeartbeat    = 30 * time.Second
	// TaskMaxAttempts is how many times an executor runs a task before it is FAILED.
	TaskMaxAttempts int32 = 3
	// rolloutMaxEvents: past this history length the workflow drains and continues as new.
	rolloutMaxEvents = 8000
	// claimBatch is the most tasks claimed at once.
	claimBatch = 1000
)

// RolloutWorkflow claims its rollout's AVAILABLE tasks and runs each as an activity. It is
// woken by the promoter (SignalPromoted), polls slowly as a safety net, and ends when the
// rollout has no unfinished task (retrying one starts it again).
func RolloutWorkflow(ctx workflow.Context, in RolloutInput) error {
	r := newRolloutRun(ctx, in)
	return r.run(ctx)
}

type inflight struct {
	task   activities.ClaimedTask
	cancel workflow.CancelFunc // nil for an external task
}

type rolloutRun struct {
	id       int64
	sel      workflow.Selector
	running  map[int64]*inflight
	results  map[int64]TaskResult
	wake     bool // claim on the next iteration
	canceled bool
	finished bool // a task finished since the promoter was last kicked
	first    bool
	pending  int // activities in flight (executors and finishes)
}

var rolloutActs *activities.RolloutActivities

// newRolloutRun sets up the signal handlers (the "setup" half; run is the loop).
func newRolloutRun(ctx workflow.Context, in RolloutInput) *rolloutRun {
	r := &rolloutRun{
		id: in.RolloutID, sel: workflow.NewSelector(ctx), running: map[int64]*inflight{},
		results: map[int64]TaskResult{}, wake: true, first: true,
	}
	for _, res := range in.Results {
		r.results[res.TaskID] = res
	}
	r.sel.AddReceive(workflow.GetSignalChannel(ctx, SignalPromoted), func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		r.wake = true
	})
	r.sel.AddReceive(workflow.GetSignalChannel(ctx, SignalTaskResult), func(c workflow.ReceiveChannel, _ bool) {
		var res TaskResult
		c.Receive(ctx, &res)
		r.onResult(ctx, res)
	})
	r.sel.AddReceive(workflow.GetSignalChannel(ctx, SignalCancelRollout), func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		r.canceled = true
	})
	r.sel.AddReceive(workflow.GetSignalChannel(ctx, SignalCancelTask), func(c workflow.ReceiveChannel, _ bool) {
		var id int64
		c.Receive(ctx, &id)
		r.cancelTask(ctx, id, "canceled by operator")
	})
	return r
}

func (r *rolloutRun) run(ctx workflow.Context) error {
	logger := workflow.GetLogger(ctx)
	r.armPoll(ctx)
	for {
		if r.canceled {
			return r.stop(ctx)
		}
		draining := r.shouldContinueAsNew(ctx)
		if r.wake && !draining {
			r.wake = false
			res, err := r.claim(ctx)
			if err != nil {
				return err
			}
			if res.RolloutStatus == store.RolloutCanceled {
				return r.stop(ctx)
			}
			for _, t := range res.Tasks {
				r.start(ctx, t)
			}
			if res.Unfinished == 0 && len(r.running) == 0 && r.pending == 0 {
				// Nothing left: finish unless a signal is waiting.
				if !r.sel.HasPending() {
					r.kickPromoter(ctx)
					logger.Info("rollout finished", "rollout", r.id)
					return nil
				}
			}
		}
		if r.finished {
			r.finished = false
			r.kickPromoter(ctx)
		}
		if draining && r.pending == 0 && !r.sel.HasPending() {
			return workflow.NewContinueAsNewError(ctx, RolloutWorkflowType, RolloutInput{RolloutID: r.id, Results: r.carry()})
		}
		r.sel.Select(ctx)
		for r.sel.HasPending() {
			r.sel.Select(ctx)
		}
	}
}

func (r *rolloutRun) shouldContinueAsNew(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > rolloutMaxEvents
}

// carry lists the external results not yet applied, in task id order.
func (r *rolloutRun) carry() []TaskResult {
	var out []TaskResult
	for _, id := range sortedKeys(r.results) {
		out = append(out, r.results[id])
	}
	return out
}

func (r *rolloutRun) armPoll(ctx workflow.Context) {
	t := workflow.NewTimerWithOptions(ctx, RolloutSafetyPoll, workflow.TimerOptions{Summary: "safety poll: claim AVAILABLE tasks"})
	r.sel.AddFuture(t, func(f workflow.Future) {
		r.wake = true
		if !r.canceled {
			r.armPoll(ctx)
		}
	})
}

func (r *rolloutRun) claim(ctx workflow.Context) (activities.ClaimResult, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumInterval: 10 * time.Second},
		Summary:             "claim AVAILABLE tasks",
	})
	var res activities.ClaimResult
	err := workflow.ExecuteActivity(actx, rolloutActs.ClaimRolloutTasks, activities.ClaimInput{RolloutID: r.id, Max: claimBatch, Adopt: r.first}).Get(ctx, &res)
	if err != nil {
		return res, fmt.Errorf("claim tasks of rollout %d: %w", r.id, err)
	}
	r.first = false
	return res, nil
}

// start runs a claimed task: an activity for noop/http/sql, a wait for a result for external.
func (r *rolloutRun) start(ctx workflow.Context, t activities.ClaimedTask) {
	if _, ok := r.running[t.ID]; ok {
		return
	}
	if t.Executor == activities.ExecutorExternal {
		r.running[t.ID] = &inflight{task: t}
		if res, ok := r.results[t.ID]; ok {
			delete(r.results, t.ID)
			r.onResult(ctx, res)
		}
		return
	}
	cctx, cancel := workflow.WithCancel(ctx)
	r.running[t.ID] = &inflight{task: t, cancel: cancel}
	actx := workflow.WithActivityOptions(cctx, workflow.ActivityOptions{
		StartToCloseTimeout: TaskStartToClose,
		HeartbeatTimeout:    TaskHeartbeat,
		WaitForCancellation: true,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: TaskMaxAttempts, InitialInterval: time.Second},
		Summary:             fmt.Sprintf("%s task %d on %s (%s %s)", t.Executor, t.ID, t.Database, t.Type, t.Version),
	})
	r.pending++
	r.sel.AddFuture(workflow.ExecuteActivity(actx, rolloutActs.RunRolloutTask, t), func(f workflow.Future) {
		r.pending--
		err := f.Get(ctx, nil)
		cur, ok := r.running[t.ID]
		if !ok || cur.task.Attempt != t.Attempt {
			return
		}
		delete(r.running, t.ID)
		switch {
		case err == nil:
			r.finished = true
			r.wakeIfIdle()
		case temporal.IsCanceledError(err):
			r.finish(ctx, t, store.TaskCanceled, "canceled", nil)
		default:
			r.finish(ctx, t, store.TaskFailed, errorMessage(err), nil)
		}
	})
}

// finish mirrors a final status decided here in Postgres (asynchronously).
func (r *rolloutRun) finish(ctx workflow.Context, t activities.ClaimedTask, status, msg string, output []byte) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumInterval: 10 * time.Second},
		Summary:             fmt.Sprintf("task %d → %s", t.ID, status),
	})
	r.pending++
	f := workflow.ExecuteActivity(actx, rolloutActs.FinishRolloutTask, activities.FinishInput{TaskID: t.ID, Attempt: t.Attempt, Status: status, Error: msg, Output: output})
	r.sel.AddFuture(f, func(f workflow.Future) {
		r.pending--
		if err := f.Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Error("finish task", "task", t.ID, "error", err)
		}
		r.finished = true
		r.wakeIfIdle()
	})
}

// wakeIfIdle claims again once nothing is in flight: either more work is AVAILABLE or the
// claim finds the rollout finished and the workflow ends.
func (r *rolloutRun) wakeIfIdle() {
	if len(r.running) == 0 && r.pending == 0 {
		r.wake = true
	}
}

func (r *rolloutRun) onResult(ctx workflow.Context, res TaskResult) {
	cur, ok := r.running[res.TaskID]
	if !ok || cur.task.Executor != activities.ExecutorExternal {
		// Not claimed yet (or not ours): keep it for when it is.
		r.results[res.TaskID] = res
		return
	}
	delete(r.running, res.TaskID)
	status := store.TaskDone
	if res.Status == store.TaskFailed {
		status = store.TaskFailed
	}
	r.finish(ctx, cur.task, status, res.Error, res.Output)
}

func (r *rolloutRun) cancelTask(ctx workflow.Context, id int64, why string) {
	cur, ok := r.running[id]
	if !ok {
		return
	}
	if cur.cancel != nil {
		cur.cancel() // the activity's callback marks it CANCELED
		return
	}
	delete(r.running, id)
	r.finish(ctx, cur.task, store.TaskCanceled, why, nil)
}

// stop cancels every running task, waits for the activities to settle and ends.
func (r *rolloutRun) stop(ctx workflow.Context) error {
	for _, id := range sortedKeys(r.running) {
		r.cancelTask(ctx, id, "rollout canceled")
	}
	for r.pending > 0 {
		r.sel.Select(ctx)
	}
	r.kickPromoter(ctx)
	return nil
}

// kickPromoter signals the promoter; if it is not running, an activity starts it.
func (r *rolloutRun) kickPromoter(ctx workflow.Context) {
	err := workflow.SignalExternalWorkflow(ctx, PromoterWorkflowID(workflow.GetInfo(ctx).TaskQueueName), "", SignalKick, nil).Get(ctx, nil)
	if err == nil {
		return
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5},
		Summary:             "start the promoter",
	})
	if err := workflow.ExecuteActivity(actx, rolloutActs.KickRolloutPromoter).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("kick promoter", "error", err)
	}
}

func errorMessage(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Error()
	}
	var toErr *temporal.TimeoutError
	if errors.As(err, &toErr) {
		return "timed out: " + toErr.Error()
	}
	return err.Error()
}

func sortedKeys[V any](m map[int64]V) []int64 {
	keys := make([]int64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
