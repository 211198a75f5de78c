package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store/dbgen"
)

// Device dispatch rows (DESIGN.md §3).
type (
	PC              = dbgen.Pc
	Device          = dbgen.Device
	DevTask         = dbgen.Task
	TaskDevice      = dbgen.TaskDevice
	TaskDeviceView  = dbgen.GetTaskDeviceViewRow
	TaskDeviceEvent = dbgen.TaskDeviceEvent
	PCSummary       = dbgen.PcDeviceSummary
	ClaimedCommand  = dbgen.ClaimTaskDevicesRow
)

// ErrNotInFlight is returned when an ack or result names an attempt that is no longer out
// on the device (it timed out, was cancelled, or a newer attempt was sent): HTTP 409.
var ErrNotInFlight = errors.New("attempt is not in flight")

// CreatePC inserts a PC; a taken name is ErrConflict.
func (s *Store) CreatePC(ctx context.Context, name string, capacity int32) (PC, error) {
	pc, err := s.Q.InsertPC(ctx, dbgen.InsertPCParams{Name: name, DeviceCapacity: capacity})
	if err != nil {
		return PC{}, fmt.Errorf("insert pc %q: %w", name, mapErr(err))
	}
	return pc, nil
}

// GetPC reads a PC by name.
func (s *Store) GetPC(ctx context.Context, name string) (PC, error) {
	pc, err := s.Q.GetPCByName(ctx, name)
	if err != nil {
		return PC{}, fmt.Errorf("get pc %q: %w", name, mapErr(err))
	}
	return pc, nil
}

// PCDetail is a PC with its slots and devices.
type PCDetail struct {
	PC      PC
	Slots   PCSummary
	Devices []Device
}

// GetPCDetail reads a PC with its slot summary and devices.
func (s *Store) GetPCDetail(ctx context.Context, name string) (PCDetail, error) {
	pc, err := s.GetPC(ctx, name)
	if err != nil {
		return PCDetail{}, err
	}
	sum, err := s.Q.PCSummary(ctx, pc.ID)
	if err != nil {
		return PCDetail{}, fmt.Errorf("slots of pc %q: %w", name, mapErr(err))
	}
	devs, err := s.Q.ListDevicesOfPC(ctx, pc.ID)
	if err != nil {
		return PCDetail{}, fmt.Errorf("devices of pc %q: %w", name, mapErr(err))
	}
	return PCDetail{PC: pc, Slots: sum, Devices: devs}, nil
}

// ListPCs pages through PCs by id.
func (s *Store) ListPCs(ctx context.Context, afterID int64, limit int) ([]PC, error) {
	rows, err := s.Q.ListPCs(ctx, dbgen.ListPCsParams{AfterID: afterID, MaxRows: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list pcs: %w", mapErr(err))
	}
	return rows, nil
}

// PCSummaries returns every PC's slots (eligible, running, target).
func (s *Store) PCSummaries(ctx context.Context) ([]PCSummary, error) {
	rows, err := s.Q.PCSummaries(ctx)
	if err != nil {
		return nil, fmt.Errorf("pc summaries: %w", mapErr(err))
	}
	return rows, nil
}

// CreateDevice adds a device to a PC and, in the same transaction, fills the PC's free
// slots, so the new device takes work at once.
func (s *Store) CreateDevice(ctx context.Context, pcName, serial string) (Device, []int64, error) {
	var dev Device
	var ids []int64
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		pc, err := q.GetPCByName(ctx, pcName)
		if err != nil {
			return fmt.Errorf("pc %q: %w", pcName, mapErr(err))
		}
		dev, err = q.InsertDevice(ctx, dbgen.InsertDeviceParams{PcID: pc.ID, Serial: serial})
		if err != nil {
			return fmt.Errorf("insert device %q: %w", serial, mapErr(err))
		}
		ids, err = refillPC(ctx, q, pc.ID, false)
		return err
	})
	return dev, ids, err
}

// GetDevice reads a device by serial.
func (s *Store) GetDevice(ctx context.Context, serial string) (Device, error) {
	d, err := s.Q.GetDeviceBySerial(ctx, serial)
	if err != nil {
		return Device{}, fmt.Errorf("get device %q: %w", serial, mapErr(err))
	}
	return d, nil
}

