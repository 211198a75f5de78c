package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store/dbgen"
)

// NewDeviceTask is what CreateTask inserts.
type NewDeviceTask struct {
	Payload            json.RawMessage
	TargetCount        *int32
	AbortMinExecuted   *int32
	AbortFailedPercent *float64
	// Rate and Windows bound when its executions are sent (docs/progressive.md).
	Rate    *domain.Rate
	Windows []domain.Window
}

// CreateDeviceTask queues a task (pending); the dispatcher activates it when it is the oldest.
func (s *Store) CreateDeviceTask(ctx context.Context, t NewDeviceTask) (DeviceTask, error) {
	p := dbgen.InsertDeviceTaskParams{Payload: t.Payload, TargetCount: t.TargetCount, AbortMinExecuted: t.AbortMinExecuted}
	if len(p.Payload) == 0 {
		p.Payload = json.RawMessage(`{}`)
	}
	if t.AbortFailedPercent != nil {
		p.AbortFailedPercent = pgtype.Float8{Float64: *t.AbortFailedPercent, Valid: true}
	}
	var err error
	if t.Rate != nil {
		if p.Rate, err = json.Marshal(t.Rate); err != nil {
			return DeviceTask{}, fmt.Errorf("encode rate: %w", err)
		}
	}
	if len(t.Windows) > 0 {
		if p.Windows, err = json.Marshal(t.Windows); err != nil {
			return DeviceTask{}, fmt.Errorf("encode windows: %w", err)
		}
	}
	row, err := s.Q.InsertDeviceTask(ctx, p)
	if err != nil {
		return DeviceTask{}, fmt.Errorf("insert task: %w", mapErr(err))
	}
	return row, nil
}

// GetDeviceTask reads a task.
func (s *Store) GetDeviceTask(ctx context.Context, id int64) (DeviceTask, error) {
	t, err := s.Q.GetDeviceTask(ctx, id)
	if err != nil {
		return DeviceTask{}, fmt.Errorf("get task %d: %w", id, mapErr(err))
	}
	return t, nil
}

// ListDeviceTasks pages through tasks by id.
func (s *Store) ListDeviceTasks(ctx context.Context, afterID int64, limit int) ([]DeviceTask, error) {
	rows, err := s.Q.ListDeviceTasks(ctx, dbgen.ListDeviceTasksParams{AfterID: afterID, MaxRows: int4(limit)})
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", mapErr(err))
	}
	return rows, nil
}

// DeviceTaskCounts are a task's executions by outcome.
type DeviceTaskCounts = dbgen.DeviceTaskExecutionCountsRow

// DeviceTaskCounts counts a task's executions.
func (s *Store) DeviceTaskCounts(ctx context.Context, taskID int64) (DeviceTaskCounts, error) {
	c, err := s.Q.DeviceTaskExecutionCounts(ctx, taskID)
	if err != nil {
		return DeviceTaskCounts{}, fmt.Errorf("count executions of task %d: %w", taskID, mapErr(err))
	}
	return c, nil
}

// CancelDeviceTask cancels a pending or running task and every execution of it still holding a
// slot (sent or not); results arriving for them later are answered 409. A finished task is
// ErrConflict.
func (s *Store) CancelDeviceTask(ctx context.Context, id int64) (DeviceTask, error) {
	var t DeviceTask
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		cur, err := q.GetDeviceTask(ctx, id)
		if err != nil {
			return fmt.Errorf("task %d: %w", id, mapErr(err))
		}
		if cur.Status != domain.DeviceTaskPending && cur.Status != domain.DeviceTaskRunning {
			return fmt.Errorf("%w: task %d is already %s", ErrConflict, id, cur.Status)
		}
		// task_devices first, then the task row: the lock order of every other path.
		if _, err := q.CancelDeviceExecutionsOfTask(ctx, dbgen.CancelDeviceExecutionsOfTaskParams{
			Reason: "task canceled", TaskID: id, UnsentOnly: false,
		}); err != nil {
			return fmt.Errorf("cancel executions of task %d: %w", id, mapErr(err))
		}
		t, err = q.FinishDeviceTask(ctx, dbgen.FinishDeviceTaskParams{ID: id, Status: domain.DeviceTaskCanceled, Error: "canceled by operator"})
		if err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("%w: task %d finished meanwhile", ErrConflict, id)
			}
			return fmt.Errorf("cancel task %d: %w", id, mapErr(err))
		}
		return nil
	})
	return t, err
}

