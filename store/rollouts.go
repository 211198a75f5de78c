package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store/dbgen"
)

// Rollouts and their task runs (docs/rollouts.md): creating and reading them, the
// operator's commands (pause, resume, cancel a rollout; retry, skip, cancel a task) and
// recording a task's result. Promotion and the claim, the moves the gates govern, are in
// rollouts_promotion.go.

// Rollout is a rollouts row.
type Rollout = dbgen.Rollout

// TaskRun is a task_runs row.
type TaskRun = dbgen.TaskRun

// ErrTaskState is returned when an operation does not apply to a row's current status
// (retrying a DONE task, pausing a canceled rollout); the API answers 409.
var ErrTaskState = errors.New("not allowed in the current status")

// NewTaskRun is one task of a rollout to create; VersionKey comes from internal/version.
type NewTaskRun struct {
	Database   string          `json:"database"`
	Type       domain.TaskType `json:"type"`
	Version    string          `json:"version"`
	VersionKey string          `json:"version_key"`
	RunAt      *time.Time      `json:"run_at,omitempty"`
	Executor   domain.Executor `json:"executor"`
	Payload    json.RawMessage `json:"payload,omitempty"`
}

// CreateRollout inserts a rollout and all its tasks (PENDING) in one transaction.
func (s *Store) CreateRollout(ctx context.Context, name string, parallelLimit int32, tasks []NewTaskRun) (Rollout, error) {
	body, err := json.Marshal(tasks)
	if err != nil {
		return Rollout{}, fmt.Errorf("encode tasks: %w", err)
	}
	var r Rollout
	err = s.underPromotionLock(ctx, func(q *dbgen.Queries) error {
		var err error
		r, err = q.InsertRollout(ctx, dbgen.InsertRolloutParams{Name: name, ParallelLimit: parallelLimit, Status: domain.RolloutRunning})
		if err != nil {
			return err
		}
		n, err := q.InsertTaskRuns(ctx, dbgen.InsertTaskRunsParams{RolloutID: r.ID, Status: string(domain.TaskRunPending), Tasks: body})
		if err != nil {
			return err
		}
		if n != int64(len(tasks)) {
			return fmt.Errorf("inserted %d task runs, want %d", n, len(tasks))
		}
		return nil
	})
	if err != nil {
		return Rollout{}, fmt.Errorf("create rollout %q: %w", name, mapErr(err))
	}
	if len(tasks) >= analyzeAfter {
		if err := s.Q.AnalyzeTaskRuns(ctx); err != nil {
			return r, fmt.Errorf("analyze task_runs after creating rollout %d: %w", r.ID, err)
		}
	}
	return r, nil
}

// analyzeAfter is the size of a rollout after whose insert task_runs is analyzed.
const analyzeAfter = 1000

// GetRollout reads a rollout.
func (s *Store) GetRollout(ctx context.Context, id int64) (Rollout, error) {
	r, err := s.Q.GetRollout(ctx, id)
	if err != nil {
		return Rollout{}, fmt.Errorf("get rollout %d: %w", id, mapErr(err))
	}
	return r, nil
}