// SetDeviceStatus sets a device's status (an operator resetting it from error, taking it
// offline…) and applies it to the PC's slots in the same transaction: executions holding
// a slot on a device that left the eligible set are cancelled, free slots are refilled.
func (s *Store) SetDeviceStatus(ctx context.Context, serial string, status domain.DeviceStatus, errText string) (Device, []int64, error) {
	var dev Device
	var ids []int64
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		// Lock the device's executions first: a result finishing one of them locks it, then
		// the device; taking them in the same order cannot deadlock, and once the device
		// leaves the eligible set every one of them is cancelled below (none skipped).
		if _, err := q.LockActiveOfDevice(ctx, serial); err != nil {
			return fmt.Errorf("lock executions of device %q: %w", serial, mapErr(err))
		}
		var err error
		dev, err = q.SetDeviceStatus(ctx, dbgen.SetDeviceStatusParams{Status: status, Error: errText, Serial: serial})
		if err != nil {
			return fmt.Errorf("set device %q %s: %w", serial, status, mapErr(err))
		}
		ids, err = refillPC(ctx, q, dev.PcID, true)
		return err
	})
	return dev, ids, err
}

// NewDevTask is what CreateTask inserts.
type NewDevTask struct {
	Payload            json.RawMessage
	TargetCount        *int32
	AbortMinExecuted   *int32
	AbortFailedPercent *float64
}

// CreateDevTask queues a task (pending); the dispatcher activates it when it is the oldest.
func (s *Store) CreateDevTask(ctx context.Context, t NewDevTask) (DevTask, error) {
	p := dbgen.InsertDevTaskParams{Payload: t.Payload, TargetCount: t.TargetCount, AbortMinExecuted: t.AbortMinExecuted}
	if len(p.Payload) == 0 {
		p.Payload = json.RawMessage(`{}`)
	}
	if t.AbortFailedPercent != nil {
		p.AbortFailedPercent = pgtype.Float8{Float64: *t.AbortFailedPercent, Valid: true}
	}
	row, err := s.Q.InsertDevTask(ctx, p)
	if err != nil {
		return DevTask{}, fmt.Errorf("insert task: %w", mapErr(err))
	}
	return row, nil
}

// GetDevTask reads a task.
func (s *Store) GetDevTask(ctx context.Context, id int64) (DevTask, error) {
	t, err := s.Q.GetDevTask(ctx, id)
	if err != nil {
		return DevTask{}, fmt.Errorf("get task %d: %w", id, mapErr(err))
	}
	return t, nil
}

