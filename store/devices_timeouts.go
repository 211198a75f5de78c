package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store/dbgen"
)

// Device timeouts (D3; docs/devices.md): what happens at an attempt's deadline, the one
// place it is applied. The deadline itself is stamped when an attempt is handed out
// (attempt_handed_out, migrations/00155_device_deadline.sql); the PC's timer
// (workflows/pc_timer.go) wakes at it and calls CheckPCTimer, and the dispatcher's sweep
// (SweepOverdue) catches what no timer was told of. Every path times out through
// TimeoutAttempt, whose conditional update decides the race with the agent's result. The
// statements are in queries/devices_timeouts.sql; the legacy timers' check is in
// devices_timeouts_legacy.go.

// TimeoutAttempt times out attempt of execution id if it is still in flight (a conditional
// update: a result and a timeout racing have exactly one winner). Otherwise it changes
// nothing and returns the current state with Stale set.
func (s *Store) TimeoutAttempt(ctx context.Context, id int64, attempt int32) (Outcome, error) {
	var out Outcome
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		td, err := q.LockDeviceExecution(ctx, id)
		if err != nil {
			return fmt.Errorf("execution %d: %w", id, mapErr(err))
		}
		if (td.Status != domain.ExecutionSent && td.Status != domain.ExecutionAcked) || td.Attempt != attempt {
			out = Outcome{ExecutionID: id, TaskID: td.TaskID, PCID: td.PcID, Status: td.Status, Attempt: td.Attempt, Stale: true}
			return nil
		}
		msg := "Task device timeout: no result"
		if td.SentAt != nil && td.TimeoutAt != nil {
			msg = fmt.Sprintf("Task device timeout: exceeded %s after SENT", td.TimeoutAt.Sub(*td.SentAt))
		}
		out, err = finishAttempt(ctx, q, td, true, msg, true, domain.EvTimeout)
		return err
	})
	if err != nil {
		return Outcome{}, err
	}
	return out, s.afterCommit(ctx, &out)
}

// PCTimerCheck is what a PC timer's alarm found and did.
type PCTimerCheck struct {
	// Deadline is the earliest deadline in flight on the PC afterwards, if any.
	Deadline *time.Time
	// TimedOut counts the attempts this check timed out; CheckTask is set when one of them
	// may have ended the task's work (see Outcome).
	TimedOut  int
	CheckTask bool
}

// CheckPCTimer is a PC timer's alarm (workflows.PCTimerWorkflow): it times out every
// attempt in flight on pcName whose deadline is not after asOf (TimeoutAttempt: a result
// racing it has exactly one winner), and reports the earliest deadline in flight there
// afterwards, which the timer sleeps until. ErrNotFound: the PC is gone.
//
// asOf is the timer's clock when it fired, not the database's: the timer runs on that
// clock, so an alarm at a deadline always finds that deadline passed, and a clock skew
// between Temporal and PostgreSQL moves a timeout by the skew instead of making the timer
// wake again and again until the database's clock catches up.
func (s *Store) CheckPCTimer(ctx context.Context, pcName string, asOf time.Time) (PCTimerCheck, error) {
	var res PCTimerCheck
	overdue, err := s.Q.OverdueOnPC(ctx, dbgen.OverdueOnPCParams{PcName: pcName, AsOf: asOf})
	if err != nil {
		return res, fmt.Errorf("overdue attempts on pc %q: %w", pcName, mapErr(err))
	}
	for _, o := range overdue {
		out, err := s.TimeoutAttempt(ctx, o.ID, o.Attempt)
		if err != nil {
			return res, err
		}
		if !out.Stale {
			res.TimedOut++
			res.CheckTask = res.CheckTask || out.CheckTask
		}
	}
	next, err := s.Q.EarliestDeadlineOnPC(ctx, pcName)
	if err != nil {
		return res, fmt.Errorf("deadlines on pc %q: %w", pcName, mapErr(err))
	}
	res.Deadline = next.Deadline
	return res, nil
}

// SweepOverdue times out in-flight executions whose deadline passed more than grace ago:
// the safety net for a PC timer that was never told (an API crash between the claim and
// its signal). The PC timers normally time them out on the dot.
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
