package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tickgate/tickgate/store/dbgen"
)

// Executor attempts (docs/rollouts.md, "Attempts"): PostgreSQL counts a task run's executor
// attempts per claim, so a runner that takes over from a lost one goes on from what was
// recorded, and a lost worker spends no attempt. The end of the attempt that ends the task
// run is written with the task run's end (FinishTaskRuns).

// ExecutorAttempt is an executor_attempts row.
type ExecutorAttempt = dbgen.ExecutorAttempt

// ClaimRef names a task run's claim: the task run and its claim number (task_runs.attempt).
type ClaimRef struct {
	ID    int64
	Claim int32
}

// AttemptStart is what BeginExecutorAttempts decided for one claimed task run.
type AttemptStart struct {
	// Attempt is the number of the attempt just recorded as started (0: none was).
	Attempt int32
	// Spent says the claim has no attempt left: maxAttempts failed, or one failed that could
	// not be retried. LastError is then the last failure's error, which the task run ends with.
	Spent bool
	// Failed counts the claim's failed attempts so far.
	Failed    int32
	LastError string
}

// BeginExecutorAttempts records that the executors of these claimed task runs start, in one
// statement: an attempt of the same claim found started and never ended is marked lost (its
// runner is gone), and a new attempt is recorded unless the claim has spent maxAttempts.
// A task run absent from the answer is no longer that RUNNING claim; one present with
// Attempt 0 and not Spent is being run by another runner (it recorded the attempt first).
func (s *Store) BeginExecutorAttempts(ctx context.Context, claims []ClaimRef, maxAttempts int32) (map[int64]AttemptStart, error) {
	ids, nums := make([]int64, len(claims)), make([]int32, len(claims))
	for i, c := range claims {
		ids[i], nums[i] = c.ID, c.Claim
	}
	rows, err := s.Q.BeginExecutorAttempts(ctx, dbgen.BeginExecutorAttemptsParams{Ids: ids, Claims: nums, MaxAttempts: maxAttempts})
	if err != nil {
		return nil, fmt.Errorf("begin executor attempts of %d task runs: %w", len(claims), mapErr(err))
	}
	out := make(map[int64]AttemptStart, len(rows))
	for _, r := range rows {
		out[r.TaskRunID] = AttemptStart{Attempt: r.Attempt, Spent: r.Spent, Failed: r.Failed, LastError: r.LastError}
	}
	return out, nil
}

// FailExecutorAttempt records that an attempt's executor failed (retryable false: trying
// again cannot help). It reports false when the attempt was no longer in flight: a runner
// that took over marked it lost, and the task run is that runner's now.
func (s *Store) FailExecutorAttempt(ctx context.Context, c ClaimRef, attempt int32, errMsg string, retryable bool) (bool, error) {
	_, err := s.Q.FailExecutorAttempt(ctx, dbgen.FailExecutorAttemptParams{TaskRunID: c.ID, Claim: c.Claim, Attempt: attempt, Error: errMsg, Retryable: retryable})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("record attempt %d of task run %d (claim %d) failed: %w", attempt, c.ID, c.Claim, mapErr(err))
	}
	return true, nil
}

// ExecutorAttemptsOf lists a task run's executor attempts, by claim and attempt.
func (s *Store) ExecutorAttemptsOf(ctx context.Context, taskRunID int64) ([]ExecutorAttempt, error) {
	rows, err := s.Q.ExecutorAttemptsOf(ctx, taskRunID)
	if err != nil {
		return nil, fmt.Errorf("executor attempts of task run %d: %w", taskRunID, mapErr(err))
	}
	return rows, nil
}