// ListDevTasks pages through tasks by id.
func (s *Store) ListDevTasks(ctx context.Context, afterID int64, limit int) ([]DevTask, error) {
	rows, err := s.Q.ListDevTasks(ctx, dbgen.ListDevTasksParams{AfterID: afterID, MaxRows: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", mapErr(err))
	}
	return rows, nil
}

// TaskDevices pages through a task's executions by id.
func (s *Store) TaskDevices(ctx context.Context, taskID, afterID int64, limit int) ([]TaskDeviceView, error) {
	rows, err := s.Q.ListTaskDevicesOfTask(ctx, dbgen.ListTaskDevicesOfTaskParams{TaskID: taskID, AfterID: afterID, MaxRows: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("executions of task %d: %w", taskID, mapErr(err))
	}
	out := make([]TaskDeviceView, len(rows))
	for i, r := range rows {
		out[i] = TaskDeviceView(r)
	}
	return out, nil
}

// DevTaskCounts are a task's executions by outcome.
type DevTaskCounts = dbgen.DevTaskExecutionCountsRow

// DevTaskCounts counts a task's executions.
func (s *Store) DevTaskCounts(ctx context.Context, taskID int64) (DevTaskCounts, error) {
	c, err := s.Q.DevTaskExecutionCounts(ctx, taskID)
	if err != nil {
		return DevTaskCounts{}, fmt.Errorf("count executions of task %d: %w", taskID, mapErr(err))
	}
	return c, nil
}

// CancelDevTask cancels a pending or running task and every execution of it still holding a
// slot (sent or not); results arriving for them later are answered 409. A finished task is
// ErrConflict.
func (s *Store) CancelDevTask(ctx context.Context, id int64) (DevTask, error) {
	var t DevTask
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		cur, err := q.GetDevTask(ctx, id)
		if err != nil {
			return fmt.Errorf("task %d: %w", id, mapErr(err))
		}
		if cur.Status != domain.DevTaskPending && cur.Status != domain.DevTaskRunning {
			return fmt.Errorf("%w: task %d is already %s", ErrConflict, id, cur.Status)
		}
		// task_devices first, then the task row: the lock order of every other path.
		if _, err := q.CancelTaskDevicesOfTask(ctx, dbgen.CancelTaskDevicesOfTaskParams{
			Reason: "task cancelled", TaskID: id, Statuses: texts(domain.TDCreated, domain.TDSent, domain.TDAcked, domain.TDRetryScheduled),
		}); err != nil {
			return fmt.Errorf("cancel executions of task %d: %w", id, mapErr(err))
		}
		t, err = q.FinishDevTask(ctx, dbgen.FinishDevTaskParams{ID: id, Status: domain.DevTaskCancelled, Error: "cancelled by operator"})
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

// GetTaskDevice reads one execution with its device serial and PC name.
func (s *Store) GetTaskDevice(ctx context.Context, id int64) (TaskDeviceView, error) {
	td, err := s.Q.GetTaskDeviceView(ctx, id)
	if err != nil {
		return TaskDeviceView{}, fmt.Errorf("get task_device %d: %w", id, mapErr(err))
	}
	return td, nil
}

// TaskDeviceEvents lists an execution's attempt history (ErrNotFound for an unknown id).
func (s *Store) TaskDeviceEvents(ctx context.Context, id int64) ([]TaskDeviceEvent, error) {
	if _, err := s.GetTaskDevice(ctx, id); err != nil {
		return nil, err
	}
	evs, err := s.Q.ListTaskDeviceEvents(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("events of task_device %d: %w", id, mapErr(err))
	}
	return evs, nil
}

// Claim hands a PC's agent up to max of its waiting commands and marks them SENT (their
// deadline starts now). Concurrent claims of one PC never return the same command.
func (s *Store) Claim(ctx context.Context, pcName string, max int) (PC, []ClaimedCommand, error) {
	pc, err := s.GetPC(ctx, pcName)
	if err != nil {
		return PC{}, nil, err
	}
	rows, err := s.Q.ClaimTaskDevices(ctx, dbgen.ClaimTaskDevicesParams{PcID: pc.ID, MaxRows: int32(max)})
	if err != nil {
		return pc, nil, fmt.Errorf("claim for pc %q: %w", pcName, mapErr(err))
	}
	return pc, rows, nil
}

// Ack records the agent's acknowledgement of a sent command. Acking twice is a no-op; an
// attempt that is not in flight is ErrNotInFlight.
func (s *Store) Ack(ctx context.Context, id int64, attempt *int32) (TaskDevice, error) {
	var td TaskDevice
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		var err error
		td, err = q.LockTaskDevice(ctx, id)
		if err != nil {
			return fmt.Errorf("task_device %d: %w", id, mapErr(err))
		}
		if attempt != nil && *attempt != td.Attempt {
			return fmt.Errorf("%w: task_device %d is at attempt %d, not %d", ErrNotInFlight, id, td.Attempt, *attempt)
		}
		switch td.Status {
		case domain.TDAcked:
			return nil
		case domain.TDSent:
		default:
			return fmt.Errorf("%w: task_device %d is %s", ErrNotInFlight, id, td.Status)
		}
		if err := q.AckTaskDevice(ctx, id); err != nil {
			return fmt.Errorf("ack task_device %d: %w", id, mapErr(err))
		}
		td.Status = domain.TDAcked
		return event(ctx, q, id, td.Attempt, domain.TDAcked, "")
	})
	return td, err
}

// Result is an agent's report of one attempt.
type Result struct {
	Succeeded bool
	Error     string
	// NotRetryable sends a failure straight to FAILED_FINAL.
	NotRetryable bool
	// Attempt, when given, must be the attempt in flight.
	Attempt *int32
}

// Outcome is what recording a result or a timeout did.
type Outcome struct {
	TaskDeviceID int64
	TaskID       int64
	PCID         int64
	Status       domain.TaskDeviceStatus // the execution's status afterwards
	Attempt      int32                   // its attempt afterwards (the next one when RETRY_SCHEDULED)
	Refilled     []int64
	// CheckTask is set when the task may have no work left (or was aborted): the dispatcher
	// should re-check it.
	CheckTask bool
	Aborted   bool
	// Stale is set when the attempt was no longer in flight and nothing changed.
	Stale bool

	pcMayBeIdle bool
}

// pcGates queue, inside this process, the transactions that free and refill a slot of the
// same PC, so that results arriving together for one PC wait here instead of each holding
// a pooled connection while blocked on the PC's row lock (which still decides, across
// processes). Keyed by pcGateKey.
var pcGates sync.Map

type pcGateKey struct {
	store *Store
	pc    int64
}

// gatePC takes this process's gate of the PC of execution id; it returns the release.
func (s *Store) gatePC(ctx context.Context, id int64) func() {
	pc, err := s.Q.TaskDevicePCID(ctx, id)
	if err != nil {
		return func() {} // an unknown id: the transaction reports it
	}
	m, _ := pcGates.LoadOrStore(pcGateKey{s, pc}, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// ReportResult records an agent's result in one transaction: the execution's new state,
// its events, the device turning error on a final failure, the PC's freed slot refilled at
// once, and the task's abort rule. A result for an attempt that is no longer in flight (it
// timed out, was cancelled) is recorded as a LATE_RESULT event and returns ErrNotInFlight.
func (s *Store) ReportResult(ctx context.Context, id int64, r Result) (Outcome, error) {
	var out Outcome
	var late error
	release := s.gatePC(ctx, id)
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		td, err := q.LockTaskDevice(ctx, id)
		if err != nil {
			return fmt.Errorf("task_device %d: %w", id, mapErr(err))
		}
		inFlight := (td.Status == domain.TDSent || td.Status == domain.TDAcked) && (r.Attempt == nil || *r.Attempt == td.Attempt)
		if !inFlight {
			attempt := td.Attempt
			if r.Attempt != nil && *r.Attempt > 0 && *r.Attempt <= td.MaxAttempts {
				attempt = *r.Attempt
			}
			verdict := "succeeded"
			if !r.Succeeded {
				verdict = "failed: " + r.Error
			}
			detail := fmt.Sprintf("result %s for attempt %d arrived while the execution was %s at attempt %d", verdict, attempt, td.Status, td.Attempt)
			late = fmt.Errorf("%w: %s", ErrNotInFlight, detail)
			out = Outcome{TaskDeviceID: id, TaskID: td.TaskID, PCID: td.PcID, Status: td.Status, Attempt: td.Attempt, Stale: true}
			return event(ctx, q, id, attempt, domain.EvLateResult, detail)
		}
		out, err = finishAttempt(ctx, q, td, !r.Succeeded, r.Error, !r.NotRetryable, domain.EvFailed)
		return err
	})
	release()
	if err != nil {
		return Outcome{}, err
	}
	if late != nil {
		return out, late
	}
	return out, s.afterCommit(ctx, &out)
}

// TimeoutAttempt times out attempt of execution id if it is still in flight (a conditional
// update: a result and a timeout racing have exactly one winner). Otherwise it changes
// nothing and returns the current state with Stale set.
func (s *Store) TimeoutAttempt(ctx context.Context, id int64, attempt int32) (Outcome, error) {
	var out Outcome
	release := s.gatePC(ctx, id)
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		td, err := q.LockTaskDevice(ctx, id)
		if err != nil {
			return fmt.Errorf("task_device %d: %w", id, mapErr(err))
		}
		if (td.Status != domain.TDSent && td.Status != domain.TDAcked) || td.Attempt != attempt {
			out = Outcome{TaskDeviceID: id, TaskID: td.TaskID, PCID: td.PcID, Status: td.Status, Attempt: td.Attempt, Stale: true}
			return nil
		}
		msg := "Task device timeout: no result"
		if td.SentAt != nil && td.TimeoutAt != nil {
			msg = fmt.Sprintf("Task device timeout: exceeded %s after SENT", td.TimeoutAt.Sub(*td.SentAt))
		}
		out, err = finishAttempt(ctx, q, td, true, msg, true, domain.EvTimeout)
		return err
	})
	release()
	if err != nil {
		return Outcome{}, err
	}
	return out, s.afterCommit(ctx, &out)
}

