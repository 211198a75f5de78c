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

// DeviceExecutions pages through a task's executions by id.
func (s *Store) DeviceExecutions(ctx context.Context, taskID, afterID int64, limit int) ([]DeviceExecutionView, error) {
	rows, err := s.Q.ListDeviceExecutionsOfTask(ctx, dbgen.ListDeviceExecutionsOfTaskParams{TaskID: taskID, AfterID: afterID, MaxRows: int4(limit)})
	if err != nil {
		return nil, fmt.Errorf("executions of task %d: %w", taskID, mapErr(err))
	}
	out := make([]DeviceExecutionView, len(rows))
	for i, r := range rows {
		out[i] = DeviceExecutionView(r)
	}
	return out, nil
}

// GetDeviceExecution reads one execution with its device serial and PC name.
func (s *Store) GetDeviceExecution(ctx context.Context, id int64) (DeviceExecutionView, error) {
	td, err := s.Q.GetDeviceExecutionView(ctx, id)
	if err != nil {
		return DeviceExecutionView{}, fmt.Errorf("get execution %d: %w", id, mapErr(err))
	}
	return td, nil
}

// DeviceExecutionEvents lists an execution's attempt history (ErrNotFound for an unknown id).
func (s *Store) DeviceExecutionEvents(ctx context.Context, id int64) ([]DeviceExecutionEvent, error) {
	if _, err := s.GetDeviceExecution(ctx, id); err != nil {
		return nil, err
	}
	evs, err := s.Q.ListDeviceExecutionEvents(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("events of execution %d: %w", id, mapErr(err))
	}
	return evs, nil
}

// Claim hands a PC's agent up to max of its waiting commands and marks them SENT (their
// deadline starts now). Concurrent claims of one PC never return the same command. An
// unknown PC is ErrNotFound; a PC with nothing to send claims nothing.
func (s *Store) Claim(ctx context.Context, pcName string, max int) ([]ClaimedCommand, error) {
	cmds, _, err := s.claim(ctx, pcName, max)
	return cmds, err
}

// ClaimWithin is Claim as a long-poll: finding nothing to send, it waits up to wait for an
// execution of the PC to become claimable, as l hears it (migrations/00021: a trigger
// notifies), and claims again; it answers empty when wait ends first. An idle agent's poll
// thus costs one statement per wait, not one per poll interval. With l nil it claims once.
func (s *Store) ClaimWithin(ctx context.Context, l *Listener, pcName string, max int, wait time.Duration) ([]ClaimedCommand, error) {
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		var mark uint64
		if l != nil {
			mark = l.ClaimMark()
		}
		cmds, pcID, err := s.claim(ctx, pcName, max)
		if err != nil || len(cmds) > 0 || l == nil || wait <= 0 {
			return cmds, err
		}
		if !l.WaitClaimable(wctx, pcID, mark) {
			return nil, nil
		}
	}
}

func (s *Store) claim(ctx context.Context, pcName string, max int) ([]ClaimedCommand, int64, error) {
	for try := 0; ; try++ {
		rows, err := s.Q.ClaimDeviceExecutions(ctx, dbgen.ClaimDeviceExecutionsParams{PcName: pcName, MaxRows: int4(max)})
		if err != nil {
			return nil, 0, fmt.Errorf("claim for pc %q: %w", pcName, mapErr(err))
		}
		if len(rows) == 0 {
			return nil, 0, fmt.Errorf("get pc %q: %w", pcName, ErrNotFound)
		}
		pcID := rows[0].PcID
		switch rows[0].ClosedGate {
		case gateRate:
			return s.claimUnderRate(ctx, pcName, pcID, max)
		case gateWindowStale:
			// The running task's window span has ended (or was never computed): compute
			// the span holding now, or the next, and claim again.
			if try > 0 {
				return nil, pcID, nil
			}
			if err := s.refreshDeviceTaskWindow(ctx); err != nil {
				return nil, pcID, err
			}
			continue
		}
		if rows[0].ID == 0 {
			return nil, pcID, nil // a known PC with nothing to send (or held back: frozen, outside the windows)
		}
		return rows, pcID, nil
	}
}

// The gates that hold a claim back and send the caller elsewhere (ClaimDeviceExecutions'
// closed_gate; docs/progressive.md).
const (
	gateRate        = "rate"
	gateWindowStale = "window_stale"
)

