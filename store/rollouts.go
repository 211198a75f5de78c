package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
// Wave is set by the store from the rollout's strategy.
type NewTaskRun struct {
	Database   string          `json:"database"`
	Type       domain.TaskType `json:"type"`
	Version    string          `json:"version"`
	VersionKey string          `json:"version_key"`
	RunAt      *time.Time      `json:"run_at,omitempty"`
	Executor   domain.Executor `json:"executor"`
	Payload    json.RawMessage `json:"payload,omitempty"`
	Wave       int             `json:"wave,omitempty"`
}

// NewRollout is a rollout to create: its tasks and, optionally, its progressive strategy
// (docs/progressive.md).
type NewRollout struct {
	Name          string
	ParallelLimit int32
	Strategy      *domain.Strategy
	Tasks         []NewTaskRun
}

// CreateRollout inserts a rollout and all its tasks (PENDING) in one transaction.
func (s *Store) CreateRollout(ctx context.Context, name string, parallelLimit int32, tasks []NewTaskRun) (Rollout, error) {
	return s.CreateRolloutWith(ctx, NewRollout{Name: name, ParallelLimit: parallelLimit, Tasks: tasks})
}

// CreateRolloutWith inserts a rollout, its tasks (PENDING) and, with a strategy of several
// waves, its waves (the first open), in one transaction. Each task's wave comes from the
// strategy (domain.Strategy.AssignWaves); a rollout with windows starts with the span of
// its windows that holds the database's clock, or the next one.
func (s *Store) CreateRolloutWith(ctx context.Context, nr NewRollout) (Rollout, error) {
	tasks, waves, err := placeInWaves(nr.Strategy, nr.Tasks)
	if err != nil {
		return Rollout{}, fmt.Errorf("create rollout %q: %w", nr.Name, err)
	}
	body, err := json.Marshal(tasks)
	if err != nil {
		return Rollout{}, fmt.Errorf("encode tasks: %w", err)
	}
	params := dbgen.InsertRolloutParams{Name: nr.Name, ParallelLimit: nr.ParallelLimit, Status: domain.RolloutRunning, WaveCount: int4(max(len(waves), 1))}
	if nr.Strategy != nil {
		if params.Strategy, err = json.Marshal(nr.Strategy); err != nil {
			return Rollout{}, fmt.Errorf("encode strategy: %w", err)
		}
	}
	var r Rollout
	err = s.underPromotionLock(ctx, func(q *dbgen.Queries) error {
		if nr.Strategy != nil && len(nr.Strategy.Windows) > 0 {
			now, err := q.DatabaseNow(ctx)
			if err != nil {
				return err
			}
			span, err := windowSpanAt(nr.Strategy.Windows, now)
			if err != nil {
				return err
			}
			params.WindowStart, params.WindowEnd = &span.Start, &span.End
		}
		var err error
		r, err = q.InsertRollout(ctx, params)
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
		if len(waves) > 1 {
			wb, err := json.Marshal(waves)
			if err != nil {
				return err
			}
			if err := q.InsertRolloutWaves(ctx, dbgen.InsertRolloutWavesParams{RolloutID: r.ID, Waves: wb}); err != nil {
				return fmt.Errorf("insert waves: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return Rollout{}, fmt.Errorf("create rollout %q: %w", nr.Name, mapErr(err))
	}
	return r, nil
}

// placeInWaves sets each task's wave from the strategy and lists the databases of each
// wave (none without a strategy of waves).
func placeInWaves(st *domain.Strategy, tasks []NewTaskRun) ([]NewTaskRun, [][]string, error) {
	if st == nil || len(st.Waves) == 0 {
		return tasks, nil, nil
	}
	var order []string
	seen := map[string]bool{}
	for _, t := range tasks {
		if !seen[t.Database] {
			seen[t.Database] = true
			order = append(order, t.Database)
		}
	}
	of, err := st.AssignWaves(order)
	if err != nil {
		return nil, nil, err
	}
	waves := make([][]string, len(st.Waves))
	for _, db := range order {
		w := of[db] - 1
		waves[w] = append(waves[w], db)
	}
	out := make([]NewTaskRun, len(tasks))
	for i, t := range tasks {
		t.Wave = of[t.Database]
		out[i] = t
	}
	return out, waves, nil
}

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
	// StatusReason says why the engine paused or canceled the rollout (an abort threshold,
	// a failed wave) or who paused it; empty otherwise.
	StatusReason string
	// Strategy is the rollout's progressive strategy (nil: none); OpenWave of WaveCount is
	// the last wave whose tasks may be promoted.
	Strategy            *domain.Strategy
	WaveCount, OpenWave int32
}

func summaryFrom(r dbgen.RolloutSummary) RolloutSummary {
	out := RolloutSummary{
		ID: r.ID, Name: r.Name, ParallelLimit: r.ParallelLimit, OperatorStatus: r.OperatorStatus, Status: r.Status,
		Counts: map[string]int64{
			string(domain.TaskRunPending): r.Pending, string(domain.TaskRunAvailable): r.Available,
			string(domain.TaskRunRunning): r.Running, string(domain.TaskRunDone): r.Done,
			string(domain.TaskRunFailed): r.Failed, string(domain.TaskRunCanceled): r.Canceled,
			string(domain.TaskRunSkipped): r.Skipped,
		},
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		StatusReason: r.StatusReason, WaveCount: r.WaveCount, OpenWave: r.OpenWave,
	}
	if len(r.Strategy) > 0 {
		var st domain.Strategy
		if json.Unmarshal(r.Strategy, &st) == nil {
			out.Strategy = &st
		}
	}
	return out
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
	rows, err := s.Q.ListRolloutSummaries(ctx, dbgen.ListRolloutSummariesParams{AfterID: afterID, MaxRows: int4(limit)})
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
	rows, err := s.Q.ListTaskRuns(ctx, dbgen.ListTaskRunsParams{RolloutID: rolloutID, AfterID: afterID, Statuses: statuses, MaxRows: int4(limit)})
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

// FinishTaskRun moves a RUNNING task claimed as attempt to DONE, FAILED or CANCELED
// (FinishTaskRuns for one task), and returns it as it ended. It reports false when the task
// is no longer that RUNNING attempt (already finished, canceled, or claimed again): the
// result is then ignored.
func (s *Store) FinishTaskRun(ctx context.Context, id int64, attempt int32, status domain.TaskRunStatus, errMsg string, output json.RawMessage) (TaskRun, bool, error) {
	done, err := s.FinishTaskRuns(ctx, []FinishedTaskRun{{ID: id, Attempt: attempt, TaskRunResult: domain.TaskRunResult{Status: status, Error: errMsg, Output: output}}})
	if err != nil || len(done) == 0 {
		return TaskRun{}, false, err
	}
	t, err := s.GetTaskRun(ctx, id)
	return t, true, err
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
// ErrTaskState (or ErrNotFound). It clears the rollout's status_reason.
func (s *Store) SetRolloutStatus(ctx context.Context, id int64, status domain.RolloutStatus, from ...domain.RolloutStatus) (Rollout, error) {
	return s.SetRolloutStatusFor(ctx, id, status, "", from...)
}

// SetRolloutStatusFor is SetRolloutStatus recording why (status_reason; "" clears it). A
// resume (to RUNNING) restarts the abort threshold's count and takes a wave that failed
// back to where it can be tried again: RUNNING when its tasks failed (the workflow looks
// at them again), CHECKING when its health checks failed (they run again).
func (s *Store) SetRolloutStatusFor(ctx context.Context, id int64, status domain.RolloutStatus, reason string, from ...domain.RolloutStatus) (Rollout, error) {
	var r Rollout
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		var err error
		r, err = q.SetRolloutStatus(ctx, dbgen.SetRolloutStatusParams{ID: id, Status: status, Reason: reason, FromStatuses: texts(from...)})
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
		if status == domain.RolloutRunning && r.WaveCount > 1 {
			return retryFailedWave(ctx, q, r)
		}
		return nil
	})
	if err != nil {
		return Rollout{}, fmt.Errorf("set rollout %d %s: %w", id, status, mapErr(err))
	}
	return r, nil
}

// CancelRollout marks the rollout CANCELED and cancels its tasks that have not started
// (RUNNING ones are stopped by the rollout's workflow); it returns the canceled task ids.
func (s *Store) CancelRollout(ctx context.Context, id int64) (Rollout, []int64, error) {
	return s.CancelRolloutFor(ctx, id, "")
}

// CancelRolloutFor is CancelRollout recording why (status_reason).
func (s *Store) CancelRolloutFor(ctx context.Context, id int64, reason string) (Rollout, []int64, error) {
	var r Rollout
	var ids []int64
	err := s.InTx(ctx, func(tx pgx.Tx, q *dbgen.Queries) error {
		var err error
		r, err = q.SetRolloutStatus(ctx, dbgen.SetRolloutStatusParams{ID: id, Status: domain.RolloutCanceled, Reason: reason, FromStatuses: texts(domain.RolloutRunning, domain.RolloutPaused)})
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

// CancelRunningTaskRun marks a RUNNING task CANCELED (through FinishTaskRuns, which ends
// its executor attempt in flight as canceled); its executor notices at its next status
// check and stops (a late result of that claim is then ignored).
func (s *Store) CancelRunningTaskRun(ctx context.Context, id int64) (TaskRun, error) {
	cur, err := s.GetTaskRun(ctx, id)
	if err != nil {
		return TaskRun{}, fmt.Errorf("cancel running task run %d: %w", id, err)
	}
	if cur.Status == domain.TaskRunRunning {
		t, ok, err := s.FinishTaskRun(ctx, id, cur.Attempt, domain.TaskRunCanceled, "canceled by operator", nil)
		if err != nil {
			return TaskRun{}, fmt.Errorf("cancel running task run %d: %w", id, err)
		}
		if ok {
			return t, nil
		}
		if cur, err = s.GetTaskRun(ctx, id); err != nil {
			return TaskRun{}, fmt.Errorf("cancel running task run %d: %w", id, err)
		}
	}
	return TaskRun{}, fmt.Errorf("cancel running task run %d: it is %s: %w", id, cur.Status, ErrTaskState)
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
// Attempt) and its result. Its JSON is what the finish_tasks statement reads.
type FinishedTaskRun struct {
	ID      int64 `json:"id"`
	Attempt int32 `json:"attempt"`
	domain.TaskRunResult
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
	var check []int64
	for i, r := range rows {
		ids[i] = r.ID
		if r.AbortRule && !slices.Contains(check, r.RolloutID) {
			check = append(check, r.RolloutID)
		}
	}
	// Before the caller promotes the next tasks: a crossed threshold stops them.
	if len(check) > 0 {
		if _, err := s.TripAbortThresholds(ctx, check); err != nil {
			return ids, err
		}
	}
	return ids, nil
}
