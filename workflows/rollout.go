package workflows

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
)

// Workflow type names of the rollout engine.
const (
	RolloutWorkflowType  = "RolloutWorkflow"
	PromoterWorkflowType = "RolloutPromoterWorkflow"
)

// PromoterWorkflowID is the promoter singleton's id for the stack on taskQueue
// (domain.PromoterWorkflowID).
func PromoterWorkflowID(taskQueue string) string { return domain.PromoterWorkflowID(taskQueue) }

// RolloutWorkflowID is the one workflow id of a rollout (domain.RolloutWorkflowID).
func RolloutWorkflowID(rolloutID int64) string { return domain.RolloutWorkflowID(rolloutID) }

// Signals of the rollout engine. Other services may send them directly.
const (
	// SignalPromoted (no payload) tells a rollout's workflow that tasks became AVAILABLE.
	SignalPromoted = "promoted"
	// SignalTaskResult (payload ExternalTaskResult) reports an external task's result.
	SignalTaskResult = "task-result"
	// SignalCancelRollout (no payload) stops a rollout's workflow after its RUNNING tasks are
	// canceled (the API has already canceled the rest in Postgres).
	SignalCancelRollout = "cancel"
	// SignalCancelTask (payload int64 task id) cancels one RUNNING task.
	SignalCancelTask = "cancel-task"
	// SignalNudgePromoter (no payload) asks the promoter for a round (its name, "kick", is
	// in histories and stays).
	SignalNudgePromoter = "kick"
)

// SignalKick is SignalNudgePromoter's name before "kick" became "nudge".
//
// Deprecated: use SignalNudgePromoter (the signal's name, "kick", is the same).
const SignalKick = SignalNudgePromoter

// ExternalTaskResult is an external task's result as its executor reports it (the payload
// of SignalTaskResult): the task run it names and its result, DONE or FAILED. The rollout's
// workflow records it on the task run it claimed (FinishTaskRun). Its JSON (task_id, status,
// output, error) is recorded in histories: the embedded result flattens into it.
type ExternalTaskResult struct {
	TaskID int64 `json:"task_id"`
	domain.TaskRunResult
}

// RolloutInput starts a rollout's workflow.
type RolloutInput struct {
	RolloutID int64
	// Results are external results received but not yet applied, carried over continue-as-new.
	Results []ExternalTaskResult `json:",omitempty"`
}

// Rollout engine tuning (variables so tests may shrink them).
var (
	// RolloutSafetyPoll is how often a rollout's workflow claims without being nudged.
	RolloutSafetyPoll = 30 * time.Second
	// PromoterSafetyPoll is how often the promoter runs a round without being nudged.
	PromoterSafetyPoll = 30 * time.Second
	// TaskStartToClose bounds one attempt of a batch activity (its tasks' executor retries
	// included); TaskHeartbeat notices a killed worker.
	TaskStartToClose = 2 * time.Hour
	TaskHeartbeat    = 30 * time.Second
	// TaskMaxAttempts is how many executor attempts fail, per claim of a task, before it is
	// FAILED. PostgreSQL counts them (executor_attempts), not the batch's process, so a
	// batch whose worker died or lost its heartbeat is simply run again, as often as that
	// takes: its retry goes on from the attempts recorded, and a lost worker spends none.
	TaskMaxAttempts int32 = 3
	// batchRunsUnlimited is how many times Temporal runs a batch (or the runner) whose
	// worker was lost: without limit (2³¹−1 runs, at least a second apart, outlast any
	// rollout). The server reads MaximumAttempts 0 as unlimited too, but the SDK's
	// time-skipping test environment reads 0 as 10, where the tests prove the limit is gone.
	batchRunsUnlimited int32 = math.MaxInt32
	// rolloutMaxEvents: past this history length the workflow drains and continues as new.
	rolloutMaxEvents = 8000
	// claimBatch is the most tasks claimed at once.
	claimBatch = 1000
	// TaskBatch is the most tasks one executor activity runs side by side.
	TaskBatch = 50
)