// applyAbortRule aborts the task (locked here, so one transaction decides) once at least
// min_executed executions are final and more than failed_percent of them failed: its
// unsent executions are canceled, those in flight may finish.
func applyAbortRule(ctx context.Context, q *dbgen.Queries, taskID int64) (bool, error) {
	task, err := q.LockDeviceTask(ctx, taskID)
	if err != nil {
		return false, fmt.Errorf("lock task %d: %w", taskID, mapErr(err))
	}
	if task.Status != domain.DeviceTaskRunning || task.AbortMinExecuted == nil || !task.AbortFailedPercent.Valid {
		return false, nil
	}
	counts, err := q.DeviceTaskExecutionCounts(ctx, task.ID)
	if err != nil {
		return false, fmt.Errorf("count executions of task %d: %w", task.ID, mapErr(err))
	}
	executed := counts.Succeeded + counts.Failed
	if executed < int64(*task.AbortMinExecuted) || float64(counts.Failed)*100 <= task.AbortFailedPercent.Float64*float64(executed) {
		return false, nil
	}
	reason := fmt.Sprintf("aborted: %d of %d executions failed (abort rule: more than %g%% of at least %d)",
		counts.Failed, executed, task.AbortFailedPercent.Float64, *task.AbortMinExecuted)
	if _, err := q.CancelDeviceExecutionsOfTask(ctx, dbgen.CancelDeviceExecutionsOfTaskParams{
		Reason: "task " + reason, TaskID: task.ID, UnsentOnly: true,
	}); err != nil {
		return false, fmt.Errorf("cancel unsent executions of task %d: %w", task.ID, mapErr(err))
	}
	if _, err := q.FinishDeviceTask(ctx, dbgen.FinishDeviceTaskParams{ID: task.ID, Status: domain.DeviceTaskFailed, Error: reason}); err != nil {
		return false, fmt.Errorf("abort task %d: %w", task.ID, mapErr(err))
	}
	return true, nil
}

// Advanced is what one dispatcher step did.
type Advanced struct {
	ActiveTaskID int64   // the running task afterwards (0: none)
	Finished     []int64 // tasks it finished (all executions final, nothing left to run)
	Activated    []int64 // tasks it made active
	// Refilled counts the executions created with the activation, in its transaction.
	Refilled int
}

// Advance keeps the single active task (D1), and is the one place a task becomes active:
// it finishes the running task once all its executions are final and no eligible device is
// left for it, then activates the oldest pending task with the settings in force and fills
// every PC's slots with it in the same transaction. One advisory lock serialises concurrent
// callers; the PC locks (taken before any task row, the order of every refill) keep
// refills out while it decides.
func (s *Store) Advance(ctx context.Context, settings domain.DeviceSettings) (Advanced, error) {
	if err := settings.Validate(); err != nil {
		return Advanced{}, fmt.Errorf("advance device tasks: %w", err)
	}
	// Most calls come while the running task still has executions out (each PC's last
	// result asks): they need neither the transaction nor its locks.
	busy, err := s.Q.RunningDeviceTaskBusy(ctx)
	switch {
	case err == nil && busy.Busy:
		return Advanced{ActiveTaskID: busy.ID}, nil
	case err != nil && !errors.Is(err, pgx.ErrNoRows):
		return Advanced{}, fmt.Errorf("running task: %w", mapErr(err))
	}
	var res Advanced
	err = s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		res = Advanced{}
		if err := q.DispatcherLock(ctx); err != nil {
			return fmt.Errorf("dispatcher lock: %w", mapErr(err))
		}
		// Every PC's refill lock: no refill (whose view of the running task or of a device
		// might be older than this step's) commits while the task's progress is judged,
		// and the activated task reaches every PC in this same commit.
		pcIDs, err := q.LockAllPCs(ctx)
		if err != nil {
			return fmt.Errorf("lock pcs: %w", mapErr(err))
		}
		for i := 0; i < 1000; i++ {
			t, err := q.LockRunningDeviceTask(ctx)
			switch {
			case errors.Is(err, pgx.ErrNoRows):
			case err != nil:
				return fmt.Errorf("running task: %w", mapErr(err))
			default:
				done, status, msg, err := taskDone(ctx, q, t)
				if err != nil {
					return err
				}
				if !done {
					res.ActiveTaskID = t.ID
					return nil
				}
				if _, err := q.FinishDeviceTask(ctx, dbgen.FinishDeviceTaskParams{ID: t.ID, Status: status, Error: msg}); err != nil {
					return fmt.Errorf("finish task %d: %w", t.ID, mapErr(err))
				}
				res.Finished = append(res.Finished, t.ID)
			}
			next, err := q.ActivateNextDeviceTask(ctx, dbgen.ActivateNextDeviceTaskParams{
				MaxAttempts: int4(settings.MaxAttempts), DeviceTimeoutMs: settings.Timeout.Milliseconds(),
			})
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("activate next task: %w", mapErr(err))
			}
			res.Activated = append(res.Activated, next.ID)
			// The new task reaches every PC in the same commit that makes it active.
			ids, err := q.FillPCs(ctx, pcIDs)
			if err != nil {
				return fmt.Errorf("refill pcs for task %d: %w", next.ID, mapErr(err))
			}
			res.Refilled += len(ids)
		}
		return nil
	})
	return res, err
}