// claimUnderRate claims for a running task with a rate: its row locked, so concurrent
// claims count their sends one after the other, then at most what its rate leaves this
// minute (device_rate_room, migrations/00091_device_progressive.sql). The claim statement
// runs after the lock in the same transaction, so its snapshot sees every send that
// committed before.
func (s *Store) claimUnderRate(ctx context.Context, pcName string, pcID int64, max int) ([]ClaimedCommand, int64, error) {
	var out []ClaimedCommand
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		task, err := q.LockRunningDeviceTask(ctx)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // the task ended meanwhile: nothing to send
		}
		if err != nil {
			return err
		}
		room, err := q.DeviceRateRoom(ctx, task.ID)
		if err != nil {
			return err
		}
		if room <= 0 {
			return nil
		}
		rows, err := q.ClaimDeviceExecutions(ctx, dbgen.ClaimDeviceExecutionsParams{PcName: pcName, MaxRows: int4(min(int64(max), room)), RateChecked: true})
		if err != nil {
			return err
		}
		if len(rows) > 0 && rows[0].ID != 0 {
			out = rows
		}
		return nil
	})
	if err != nil {
		return nil, pcID, fmt.Errorf("claim for pc %q under its task's rate: %w", pcName, mapErr(err))
	}
	return out, pcID, nil
}

// refreshDeviceTaskWindow sets the running task's window span to the one of its windows
// holding the database's clock, or the next to open (domain.WindowAt).
func (s *Store) refreshDeviceTaskWindow(ctx context.Context) error {
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		task, err := q.LockRunningDeviceTask(ctx)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil || len(task.Windows) == 0 {
			return err
		}
		var ws []domain.Window
		if err := json.Unmarshal(task.Windows, &ws); err != nil {
			return fmt.Errorf("task %d: decode windows: %w", task.ID, err)
		}
		now, err := q.DatabaseNow(ctx)
		if err != nil {
			return err
		}
		if task.WindowEnd != nil && task.WindowEnd.After(now) {
			return nil // another claim refreshed it
		}
		span, err := windowSpanAt(ws, now)
		if err != nil {
			return fmt.Errorf("task %d: %w", task.ID, err)
		}
		return q.SetDeviceTaskWindow(ctx, dbgen.SetDeviceTaskWindowParams{ID: task.ID, WindowStart: &span.Start, WindowEnd: &span.End})
	})
	if err != nil {
		return fmt.Errorf("refresh the running task's window: %w", mapErr(err))
	}
	return nil
}

// Ack records the agent's acknowledgement of a sent command. Acking twice is a no-op; an
// attempt that is not in flight is ErrNotInFlight.
func (s *Store) Ack(ctx context.Context, id int64, attempt *int32) (DeviceExecution, error) {
	var td DeviceExecution
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		var err error
		td, err = q.LockDeviceExecution(ctx, id)
		if err != nil {
			return fmt.Errorf("execution %d: %w", id, mapErr(err))
		}
		if attempt != nil && *attempt != td.Attempt {
			return fmt.Errorf("%w: execution %d is at attempt %d, not %d", ErrNotInFlight, id, td.Attempt, *attempt)
		}
		switch td.Status {
		case domain.ExecutionAcked:
			return nil
		case domain.ExecutionSent:
		default:
			return fmt.Errorf("%w: execution %d is %s", ErrNotInFlight, id, td.Status)
		}
		if err := q.AckDeviceExecution(ctx, id); err != nil {
			return fmt.Errorf("ack execution %d: %w", id, mapErr(err))
		}
		td.Status = domain.ExecutionAcked
		return event(ctx, q, id, td.Attempt, domain.EvAcked, "")
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
	ExecutionID int64
	TaskID      int64
	PCID        int64
	Status      domain.ExecutionStatus // the execution's status afterwards
	Attempt     int32                  // its attempt afterwards (the next one when RETRY_SCHEDULED)
	Refilled    []int64
	// CheckTask is set when the task may have no work left (or was aborted): the dispatcher
	// should re-check it.
	CheckTask bool
	Aborted   bool
	// Stale is set when the attempt was no longer in flight and nothing changed.
	Stale bool
	// View is the execution as the result left it, when the statement that recorded the
	// result read it back (the one-statement success); nil otherwise.
	View *DeviceExecutionView

	pcMayBeIdle bool
}