// RolloutWorkflow claims its rollout's AVAILABLE tasks and runs each as an activity. It is
// nudged by the promoter (SignalPromoted), polls slowly as a safety net, and ends when the
// rollout has no unfinished task (retrying one starts it again).
func RolloutWorkflow(ctx workflow.Context, in RolloutInput) error {
	pinChanges(ctx, RolloutWorkflowType)
	r := newRolloutRun(ctx, in)
	// Runs that began before the runner keep running their tasks in fixed batches.
	r.runnerMode = workflow.GetVersion(ctx, rolloutRunnerChange, workflow.DefaultVersion, 1) >= 1
	// Runs that began before waves existed never had a rollout with more than one.
	r.waves = workflow.GetVersion(ctx, rolloutWavesChange, workflow.DefaultVersion, 1) >= 1
	return r.run(ctx)
}

// rolloutWavesChange: from version 1 the workflow moves its rollout's waves along
// (docs/progressive.md): its claims take the wave step (activities.ClaimInput.Waves), it
// sleeps on a durable timer through a wave's bake and runs the wave's health checks
// (RunWaveChecks), and it shows where the rollout stands in its current details.
const rolloutWavesChange = "rollout-waves"

// rolloutRunnerChange: from version 1 the tasks an executor runs go to one runner activity
// at a time that promotes and claims the next ones itself (activities.BatchInput.AsRunner);
// the workflow claims only external tasks while it runs.
const rolloutRunnerChange = "rollout-runner"

type batch struct {
	tasks  []activities.ClaimedTaskRun
	cancel workflow.CancelFunc
}

type rolloutRun struct {
	id int64
	// sel is the one selector of the loop: signals, the poll timer and every activity future.
	sel workflow.Selector
	// external are the claimed external tasks waiting for their result.
	external map[int64]activities.ClaimedTaskRun
	// results are external results received for tasks not claimed (yet).
	results map[int64]ExternalTaskResult
	// batches are the executor activities in flight, by sequence number; inBatch holds
	// their task ids.
	batches   map[int]*batch
	inBatch   map[int64]bool
	nextBatch int
	// closing are tasks whose final status is being written.
	closing   map[int64]bool
	adopt     []int64 // RUNNING tasks not held: claimed again by the next claim
	claimNext bool    // claim on the next iteration
	canceled  bool
	finished  bool // an external task finished since the promoter was last nudged
	pending   int  // activities in flight (batches and finishes)
	// handlers are the signal handlers mid-way. They run inside the loop's selector, so
	// they have finished whenever the loop decides; counting them keeps continue-as-new and
	// completion waiting for one that ever blocks.
	handlers handlerCount
	// runnerMode: executor tasks go to one runner that tops itself up; runnerBusy: it is in flight
	// (it then holds every RUNNING non-external task of the rollout).
	runnerMode, runnerBusy bool
	// waves: claims take the wave step and this run acts on its result (rolloutWavesChange);
	// waveBusy: a bake timer or the health checks of the open wave are in flight;
	// stopChecks cancels the checks.
	waves, waveBusy bool
	stopChecks      workflow.CancelFunc
}

var rolloutActs *activities.RolloutActivities

// newRolloutRun sets up the signal handlers (the "setup" half; run is the loop).
func newRolloutRun(ctx workflow.Context, in RolloutInput) *rolloutRun {
	r := &rolloutRun{
		id: in.RolloutID, sel: workflow.NewSelector(ctx), external: map[int64]activities.ClaimedTaskRun{},
		results: map[int64]ExternalTaskResult{}, batches: map[int]*batch{}, inBatch: map[int64]bool{},
		closing: map[int64]bool{}, claimNext: true,
	}
	for _, res := range in.Results {
		r.results[res.TaskID] = res
	}
	r.sel.AddReceive(workflow.GetSignalChannel(ctx, SignalPromoted), func(c workflow.ReceiveChannel, _ bool) {
		defer r.handlers.track()()
		c.Receive(ctx, nil)
		r.claimNext = true
	})
	r.sel.AddReceive(workflow.GetSignalChannel(ctx, SignalTaskResult), func(c workflow.ReceiveChannel, _ bool) {
		defer r.handlers.track()()
		var res ExternalTaskResult
		c.Receive(ctx, &res)
		r.onResult(ctx, res)
	})
	r.sel.AddReceive(workflow.GetSignalChannel(ctx, SignalCancelRollout), func(c workflow.ReceiveChannel, _ bool) {
		defer r.handlers.track()()
		c.Receive(ctx, nil)
		r.canceled = true
	})
	r.sel.AddReceive(workflow.GetSignalChannel(ctx, SignalCancelTask), func(c workflow.ReceiveChannel, _ bool) {
		defer r.handlers.track()()
		var id int64
		c.Receive(ctx, &id)
		r.cancelExternal(ctx, id)
	})
	return r
}