// finishAttempt applies the outcome of the in-flight attempt of td (locked by the caller).
func finishAttempt(ctx context.Context, q *dbgen.Queries, td TaskDevice, failed bool, errText string, retryable bool, failEvent string) (Outcome, error) {
	out := Outcome{TaskDeviceID: td.ID, TaskID: td.TaskID, PCID: td.PcID, Attempt: td.Attempt}
	if !failed {
		if err := q.SucceedTaskDevice(ctx, td.ID); err != nil {
			return out, fmt.Errorf("succeed task_device %d: %w", td.ID, mapErr(err))
		}
		if err := event(ctx, q, td.ID, td.Attempt, domain.TDSucceeded, ""); err != nil {
			return out, err
		}
		out.Status = domain.TDSucceeded
	} else {
		if err := event(ctx, q, td.ID, td.Attempt, failEvent, errText); err != nil {
			return out, err
		}
		if retryable && td.Attempt < td.MaxAttempts {
			if err := q.RetryTaskDevice(ctx, dbgen.RetryTaskDeviceParams{ID: td.ID, Error: errText}); err != nil {
				return out, fmt.Errorf("retry task_device %d: %w", td.ID, mapErr(err))
			}
			out.Status, out.Attempt = domain.TDRetryScheduled, td.Attempt+1
			// The slot stays held: the next attempt runs on the same device.
			return out, event(ctx, q, td.ID, td.Attempt+1, domain.TDRetryScheduled, errText)
		}
		if err := q.FailFinalTaskDevice(ctx, dbgen.FailFinalTaskDeviceParams{ID: td.ID, Error: errText}); err != nil {
			return out, fmt.Errorf("fail task_device %d: %w", td.ID, mapErr(err))
		}
		detail := errText
		if !retryable {
			detail = "not retryable: " + errText
		}
		if err := event(ctx, q, td.ID, td.Attempt, domain.TDFailedFinal, detail); err != nil {
			return out, err
		}
		// D3: the device leaves the eligible set until an operator resets it.
		if err := q.SetDeviceErrorByID(ctx, dbgen.SetDeviceErrorByIDParams{
			ID: td.DeviceID, Error: fmt.Sprintf("task_device %d failed after attempt %d: %s", td.ID, td.Attempt, errText),
		}); err != nil {
			return out, fmt.Errorf("set device %d error: %w", td.DeviceID, mapErr(err))
		}
		out.Status = domain.TDFailedFinal
	}
	task, err := q.GetDevTask(ctx, td.TaskID)
	if err != nil {
		return out, fmt.Errorf("task %d: %w", td.TaskID, mapErr(err))
	}
	// The slot is free: refill it now, in this transaction (D2). A final failure puts only
	// this execution's device in error, and it holds no other slot (one active execution
	// per device), so nothing needs cancelling.
	ids, err := refillPC(ctx, q, td.PcID, false)
	if err != nil {
		return out, err
	}
	out.Refilled = ids
	if task.Status != domain.DevTaskRunning {
		return out, nil
	}
	if task.AbortMinExecuted != nil {
		aborted, err := applyAbortRule(ctx, q, task.ID)
		if err != nil {
			return out, err
		}
		if aborted {
			out.Aborted, out.CheckTask = true, true
			return out, nil
		}
	}
	// This PC found no more work for the task: once the transaction committed, the caller
	// checks whether this PC's share is over (afterCommit), outside the PC lock.
	out.pcMayBeIdle = len(ids) == 0
	return out, nil
}

