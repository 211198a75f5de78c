package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store"
)

// RunnerClaimMax is the most tasks one top-up of a runner claims.
const RunnerClaimMax = 1000

// RunnerCausesEvery is how often a runner's round is a full one, writing the waiting cause
// of every task left PENDING; its other rounds promote without (a cause shown may then be
// up to this old). A variable so tests may change it.
var RunnerCausesEvery = time.Second

// runRollout is RunRolloutTasks with AsRunner: the rollout's one runner. It runs its tasks
// like a batch and, after each write of the results that ended together, runs a promotion
// round itself (the gates are atomic in SQL, so any number of promoters may run rounds)
// and claims the rollout's newly AVAILABLE tasks that an executor runs — no workflow task,
// signal or activity dispatch between a task finishing and the next one starting. It ends
// when nothing it runs is left and a top-up claims nothing; the workflow then claims again.
//
// Ownership: while a runner is in flight, the workflow claims only external tasks and
// adopts nothing, so every RUNNING non-external task of the rollout is the runner's. A
// retry (its worker died) therefore adopts them all, under their claim: a result is still
// recorded once, by the attempt check of FinishTaskRuns.
func (a *RolloutActivities) runRollout(ctx context.Context, in BatchInput) (BatchResult, error) {
	tasks := in.Tasks
	if activityAttempt(ctx) > 1 {
		var err error
		if tasks, err = waitOutOutage(ctx, func() ([]ClaimedTaskRun, error) { return a.runnerTasks(ctx, in.RolloutID) }); err != nil {
			return BatchResult{}, err
		}
	}
	r := &runner{batchRun: a.newBatchRun(ctx, in), rolloutID: in.RolloutID, claimMax: in.ClaimMax,
		lastFull: time.Now()} // the round that promoted its first tasks wrote the causes
	if r.claimMax <= 0 {
		r.claimMax = RunnerClaimMax
	}
	defer r.wait()
	r.start(tasks)
	err := r.run()
	if r.topUps > 0 && a.Nudger != nil {
		// The promoter keeps its run_at timer and the other rollouts moving once this
		// runner stops promoting.
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		_ = a.Nudger.NudgePromoter(kctx)
		cancel()
	}
	if err != nil {
		return r.res, err
	}
	return r.outcome()
}

// runner is a batch that tops itself up: after each write of results it promotes and
// claims the rollout's next tasks (topUp).
type runner struct {
	*batchRun
	rolloutID int64
	claimMax  int
	topUps    int
	lastFull  time.Time // the last round that wrote the waiting causes
}

// run records results and tops up after each write until nothing it runs is left and a
// top-up claims nothing (or the batch stopped). A failed top-up after a write leaves the
// tasks AVAILABLE for the next top-up (or the workflow); one with nothing running ends the
// runner with its error.
func (r *runner) run() error {
	for {
		r.recordUntilDone(func(int) {
			if r.stopped() {
				return // drain: no new work
			}
			got, err := r.topUp()
			if err != nil {
				activity.GetLogger(r.ctx).Warn("runner top-up", "rollout", r.rolloutID, "error", err)
				return
			}
			r.start(got)
		})
		if r.stopped() {
			return nil
		}
		got, err := r.topUp()
		if err != nil {
			return err
		}
		if len(got) == 0 {
			return nil
		}
		r.start(got)
	}
}

// runnerTasks are the tasks a retried runner adopts: every RUNNING task of the rollout that
// an executor runs, all of them its own (see runRollout).
func (a *RolloutActivities) runnerTasks(ctx context.Context, rolloutID int64) ([]ClaimedTaskRun, error) {
	return claimedRows(a.Store.RunningRunnableTaskRuns(ctx, rolloutID))
}

// finishTasks writes results in one statement and tallies what was recorded: a result whose
// task is no longer that RUNNING claim (canceled meanwhile) records nothing. It returns how
// many were recorded.
func (a *RolloutActivities) finishTasks(ctx context.Context, rs []store.FinishedTaskRun, res *BatchResult) (int, error) {
	finished, err := a.Store.FinishTaskRuns(context.WithoutCancel(ctx), rs)
	if err != nil {
		return 0, err
	}
	done := make(map[int64]bool, len(finished))
	for _, id := range finished {
		done[id] = true
	}
	for _, r := range rs {
		switch {
		case !done[r.ID]:
		case r.Status == domain.TaskRunDone:
			res.Done = append(res.Done, r.ID)
		default:
			res.Failed = append(res.Failed, r.ID)
		}
	}
	return len(finished), nil
}

// topUp runs a promotion round, nudges the other rollouts it promoted into (and this one's
// workflow if it promoted external tasks, which the workflow claims), and claims up to
// claimMax of this rollout's AVAILABLE tasks that an executor runs.
// Its round is a full one (waiting causes written) at most every RunnerCausesEvery, a
// cheaper heads-only one otherwise (PromoteHeadsRound: same gates, no causes).
func (r *runner) topUp() ([]ClaimedTaskRun, error) {
	a, ctx, rolloutID := r.a, r.ctx, r.rolloutID
	r.topUps++
	start := time.Now()
	round := a.Store.PromoteHeadsRound
	if start.Sub(r.lastFull) >= RunnerCausesEvery {
		round, r.lastFull = a.Store.PromoteRound, start
	}
	p, err := round(ctx)
	if err != nil {
		return nil, err
	}
	observePromotion(time.Since(start))
	var nudge []int64
	for _, id := range p.RolloutIDs {
		if id != rolloutID {
			nudge = append(nudge, id)
		}
	}
	for _, t := range p.Promoted {
		if t.RolloutID == rolloutID && t.Executor == domain.ExecutorExternal {
			nudge = append(nudge, rolloutID)
			break
		}
	}
	if len(nudge) > 0 && a.Nudger != nil {
		if err := a.Nudger.NudgeRollouts(ctx, nudge); err != nil {
			activity.GetLogger(ctx).Warn("nudge rollouts", "rollouts", nudge, "error", err)
		}
	}
	claimStart := time.Now()
	rows, err := a.Store.ClaimTaskRunsOf(ctx, rolloutID, r.claimMax, store.ClaimRunnable)
	if err != nil {
		return nil, err
	}
	return a.traceClaimed(ctx, rows, claimStart), nil
}

// activityAttempt is the activity's attempt number (1 outside an activity); a variable so
// tests can play a retry.
var activityAttempt = func(ctx context.Context) int32 {
	if activity.IsActivity(ctx) {
		return activity.GetInfo(ctx).Attempt
	}
	return 1
}