func (r *rolloutRun) idle() bool { return len(r.external) == 0 && r.pending == 0 }

func (r *rolloutRun) run(ctx workflow.Context) error {
	logger := workflow.GetLogger(ctx)
	r.armPoll(ctx)
	for {
		if r.canceled {
			return r.stop(ctx)
		}
		draining := r.shouldContinueAsNew(ctx)
		if r.claimNext && !draining {
			r.claimNext = false
			runnerHeld := r.runnerBusy
			res, err := r.claim(ctx)
			if err != nil {
				return err
			}
			if res.RolloutStatus == domain.RolloutCanceled {
				return r.stop(ctx)
			}
			if r.waves {
				r.onWave(ctx, res.Wave)
				workflow.SetCurrentDetails(ctx, rolloutDetails(r.id, res))
			}
			r.start(ctx, res.Tasks)
			if !runnerHeld {
				// (While a runner is in flight the RUNNING tasks not held here are its own.)
				r.adopt = r.orphans(res.RunningIDs)
			}
			if len(r.adopt) > 0 {
				r.claimNext = true
				continue
			}
			if res.Unfinished == 0 && r.idle() && !r.sel.HasPending() {
				// Nothing left and no signal waiting: the rollout is finished.
				if err := r.handlers.awaitIdle(ctx); err != nil {
					return err
				}
				r.nudgePromoter(ctx)
				logger.Info("rollout finished", "rollout", r.id)
				return nil
			}
		}
		if r.finished {
			r.finished = false
			r.nudgePromoter(ctx)
		}
		if draining && r.pending == 0 && !r.sel.HasPending() {
			// External tasks still waiting are adopted by the next run (Adopt).
			if err := r.handlers.awaitIdle(ctx); err != nil {
				return err
			}
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
func (r *rolloutRun) carry() []ExternalTaskResult {
	var out []ExternalTaskResult
	for _, id := range sortedKeys(r.results) {
		out = append(out, r.results[id])
	}
	return out
}

func (r *rolloutRun) armPoll(ctx workflow.Context) {
	t := workflow.NewTimerWithOptions(ctx, RolloutSafetyPoll, workflow.TimerOptions{Summary: "safety poll: claim AVAILABLE tasks"})
	r.sel.AddFuture(t, func(f workflow.Future) {
		r.claimNext = true
		if !r.canceled {
			r.armPoll(ctx)
		}
	})
}

// claim is a local activity (no server round trip); a claim whose result is lost with its
// workflow task leaves RUNNING tasks nobody holds, which the next claim reports and adopts.
func (r *rolloutRun) claim(ctx workflow.Context) (activities.ClaimResult, error) {
	lctx := databaseLocalActivity(ctx, "claim AVAILABLE tasks")
	var res activities.ClaimResult
	in := activities.ClaimInput{RolloutID: r.id, Max: claimBatch, Adopt: r.adopt}
	if r.waves {
		in.Waves, in.Now = true, workflow.Now(ctx)
	}
	if r.runnerBusy {
		// The runner claims the rest, and holds the RUNNING tasks this run does not.
		in.Adopt, in.ExternalOnly = nil, true
	}
	r.adopt = nil
	if err := workflow.ExecuteLocalActivity(lctx, rolloutActs.ClaimRolloutTasks, in).Get(ctx, &res); err != nil {
		return res, fmt.Errorf("claim tasks of rollout %d: %w", r.id, err)
	}
	return res, nil
}

// orphans are the RUNNING tasks this run does not hold (no batch, no external wait, no
// final status being written): left by a lost claim or an earlier run.
func (r *rolloutRun) orphans(running []int64) []int64 {
	var out []int64
	for _, id := range running {
		_, ext := r.external[id]
		if !ext && !r.inBatch[id] && !r.closing[id] {
			out = append(out, id)
		}
	}
	return out
}

// start runs claimed tasks: external ones wait for their result; the others run in
// batches of up to TaskBatch per activity.
func (r *rolloutRun) start(ctx workflow.Context, tasks []activities.ClaimedTaskRun) {
	var run []activities.ClaimedTaskRun
	for _, t := range tasks {
		if t.Executor != domain.ExecutorExternal {
			run = append(run, t)
			continue
		}
		if _, ok := r.external[t.ID]; ok {
			continue
		}
		r.external[t.ID] = t
		if res, ok := r.results[t.ID]; ok {
			delete(r.results, t.ID)
			r.onResult(ctx, res)
		}
	}
	if r.runnerMode {
		if len(run) > 0 {
			r.startBatch(ctx, run, true)
		}
		return
	}
	for len(run) > 0 {
		n := min(len(run), TaskBatch)
		r.startBatch(ctx, run[:n], false)
		run = run[n:]
	}
}

// startBatch runs tasks in one activity; asRunner makes it the rollout's runner.
func (r *rolloutRun) startBatch(ctx workflow.Context, tasks []activities.ClaimedTaskRun, asRunner bool) {
	seq := r.nextBatch
	r.nextBatch++
	cctx, cancel := workflow.WithCancel(ctx)
	r.batches[seq] = &batch{tasks: tasks, cancel: cancel}
	for _, t := range tasks {
		r.inBatch[t.ID] = true
	}
	summary := fmt.Sprintf("%s task %d on %s (%s %s)", tasks[0].Executor, tasks[0].ID, tasks[0].Database, tasks[0].Type, tasks[0].Version)
	if len(tasks) > 1 {
		summary = fmt.Sprintf("%d tasks, %d…%d", len(tasks), tasks[0].ID, tasks[len(tasks)-1].ID)
	}
	var runnerOf int64
	if asRunner {
		summary = "runner: " + summary + ", then the rollout's next tasks"
		r.runnerBusy, runnerOf = true, r.id
	}
	actx := workflow.WithActivityOptions(cctx, workflow.ActivityOptions{
		StartToCloseTimeout: TaskStartToClose,
		HeartbeatTimeout:    TaskHeartbeat,
		WaitForCancellation: true,
		// Each task retries its executor inside the activity, counting its attempts in
		// PostgreSQL; Temporal's retries recover a batch whose worker died (the retry runs
		// the tasks still RUNNING, from the attempts recorded), with no limit: a lost worker
		// is not a failed task, however often it happens.
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: batchRunsUnlimited, InitialInterval: time.Second, MaximumInterval: 30 * time.Second},
		Summary:     summary,
	})
	r.pending++
	in := activities.BatchInput{Tasks: tasks, MaxAttempts: TaskMaxAttempts, AsRunner: asRunner, RolloutID: runnerOf}
	r.sel.AddFuture(workflow.ExecuteActivity(actx, rolloutActs.RunRolloutTasks, in), func(f workflow.Future) {
		r.pending--
		delete(r.batches, seq)
		if asRunner {
			// Claim again: tasks promoted after its last top-up are AVAILABLE, unclaimed.
			r.runnerBusy, r.claimNext = false, true
		}
		for _, t := range tasks {
			delete(r.inBatch, t.ID)
		}
		err := f.Get(ctx, nil)
		switch {
		case err == nil:
		case temporal.IsCanceledError(err):
			// stop() ends the canceled batches' tasks.
		default:
			r.end(ctx, tasks, domain.TaskRunFailed, errorMessage(err), runnerOf)
		}
		r.claimAgainIfIdle()
	})
}

// end marks tasks still RUNNING under their claim FAILED or CANCELED (asynchronously).
// runnerOf (a rollout id) also ends the RUNNING tasks its runner claimed.
func (r *rolloutRun) end(ctx workflow.Context, tasks []activities.ClaimedTaskRun, status domain.TaskRunStatus, msg string, runnerOf int64) workflow.Future {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumInterval: 10 * time.Second},
		Summary:             fmt.Sprintf("%d tasks → %s", len(tasks), status),
	})
	r.pending++
	for _, t := range tasks {
		r.closing[t.ID] = true
	}
	f := workflow.ExecuteActivity(actx, rolloutActs.EndRolloutTasks, activities.FailInput{Tasks: tasks, Status: status, Error: msg, RunnerOf: runnerOf})
	r.sel.AddFuture(f, func(f workflow.Future) {
		r.pending--
		for _, t := range tasks {
			delete(r.closing, t.ID)
		}
		if err := f.Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Error("end tasks", "status", status, "error", err)
		}
		r.claimAgainIfIdle()
	})
	return f
}

