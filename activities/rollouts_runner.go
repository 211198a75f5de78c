package activities

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store"
)

// RunnerClaimMax is the most tasks one refill of a runner claims.
const RunnerClaimMax = 1000

// RunnerCausesEvery is how often a runner's round is a full one, writing the waiting cause
// of every task left PENDING; its other rounds promote without (a cause shown may then be
// up to this old). A variable so tests may change it.
var RunnerCausesEvery = time.Second

// runRollout is RunRolloutTasks with Refill: the rollout's one runner. It runs its tasks
// like a batch and, after each write of the results that ended together, runs a promotion
// round itself (the gates are atomic in SQL, so any number of promoters may run rounds)
// and claims the rollout's newly AVAILABLE tasks that an executor runs — no workflow task,
// signal or activity dispatch between a task finishing and the next one starting. It ends
// when nothing it runs is left and a refill claims nothing; the workflow then claims again.
//
// Ownership: while a runner is in flight, the workflow claims only external tasks and
// adopts nothing, so every RUNNING non-external task of the rollout is the runner's. A
// retry (its worker died) therefore adopts them all, under their claim: a result is still
// recorded once, by the attempt check of FinishTasks.
func (a *RolloutActivities) runRollout(ctx context.Context, in BatchInput) (BatchResult, error) {
	tasks := in.Tasks
	if activityAttempt(ctx) > 1 {
		rows, err := a.Store.RunningRunnableTasks(ctx, in.RolloutID)
		if err != nil {
			return BatchResult{}, err
		}
		tasks = tasks[:0:0]
		for _, t := range rows {
			tasks = append(tasks, claimedFrom(t))
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
	claimMax := in.ClaimMax
	if claimMax <= 0 {
		claimMax = RunnerClaimMax
	}

	var (
		mu       sync.Mutex
		cancels  = map[int64]context.CancelFunc{}
		inflight = map[int64]ClaimedTask{}
		// results gets one message per started task, canceled ones included, so the loop
		// knows when every goroutine is done.
		results = make(chan runnerResult, 256)
		n       int // goroutines started and not yet reported
		wg      sync.WaitGroup
	)
	defer wg.Wait()
	start := func(ts []ClaimedTask) {
		for _, t := range ts {
			tctx, cancel := context.WithCancel(ctx)
			mu.Lock()
			cancels[t.ID], inflight[t.ID] = cancel, t
			mu.Unlock()
			n++
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer cancel()
				status, out, msg := a.runWithRetries(tctx, t, maxAttempts, backoff)
				mu.Lock()
				delete(inflight, t.ID)
				delete(cancels, t.ID)
				mu.Unlock()
				skip := ctx.Err() != nil || status == domain.TaskCanceled
				results <- runnerResult{skip: skip, TaskResult: store.TaskResult{ID: t.ID, Attempt: t.Attempt, Status: status, Error: msg, Output: out}}
			}()
		}
	}
	start(tasks)

	var res BatchResult
	var finErr error
	refills := 0
	lastFull := time.Now() // the round that promoted its first tasks wrote the causes
	heartbeat := time.NewTicker(min(check, time.Second))
	defer heartbeat.Stop()
	lastCheck := time.Now()
	for {
		if n == 0 {
			if ctx.Err() != nil || finErr != nil {
				break
			}
			got, err := a.refill(ctx, in.RolloutID, claimMax, &lastFull)
			refills++
			if err != nil {
				return res, err
			}
			if len(got) == 0 {
				break
			}
			start(got)
			continue
		}
		select {
		case first := <-results:
			n--
			group := []runnerResult{first}
			timer := time.NewTimer(KickDelay)
		gather:
			for n > 0 {
				select {
				case r := <-results:
					n--
					group = append(group, r)
				case <-timer.C:
					break gather
				}
			}
			timer.Stop()
			a.recordResults(ctx, group, &res, &finErr)
			if ctx.Err() != nil || finErr != nil {
				continue // drain: no new work
			}
			got, err := a.refill(ctx, in.RolloutID, claimMax, &lastFull)
			refills++
			if err != nil {
				// The tasks stay AVAILABLE; the next refill (or the workflow) claims them.
				activity.GetLogger(ctx).Warn("runner refill", "rollout", in.RolloutID, "error", err)
				continue
			}
			start(got)
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
	if refills > 0 && a.Waker != nil {
		// The promoter keeps its run_at timer and the other rollouts moving once this
		// runner stops promoting.
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		_ = a.Waker.KickPromoter(kctx)
		cancel()
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if finErr != nil {
		return res, fmt.Errorf("record task results: %w", finErr)
	}
	return res, nil
}

type runnerResult struct {
	store.TaskResult
	skip bool // canceled: nothing to record
}

// recordResults writes the group's results in one statement and tallies what was recorded.
func (a *RolloutActivities) recordResults(ctx context.Context, group []runnerResult, res *BatchResult, finErr *error) {
	var rs []store.TaskResult
	for _, r := range group {
		if !r.skip {
			rs = append(rs, r.TaskResult)
		}
	}
	if len(rs) == 0 {
		return
	}
	if _, err := a.finishTasks(ctx, rs, res); err != nil {
		*finErr = errors.Join(*finErr, err)
	}
}

// finishTasks writes results in one statement and tallies what was recorded: a result whose
// task is no longer that RUNNING claim (canceled meanwhile) records nothing. It returns how
// many were recorded.
func (a *RolloutActivities) finishTasks(ctx context.Context, rs []store.TaskResult, res *BatchResult) (int, error) {
	finished, err := a.Store.FinishTasks(context.WithoutCancel(ctx), rs)
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
		case r.Status == domain.TaskDone:
			res.Done = append(res.Done, r.ID)
		default:
			res.Failed = append(res.Failed, r.ID)
		}
	}
	return len(finished), nil
}

// refill runs a promotion round, wakes the other rollouts it promoted into (and this one's
// workflow if it promoted external tasks, which the workflow claims), and claims up to max
// of this rollout's AVAILABLE tasks that an executor runs.
// Its round is a full one (waiting causes written) at most every RunnerCausesEvery, a
// cheaper heads-only one otherwise (PromoteHeadsRound: same gates, no causes).
func (a *RolloutActivities) refill(ctx context.Context, rolloutID int64, max int, lastFull *time.Time) ([]ClaimedTask, error) {
	start := time.Now()
	round := a.Store.PromoteHeadsRound
	if start.Sub(*lastFull) >= RunnerCausesEvery {
		round, *lastFull = a.Store.PromoteRound, start
	}
	p, err := round(ctx)
	if err != nil {
		return nil, err
	}
	observePromotion(time.Since(start))
	var wake []int64
	for _, id := range p.RolloutIDs {
		if id != rolloutID {
			wake = append(wake, id)
		}
	}
	for _, t := range p.Promoted {
		if t.RolloutID == rolloutID && t.Executor == domain.ExecutorExternal {
			wake = append(wake, rolloutID)
			break
		}
	}
	if len(wake) > 0 && a.Waker != nil {
		if err := a.Waker.WakeRollouts(ctx, wake); err != nil {
			activity.GetLogger(ctx).Warn("wake rollouts", "rollouts", wake, "error", err)
		}
	}
	rows, err := a.Store.ClaimTasksOf(ctx, rolloutID, max, store.ClaimRunnable)
	if err != nil {
		return nil, err
	}
	out := make([]ClaimedTask, len(rows))
	for i, t := range rows {
		out[i] = claimedFrom(t)
	}
	return out, nil
}

// activityAttempt is the activity's attempt number (1 outside an activity); a variable so
// tests can play a retry.
var activityAttempt = func(ctx context.Context) int32 {
	if activity.IsActivity(ctx) {
		return activity.GetInfo(ctx).Attempt
	}
	return 1
}