// afterCommit completes an Outcome once its transaction committed: when the PC found no
// more work for the task and none of the PC's executions of it is left, the dispatcher
// should check the task (CheckTask). Counting after the commit, the last of several
// executions finishing at once always sees every other one final, so the PC's last
// finisher asks — no task-wide or PC lock needed.
func (s *Store) afterCommit(ctx context.Context, out *Outcome) error {
	if !out.pcMayBeIdle || out.CheckTask {
		return nil
	}
	n, err := s.Q.CountActiveOfTaskOnPC(ctx, dbgen.CountActiveOfTaskOnPCParams{PcID: out.PCID, TaskID: out.TaskID})
	if err != nil {
		return fmt.Errorf("count executions of task %d on pc %d: %w", out.TaskID, out.PCID, mapErr(err))
	}
	out.CheckTask = n == 0
	return nil
}

// applyAbortRule aborts the task (locked here, so one transaction decides) once at least
// min_executed executions are final and more than failed_percent of them failed: its
// unsent executions are cancelled, those in flight may finish.
func applyAbortRule(ctx context.Context, q *dbgen.Queries, taskID int64) (bool, error) {
	task, err := q.LockDevTask(ctx, taskID)
	if err != nil {
		return false, fmt.Errorf("lock task %d: %w", taskID, mapErr(err))
	}
	if task.Status != domain.DevTaskRunning || task.AbortMinExecuted == nil || !task.AbortFailedPercent.Valid {
		return false, nil
	}
	counts, err := q.DevTaskExecutionCounts(ctx, task.ID)
	if err != nil {
		return false, fmt.Errorf("count executions of task %d: %w", task.ID, mapErr(err))
	}
	executed := counts.Succeeded + counts.Failed
	if executed < int64(*task.AbortMinExecuted) || float64(counts.Failed)*100 <= task.AbortFailedPercent.Float64*float64(executed) {
		return false, nil
	}
	reason := fmt.Sprintf("aborted: %d of %d executions failed (abort rule: more than %g%% of at least %d)",
		counts.Failed, executed, task.AbortFailedPercent.Float64, *task.AbortMinExecuted)
	if _, err := q.CancelTaskDevicesOfTask(ctx, dbgen.CancelTaskDevicesOfTaskParams{
		Reason: "task " + reason, TaskID: task.ID, Statuses: texts(domain.TDCreated, domain.TDRetryScheduled),
	}); err != nil {
		return false, fmt.Errorf("cancel unsent executions of task %d: %w", task.ID, mapErr(err))
	}
	if _, err := q.FinishDevTask(ctx, dbgen.FinishDevTaskParams{ID: task.ID, Status: domain.DevTaskFailed, Error: reason}); err != nil {
		return false, fmt.Errorf("abort task %d: %w", task.ID, mapErr(err))
	}
	return true, nil
}