// finish mirrors an external task's result in Postgres (asynchronously).
func (r *rolloutRun) finish(ctx workflow.Context, t activities.ClaimedTaskRun, status domain.TaskRunStatus, msg string, output []byte) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumInterval: 10 * time.Second},
		Summary:             fmt.Sprintf("task %d → %s", t.ID, status),
	})
	r.pending++
	r.closing[t.ID] = true
	f := workflow.ExecuteActivity(actx, rolloutActs.FinishRolloutTask, activities.FinishInput{TaskID: t.ID, Attempt: t.Attempt, Status: status, Error: msg, Output: output})
	r.sel.AddFuture(f, func(f workflow.Future) {
		r.pending--
		delete(r.closing, t.ID)
		if err := f.Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Error("finish task", "task", t.ID, "error", err)
		}
		r.finished = true
		r.claimAgainIfIdle()
	})
}

// claimAgainIfIdle claims again once nothing is in flight: either more work is AVAILABLE or the
// claim finds the rollout finished and the workflow ends.
func (r *rolloutRun) claimAgainIfIdle() {
	if r.idle() {
		r.claimNext = true
	}
}

func (r *rolloutRun) onResult(ctx workflow.Context, res ExternalTaskResult) {
	t, ok := r.external[res.TaskID]
	if !ok {
		// Not claimed yet (or not ours): keep it for when it is.
		r.results[res.TaskID] = res
		return
	}
	delete(r.external, res.TaskID)
	status := domain.TaskRunDone
	if res.Status == domain.TaskRunFailed {
		status = domain.TaskRunFailed
	}
	r.finish(ctx, t, status, res.Error, res.Output)
}