// RolloutSummary is a rollout as users see it: its derived status and its task counts.
type RolloutSummary struct {
	ID            int64
	Name          string
	ParallelLimit int32
	// OperatorStatus is what an operator set: RUNNING, PAUSED or CANCELED.
	OperatorStatus domain.RolloutStatus
	// Status is what happened, derived by the rollout_summaries view (the one definition):
	// RUNNING or PAUSED while a task is active; then DONE, FAILED or CANCELED.
	Status domain.RolloutStatus
	// Counts holds the number of tasks per status, every status present.
	Counts    map[string]int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

func summaryFrom(r dbgen.RolloutSummary) RolloutSummary {
	return RolloutSummary{
		ID: r.ID, Name: r.Name, ParallelLimit: r.ParallelLimit, OperatorStatus: r.OperatorStatus, Status: r.Status,
		Counts: map[string]int64{
			string(domain.TaskRunPending): r.Pending, string(domain.TaskRunAvailable): r.Available,
			string(domain.TaskRunRunning): r.Running, string(domain.TaskRunDone): r.Done,
			string(domain.TaskRunFailed): r.Failed, string(domain.TaskRunCanceled): r.Canceled,
			string(domain.TaskRunSkipped): r.Skipped,
		},
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

// GetRolloutSummary reads a rollout with its derived status and task counts.
func (s *Store) GetRolloutSummary(ctx context.Context, id int64) (RolloutSummary, error) {
	r, err := s.Q.GetRolloutSummary(ctx, id)
	if err != nil {
		return RolloutSummary{}, fmt.Errorf("get rollout %d: %w", id, mapErr(err))
	}
	return summaryFrom(r), nil
}

// ListRolloutSummaries pages through rollouts by id, each with its derived status and
// task counts (one query for the page).
func (s *Store) ListRolloutSummaries(ctx context.Context, afterID int64, limit int) ([]RolloutSummary, error) {
	rows, err := s.Q.ListRolloutSummaries(ctx, dbgen.ListRolloutSummariesParams{AfterID: afterID, MaxRows: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list rollouts: %w", mapErr(err))
	}
	out := make([]RolloutSummary, len(rows))
	for i, r := range rows {
		out[i] = summaryFrom(r)
	}
	return out, nil
}

// ListTaskRuns pages through a rollout's tasks by id, optionally filtered by status.
func (s *Store) ListTaskRuns(ctx context.Context, rolloutID, afterID int64, statuses []string, limit int) ([]TaskRun, error) {
	if statuses == nil {
		statuses = []string{}
	}
	rows, err := s.Q.ListTaskRuns(ctx, dbgen.ListTaskRunsParams{RolloutID: rolloutID, AfterID: afterID, Statuses: statuses, MaxRows: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list tasks of rollout %d: %w", rolloutID, mapErr(err))
	}
	return rows, nil
}

// GetTaskRun reads a task run.
func (s *Store) GetTaskRun(ctx context.Context, id int64) (TaskRun, error) {
	t, err := s.Q.GetTaskRun(ctx, id)
	if err != nil {
		return TaskRun{}, fmt.Errorf("get task run %d: %w", id, mapErr(err))
	}
	return t, nil
}

// FinishTaskRun moves a RUNNING task claimed as attempt to DONE, FAILED or CANCELED. It
// reports false when the task is no longer that RUNNING attempt (already finished,
// canceled, or claimed again): the result is then ignored.
func (s *Store) FinishTaskRun(ctx context.Context, id int64, attempt int32, status domain.TaskRunStatus, errMsg string, output json.RawMessage) (TaskRun, bool, error) {
	t, err := s.Q.FinishTask(ctx, dbgen.FinishTaskParams{ID: id, Attempt: attempt, Status: status, Error: errMsg, Output: []byte(output)})
	if errors.Is(err, pgx.ErrNoRows) {
		return TaskRun{}, false, nil
	}
	if err != nil {
		return TaskRun{}, false, fmt.Errorf("finish task %d as %s: %w", id, status, mapErr(err))
	}
	return t, true, nil
}

// RunningTaskRuns lists a rollout's RUNNING tasks.
func (s *Store) RunningTaskRuns(ctx context.Context, rolloutID int64) ([]TaskRun, error) {
	rows, err := s.Q.RunningTasks(ctx, rolloutID)
	if err != nil {
		return nil, fmt.Errorf("running tasks of rollout %d: %w", rolloutID, mapErr(err))
	}
	return rows, nil
}

// CountUnfinished counts a rollout's tasks not yet in a terminal status.
func (s *Store) CountUnfinished(ctx context.Context, rolloutID int64) (int64, error) {
	n, err := s.Q.CountUnfinished(ctx, rolloutID)
	if err != nil {
		return 0, fmt.Errorf("count unfinished tasks of rollout %d: %w", rolloutID, mapErr(err))
	}
	return n, nil
}

// SetRolloutStatus moves a rollout to status if it is in one of from; otherwise
// ErrTaskState (or ErrNotFound).
func (s *Store) SetRolloutStatus(ctx context.Context, id int64, status domain.RolloutStatus, from ...domain.RolloutStatus) (Rollout, error) {
	r, err := s.Q.SetRolloutStatus(ctx, dbgen.SetRolloutStatusParams{ID: id, Status: status, FromStatuses: texts(from...)})
	if errors.Is(err, pgx.ErrNoRows) {
		cur, gerr := s.GetRollout(ctx, id)
		if gerr != nil {
			return Rollout{}, gerr
		}
		return Rollout{}, fmt.Errorf("rollout %d is %s: %w", id, cur.Status, ErrTaskState)
	}
	if err != nil {
		return Rollout{}, fmt.Errorf("set rollout %d %s: %w", id, status, mapErr(err))
	}
	return r, nil
}

// CancelRollout marks the rollout CANCELED and cancels its tasks that have not started
// (RUNNING ones are stopped by the rollout's workflow); it returns the canceled task ids.
func (s *Store) CancelRollout(ctx context.Context, id int64) (Rollout, []int64, error) {
	var r Rollout
	var ids []int64
	err := s.InTx(ctx, func(tx pgx.Tx, q *dbgen.Queries) error {
		var err error
		r, err = q.SetRolloutStatus(ctx, dbgen.SetRolloutStatusParams{ID: id, Status: domain.RolloutCanceled, FromStatuses: texts(domain.RolloutRunning, domain.RolloutPaused)})
		if errors.Is(err, pgx.ErrNoRows) {
			cur, gerr := q.GetRollout(ctx, id)
			if gerr != nil {
				return gerr
			}
			return fmt.Errorf("rollout %d is %s: %w", id, cur.Status, ErrTaskState)
		}
		if err != nil {
			return err
		}
		ids, err = q.CancelRolloutTasks(ctx, id)
		return err
	})
	if err != nil {
		return Rollout{}, nil, fmt.Errorf("cancel rollout %d: %w", id, mapErr(err))
	}
	return r, ids, nil
}

// RetryTaskRun puts a FAILED or CANCELED task of a live rollout back to PENDING (under the
// promotion lock: it may become a version blocker).
func (s *Store) RetryTaskRun(ctx context.Context, id int64) (TaskRun, error) {
	var t TaskRun
	err := s.underPromotionLock(ctx, func(q *dbgen.Queries) error {
		cur, err := q.GetTaskRun(ctx, id)
		if err != nil {
			return err
		}
		r, err := q.GetRollout(ctx, cur.RolloutID)
		if err != nil {
			return err
		}
		if r.Status == domain.RolloutCanceled {
			return fmt.Errorf("rollout %d is CANCELED: %w", r.ID, ErrTaskState)
		}
		t, err = q.RetryTask(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("task run %d is %s, only FAILED or CANCELED tasks can be retried: %w", id, cur.Status, ErrTaskState)
		}
		return err
	})
	if err != nil {
		return TaskRun{}, fmt.Errorf("retry task run %d: %w", id, mapErr(err))
	}
	return t, nil
}

// SkipTaskRun marks a task that is not running SKIPPED (it then no longer blocks the version gate).
func (s *Store) SkipTaskRun(ctx context.Context, id int64) (TaskRun, error) {
	return s.taskRunTransition(ctx, id, "skip", s.Q.SkipTask)
}

// CancelTaskRun cancels a task that has not started (RUNNING tasks are canceled through the
// rollout's workflow).
func (s *Store) CancelTaskRun(ctx context.Context, id int64) (TaskRun, error) {
	return s.taskRunTransition(ctx, id, "cancel", s.Q.CancelTask)
}

func (s *Store) taskRunTransition(ctx context.Context, id int64, verb string, fn func(context.Context, int64) (TaskRun, error)) (TaskRun, error) {
	t, err := fn(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		cur, gerr := s.GetTaskRun(ctx, id)
		if gerr != nil {
			return TaskRun{}, gerr
		}
		return TaskRun{}, fmt.Errorf("%s task run %d: it is %s: %w", verb, id, cur.Status, ErrTaskState)
	}
	if err != nil {
		return TaskRun{}, fmt.Errorf("%s task run %d: %w", verb, id, mapErr(err))
	}
	return t, nil
}

// CancelRunningTaskRun marks a RUNNING task CANCELED; its executor notices at its next status
// check and stops (a late result of that attempt is then ignored).
func (s *Store) CancelRunningTaskRun(ctx context.Context, id int64) (TaskRun, error) {
	return s.taskRunTransition(ctx, id, "cancel running", s.Q.CancelRunningTask)
}

// TaskRunState is a task's status and claim number.
type TaskRunState struct {
	Status  domain.TaskRunStatus
	Attempt int32
}

// TaskRunStates reads the status and claim number of the given tasks (missing ids are absent).
func (s *Store) TaskRunStates(ctx context.Context, ids []int64) (map[int64]TaskRunState, error) {
	rows, err := s.Q.TaskRunStates(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("read task states: %w", mapErr(err))
	}
	out := make(map[int64]TaskRunState, len(rows))
	for _, r := range rows {
		out[r.ID] = TaskRunState{Status: r.Status, Attempt: r.Attempt}
	}
	return out, nil
}

// TaskRunsByIDs reads the given task runs (missing ids are absent), by id.
func (s *Store) TaskRunsByIDs(ctx context.Context, ids []int64) ([]TaskRun, error) {
	rows, err := s.Q.TaskRunsByIDs(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("read task runs: %w", mapErr(err))
	}
	return rows, nil
}

// RunningRunnableTaskRuns lists a rollout's RUNNING tasks that an executor runs (not external).
func (s *Store) RunningRunnableTaskRuns(ctx context.Context, rolloutID int64) ([]TaskRun, error) {
	rows, err := s.Q.RunningRunnableTasks(ctx, rolloutID)
	if err != nil {
		return nil, fmt.Errorf("running tasks of rollout %d: %w", rolloutID, mapErr(err))
	}
	return rows, nil
}

// RunningTaskRunIDs lists the ids of a rollout's RUNNING tasks.
func (s *Store) RunningTaskRunIDs(ctx context.Context, rolloutID int64) ([]int64, error) {
	ids, err := s.Q.RunningTaskIDs(ctx, rolloutID)
	if err != nil {
		return nil, fmt.Errorf("running tasks of rollout %d: %w", rolloutID, mapErr(err))
	}
	return ids, nil
}

// FinishedTaskRun is how one claimed task run ended, for FinishTaskRuns: the claim (ID and
// Attempt) and its final status. (What an external executor reports is another thing:
// workflows.ExternalTaskResult, which names the task run only.)
type FinishedTaskRun struct {
	ID      int64                `json:"id"`
	Attempt int32                `json:"attempt"`
	Status  domain.TaskRunStatus `json:"status"`
	Error   string               `json:"error,omitempty"`
	Output  json.RawMessage      `json:"output,omitempty"`
}

// FinishTaskRuns is FinishTaskRun for many tasks in one statement; it returns the ids it
// finished (the others were no longer their RUNNING claim).
func (s *Store) FinishTaskRuns(ctx context.Context, results []FinishedTaskRun) ([]int64, error) {
	body, err := json.Marshal(results)
	if err != nil {
		return nil, fmt.Errorf("encode task results: %w", err)
	}
	rows, err := s.Q.FinishTasks(ctx, body)
	if err != nil {
		return nil, fmt.Errorf("finish %d tasks: %w", len(results), mapErr(err))
	}
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids, nil
}