// taskDone judges the running task t: done once nothing holds a slot for it and no eligible
// device (within its target_count) still owes it a run. It ends success only when
// executions ran and all of them succeeded (docs/spec.md, "Device dispatch"); a task no device
// ran ends failed, saying why.
func taskDone(ctx context.Context, q *dbgen.Queries, t DeviceTask) (done bool, status domain.DeviceTaskStatus, msg string, err error) {
	p, err := q.DeviceTaskProgress(ctx, t.ID)
	if err != nil {
		return false, "", "", fmt.Errorf("progress of task %d: %w", t.ID, mapErr(err))
	}
	if p.Active > 0 {
		return false, "", "", nil
	}
	if p.HasUnrun && (t.TargetCount == nil || p.Created < int64(*t.TargetCount)) {
		return false, "", "", nil
	}
	switch {
	case p.Failed > 0:
		return true, domain.DeviceTaskFailed, fmt.Sprintf("%d of %d executions failed", p.Failed, p.Succeeded+p.Failed), nil
	case p.Succeeded > 0:
		return true, domain.DeviceTaskSuccess, "", nil
	case p.Canceled > 0:
		return true, domain.DeviceTaskFailed, fmt.Sprintf("no eligible device left: its %d executions were canceled when their devices left the eligible set", p.Canceled), nil
	default:
		return true, domain.DeviceTaskFailed, "no eligible device: no online device could run the task when it became active", nil
	}
}

// DeviceTaskGates are the gates of a running task's sends now (docs/progressive.md): a
// closed one holds them back.
type DeviceTaskGates struct {
	// Frozen: the global freeze is in force.
	Frozen bool
	// OutsideWindows: the task has windows and none holds now; OpensAt is the next opening
	// (nil when not known yet: the next claim computes it).
	OutsideWindows bool
	OpensAt        *time.Time
	// Rate is the task's rate now (0: none) and RateRoom what it leaves this minute.
	Rate, RateRoom int64
}

// DeviceTaskGatesOf reads the gates of task id's sends now.
func (s *Store) DeviceTaskGatesOf(ctx context.Context, id int64) (DeviceTaskGates, error) {
	row, err := s.Q.DeviceTaskGates(ctx, id)
	if err != nil {
		return DeviceTaskGates{}, fmt.Errorf("gates of task %d: %w", id, mapErr(err))
	}
	h := DeviceTaskGates{Frozen: row.Frozen}
	if row.Rated {
		h.Rate, h.RateRoom = row.Rate, row.RateRoom
	}
	task, err := s.Q.GetDeviceTask(ctx, id)
	if err != nil {
		return DeviceTaskGates{}, fmt.Errorf("gates of task %d: %w", id, mapErr(err))
	}
	if len(task.Windows) > 0 {
		var ws []domain.Window
		if err := json.Unmarshal(task.Windows, &ws); err != nil {
			return DeviceTaskGates{}, fmt.Errorf("task %d: decode windows: %w", id, err)
		}
		span, err := windowSpanAt(ws, row.Now)
		if err != nil {
			return DeviceTaskGates{}, fmt.Errorf("task %d: %w", id, err)
		}
		if !span.Contains(row.Now) {
			h.OutsideWindows = true
			if span.Start.After(row.Now) {
				h.OpensAt = &span.Start
			}
		}
	}
	return h, nil
}