// typ is a TaskDeviceStatus the execution reached, or one of the Ev* event types.
func event[T ~string](ctx context.Context, q *dbgen.Queries, id int64, attempt int32, typ T, detail string) error {
	if err := q.InsertTaskDeviceEvent(ctx, dbgen.InsertTaskDeviceEventParams{TaskDeviceID: id, Attempt: attempt, Type: string(typ), Detail: detail}); err != nil {
		return fmt.Errorf("record %s event of task_device %d: %w", typ, id, mapErr(err))
	}
	return nil
}

// refillPC is the one place slots are filled (D2): under the PC's row lock it cancels
// executions on devices that left the eligible set (when a device changed), then inserts
// one task_device per free slot (target - running) of the running task. With a
// target_count the task row is locked too, so PCs refilling at once never exceed it.
func refillPC(ctx context.Context, q *dbgen.Queries, pcID int64, cancelIneligible bool) ([]int64, error) {
	lock, err := q.LockPC(ctx, pcID)
	if err != nil {
		return nil, fmt.Errorf("lock pc %d: %w", pcID, mapErr(err))
	}
	if cancelIneligible {
		if _, err := q.CancelIneligibleOfPC(ctx, pcID); err != nil {
			return nil, fmt.Errorf("cancel ineligible executions of pc %d: %w", pcID, mapErr(err))
		}
	}
	if lock.RunningTaskID == nil {
		return nil, nil
	}
	if lock.RunningTargetCount != nil {
		if _, err := q.LockDevTask(ctx, *lock.RunningTaskID); err != nil {
			return nil, fmt.Errorf("lock task %d: %w", *lock.RunningTaskID, mapErr(err))
		}
	}
	ids, err := q.RefillPC(ctx, pcID)
	if err != nil {
		return nil, fmt.Errorf("refill pc %d: %w", pcID, mapErr(err))
	}
	return ids, nil
}

// RefillPC fills a PC's free slots in its own transaction and returns the new executions.
func (s *Store) RefillPC(ctx context.Context, pcID int64) ([]int64, error) {
	var ids []int64
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		var err error
		ids, err = refillPC(ctx, q, pcID, true)
		return err
	})
	return ids, err
}

// RefillAll fills every PC's free slots in one transaction and one statement (a task just
// became active, or the dispatcher's safety sweep) and returns how many executions it
// created. It takes every PC's lock in id order, so it never over-fills a PC a concurrent
// result is refilling.
func (s *Store) RefillAll(ctx context.Context) (int, error) {
	var n int
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		pcIDs, err := q.LockAllPCs(ctx)
		if err != nil {
			return fmt.Errorf("lock pcs: %w", mapErr(err))
		}
		task, err := q.GetRunningDevTask(ctx)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("running task: %w", mapErr(err))
		}
		if task.TargetCount != nil {
			if _, err := q.LockDevTask(ctx, task.ID); err != nil {
				return fmt.Errorf("lock task %d: %w", task.ID, mapErr(err))
			}
		}
		ids, err := q.RefillAllPCs(ctx, pcIDs)
		if err != nil {
			return fmt.Errorf("refill every pc: %w", mapErr(err))
		}
		n = len(ids)
		return nil
	})
	return n, err
}

