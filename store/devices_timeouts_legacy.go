package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store/dbgen"
)

// Legacy: the check of the per-slot timers of earlier versions
// (workflows.SlotDeadlineWorkflow, workflows/slot_timer_legacy.go). It goes with them, with
// its statement (queries/devices_timeouts_legacy.sql).

// SlotCheck is what checking a numbered slot's deadline found and did (CheckSlot, for the
// legacy per-slot timers: workflows/slot_timer_legacy.go).
type SlotCheck struct {
	// Deadline is the deadline of the attempt now in flight in the slot, if one is.
	Deadline *time.Time
	// TimedOut is the outcome of the attempt this check timed out, if it did.
	TimedOut *Outcome
}

// CheckSlot is a legacy per-slot timer's wake-up: it times out the attempt in flight in slot n of
// pcName if its deadline is not after asOf (TimeoutAttempt: a result racing it has exactly
// one winner), and reports the deadline of whatever is in flight there afterwards — a
// retry of the same execution, or the next execution once it is claimed. ErrNotFound: the
// PC is gone. asOf is the timer's clock, as for CheckPCTimer.
func (s *Store) CheckSlot(ctx context.Context, pcName string, n int32, asOf time.Time) (SlotCheck, error) {
	var res SlotCheck
	for range 2 {
		cur, err := s.Q.SlotExecution(ctx, dbgen.SlotExecutionParams{PcName: pcName, Slot: n})
		if errors.Is(err, pgx.ErrNoRows) {
			if _, err := s.GetPC(ctx, pcName); err != nil {
				return res, err
			}
			return res, nil // an empty slot
		}
		if err != nil {
			return res, fmt.Errorf("slot %d of pc %q: %w", n, pcName, mapErr(err))
		}
		inFlight := cur.Status == domain.ExecutionSent || cur.Status == domain.ExecutionAcked
		if !inFlight || cur.TimeoutAt == nil {
			return res, nil // waiting for its claim
		}
		if cur.TimeoutAt.After(asOf) || res.TimedOut != nil {
			res.Deadline = cur.TimeoutAt
			return res, nil
		}
		out, err := s.TimeoutAttempt(ctx, cur.ID, cur.Attempt)
		if err != nil {
			return res, err
		}
		if !out.Stale {
			res.TimedOut = &out
		}
		// Read the slot again: a retry or a refill may be in it now.
	}
	return res, nil
}