// cancelExternal stops waiting for an external task's result (the API has marked it
// CANCELED; tasks run by an executor are stopped by their batch's status check).
func (r *rolloutRun) cancelExternal(ctx workflow.Context, id int64) {
	t, ok := r.external[id]
	if !ok {
		return
	}
	delete(r.external, id)
	r.finish(ctx, t, domain.TaskRunCanceled, "canceled by operator", nil)
}

// stop cancels the batches in flight, marks every task it still holds CANCELED and ends.
func (r *rolloutRun) stop(ctx workflow.Context) error {
	var held []activities.ClaimedTaskRun
	var runnerOf int64
	if r.runnerBusy {
		runnerOf = r.id
	}
	for _, seq := range sortedIntKeys(r.batches) {
		b := r.batches[seq]
		held = append(held, b.tasks...)
		b.cancel()
	}
	if r.stopChecks != nil {
		r.stopChecks()
	}
	for _, id := range sortedKeys(r.external) {
		held = append(held, r.external[id])
		delete(r.external, id)
	}
	for r.pending > 0 {
		r.sel.Select(ctx)
	}
	if len(held) > 0 || runnerOf != 0 {
		r.end(ctx, held, domain.TaskRunCanceled, "rollout canceled", runnerOf)
		for r.pending > 0 {
			r.sel.Select(ctx)
		}
	}
	r.nudgePromoter(ctx)
	return r.handlers.awaitIdle(ctx)
}

// nudgePromoter signals the promoter; if it is not running, an activity starts it.
func (r *rolloutRun) nudgePromoter(ctx workflow.Context) {
	err := workflow.SignalExternalWorkflow(ctx, PromoterWorkflowID(workflow.GetInfo(ctx).TaskQueueName), "", SignalNudgePromoter, nil).Get(ctx, nil)
	if err == nil {
		return
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5},
		Summary:             "start the promoter",
	})
	if err := workflow.ExecuteActivity(actx, rolloutActs.KickRolloutPromoter).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("nudge promoter", "error", err)
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

func sortedIntKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func sortedKeys[V any](m map[int64]V) []int64 {
	keys := make([]int64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