// Advanced is what one dispatcher step did.
type Advanced struct {
	ActiveTaskID int64   // the running task afterwards (0: none)
	Finished     []int64 // tasks it finished (all executions final, nothing left to run)
	Activated    []int64 // tasks it made active
	// Refilled counts the executions created with the activation, in its transaction.
	Refilled int
}

// Advance keeps the single active task (D1): it finishes the running task once all its
// executions are final and no eligible device is left for it (success when none failed),
// then activates the oldest pending task, copying the worker's attempt limit and device
// timeout onto it, and fills every PC's slots with it in the same transaction. One
// advisory lock serialises concurrent callers; the PC locks (taken before any task row,
// the order of every refill) keep refills out while it decides.
func (s *Store) Advance(ctx context.Context, maxAttempts int, deviceTimeout time.Duration) (Advanced, error) {
	var res Advanced
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
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
			t, err := q.LockRunningDevTask(ctx)
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
				if _, err := q.FinishDevTask(ctx, dbgen.FinishDevTaskParams{ID: t.ID, Status: status, Error: msg}); err != nil {
					return fmt.Errorf("finish task %d: %w", t.ID, mapErr(err))
				}
				res.Finished = append(res.Finished, t.ID)
			}
			next, err := q.ActivateNextDevTask(ctx, dbgen.ActivateNextDevTaskParams{
				MaxAttempts: int32(maxAttempts), DeviceTimeoutMs: max(deviceTimeout.Milliseconds(), 1),
			})
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("activate next task: %w", mapErr(err))
			}
			res.Activated = append(res.Activated, next.ID)
			// The new task reaches every PC in the same commit that makes it active.
			ids, err := q.RefillAllPCs(ctx, pcIDs)
			if err != nil {
				return fmt.Errorf("refill pcs for task %d: %w", next.ID, mapErr(err))
			}
			res.Refilled += len(ids)
		}
		return nil
	})
	return res, err
}

func taskDone(ctx context.Context, q *dbgen.Queries, t DevTask) (done bool, status domain.DeviceTaskStatus, msg string, err error) {
	p, err := q.DevTaskProgress(ctx, t.ID)
	if err != nil {
		return false, "", "", fmt.Errorf("progress of task %d: %w", t.ID, mapErr(err))
	}
	if p.Active > 0 {
		return false, "", "", nil
	}
	if p.HasUnrun && (t.TargetCount == nil || p.Created < int64(*t.TargetCount)) {
		return false, "", "", nil
	}
	if p.Failed > 0 {
		return true, domain.DevTaskFailed, fmt.Sprintf("%d of %d executions failed", p.Failed, p.Succeeded+p.Failed), nil
	}
	return true, domain.DevTaskSuccess, "", nil
}

// SweepOverdue times out in-flight executions whose deadline passed more than grace ago:
// the safety net for a slot workflow that was never started (an API crash between the
// claim and its signal). The slot workflows normally time them out on the dot.
func (s *Store) SweepOverdue(ctx context.Context, grace time.Duration) ([]Outcome, error) {
	rows, err := s.Q.OverdueInFlight(ctx, time.Now().Add(-grace))
	if err != nil {
		return nil, fmt.Errorf("overdue executions: %w", mapErr(err))
	}
	var outs []Outcome
	for _, r := range rows {
		o, err := s.TimeoutAttempt(ctx, r.ID, r.Attempt)
		if err != nil {
			return outs, err
		}
		if !o.Stale {
			outs = append(outs, o)
		}
	}
	return outs, nil
}

// DeviceRow is a device with its PC's name.
type DeviceRow = dbgen.ListDevicesPageRow

// ListDevices pages through every device by id.
func (s *Store) ListDevices(ctx context.Context, afterID int64, limit int) ([]DeviceRow, error) {
	rows, err := s.Q.ListDevicesPage(ctx, dbgen.ListDevicesPageParams{AfterID: afterID, MaxRows: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list devices: %w", mapErr(err))
	}
	return rows, nil
}