// ReportResult records an agent's result in one transaction (the general path; the common
// success is group-committed by RecordSuccesses instead): the execution's new state,
// its events, the device turning error on a final failure, the PC's freed slot refilled at
// once, and the task's abort rule. A result for an attempt that is no longer in flight (it
// timed out, was canceled) is recorded as a LATE_RESULT event and returns ErrNotInFlight.
func (s *Store) ReportResult(ctx context.Context, id int64, r Result) (Outcome, error) {
	var out Outcome
	var late error
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		td, err := q.LockDeviceExecution(ctx, id)
		if err != nil {
			return fmt.Errorf("execution %d: %w", id, mapErr(err))
		}
		inFlight := (td.Status == domain.ExecutionSent || td.Status == domain.ExecutionAcked) && (r.Attempt == nil || *r.Attempt == td.Attempt)
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
			out = Outcome{ExecutionID: id, TaskID: td.TaskID, PCID: td.PcID, Status: td.Status, Attempt: td.Attempt, Stale: true}
			return event(ctx, q, id, attempt, domain.EvLateResult, detail)
		}
		out, err = finishAttempt(ctx, q, td, !r.Succeeded, r.Error, !r.NotRetryable, domain.EvFailed)
		return err
	})
	if err != nil {
		return Outcome{}, err
	}
	if late != nil {
		return out, late
	}
	return out, s.afterCommit(ctx, &out)
}

// finishAttempt applies the outcome of the in-flight attempt of td (locked by the caller).
func finishAttempt(ctx context.Context, q *dbgen.Queries, td DeviceExecution, failed bool, errText string, retryable bool, failEvent domain.ExecutionEventType) (Outcome, error) {
	out := Outcome{ExecutionID: td.ID, TaskID: td.TaskID, PCID: td.PcID, Attempt: td.Attempt}
	if !failed {
		// With its event, as the group commit records it (device_attempts_succeed).
		if err := q.SucceedDeviceExecution(ctx, td.ID); err != nil {
			return out, fmt.Errorf("succeed execution %d: %w", td.ID, mapErr(err))
		}
		out.Status = domain.ExecutionSucceeded
	} else {
		if err := event(ctx, q, td.ID, td.Attempt, failEvent, errText); err != nil {
			return out, err
		}
		if retryable && td.Attempt < td.MaxAttempts {
			if err := q.RetryDeviceExecution(ctx, dbgen.RetryDeviceExecutionParams{ID: td.ID, Error: errText}); err != nil {
				return out, fmt.Errorf("retry execution %d: %w", td.ID, mapErr(err))
			}
			out.Status, out.Attempt = domain.ExecutionRetryScheduled, td.Attempt+1
			// The slot stays held: the next attempt runs on the same device.
			return out, event(ctx, q, td.ID, td.Attempt+1, domain.EvRetryScheduled, errText)
		}
		// D3: the device leaves the eligible set until an operator resets it. Its row is
		// taken before the execution gives up the device: a refill holding the device's
		// row (SKIP LOCKED) and inserting on it then finds the execution still holding the
		// device and gives up, instead of waiting for this transaction while it waits for
		// that row (a deadlock the concurrency test hit).
		if err := q.SetDeviceErrorByID(ctx, dbgen.SetDeviceErrorByIDParams{
			ID: td.DeviceID, Error: fmt.Sprintf("execution %d failed after attempt %d: %s", td.ID, td.Attempt, errText),
		}); err != nil {
			return out, fmt.Errorf("set device %d error: %w", td.DeviceID, mapErr(err))
		}
		if err := q.FailFinalDeviceExecution(ctx, dbgen.FailFinalDeviceExecutionParams{ID: td.ID, Error: errText}); err != nil {
			return out, fmt.Errorf("fail execution %d: %w", td.ID, mapErr(err))
		}
		detail := errText
		if !retryable {
			detail = "not retryable: " + errText
		}
		if err := event(ctx, q, td.ID, td.Attempt, domain.EvFailedFinal, detail); err != nil {
			return out, err
		}
		out.Status = domain.ExecutionFailedFinal
	}
	task, err := q.GetDeviceTask(ctx, td.TaskID)
	if err != nil {
		return out, fmt.Errorf("task %d: %w", td.TaskID, mapErr(err))
	}
	// The slot is free: refill that same slot now, in this transaction (D2). A final
	// failure puts only this execution's device in error, and it holds no other slot (one
	// active execution per device), so nothing needs canceling.
	ids, err := refillSlot(ctx, q, td, task)
	if err != nil {
		return out, err
	}
	out.Refilled = ids
	if task.Status != domain.DeviceTaskRunning {
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

func event(ctx context.Context, q *dbgen.Queries, id int64, attempt int32, typ domain.ExecutionEventType, detail string) error {
	if err := q.InsertDeviceExecutionEvent(ctx, dbgen.InsertDeviceExecutionEventParams{ExecutionID: id, Attempt: attempt, Type: typ, Detail: detail}); err != nil {
		return fmt.Errorf("record %s event of execution %d: %w", typ, id, mapErr(err))
	}
	return nil
}
