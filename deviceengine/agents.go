package deviceengine

import (
	"context"
	"fmt"
	"time"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store"
)

// The agent protocol's steps (docs/devices.md "The agent protocol"): claim, ack, result.
// Each is one store statement or transaction on the request's path; what follows it (the
// PC's timer told of new deadlines, the active task advanced) runs after the answer.

// Claim hands the PC's agent up to max of its waiting executions, SENT from now on (their
// deadlines start). With wait, finding nothing it waits that long at most for one to become
// claimable (store.ClaimWithin). The PC's timer is told of the new deadlines after the
// answer (tellPCTimer), so an agent never waits on Temporal. An unknown PC is
// store.ErrNotFound.
func (e *Engine) Claim(ctx context.Context, pc string, max int, wait time.Duration) ([]store.ClaimedCommand, error) {
	start := time.Now()
	cmds, err := e.store.ClaimWithin(ctx, e.listener, pc, max, wait)
	if err != nil {
		return nil, err
	}
	e.traceClaimed(ctx, pc, viaClaim, cmds, start)
	e.tellPCTimer(pc, cmds)
	return cmds, nil
}

// Ack records the agent's acknowledgement of a sent attempt (store.Ack); an attempt not in
// flight is store.ErrNotInFlight.
func (e *Engine) Ack(ctx context.Context, id int64, attempt *int32) error {
	_, err := e.store.Ack(ctx, id, attempt)
	return err
}

// ReportSuccess reports an agent's success to the group commit (store.ResultBatcher): one
// statement for the results arriving together checks the agent's PC and the
// Idempotency-Key, records the result, refills the freed slot and hands the agent its next
// execution when it asked. The answer's verdict says what the statement did; a result it
// left undecided (domain.SuccessUndecided) goes to RecordResult.
func (e *Engine) ReportSuccess(ctx context.Context, r store.SuccessReport) (store.SuccessAnswer, error) {
	start := time.Now()
	ans, err := e.results.Report(ctx, r)
	if err != nil || ans.Verdict != domain.SuccessRecorded {
		return ans, err
	}
	e.traceResult(ctx, r.ID, r.Attempt, true, &ans.Outcome, start, nil)
	e.afterResult(r.ID, ans.Outcome)
	if ans.Next != nil {
		next := []store.ClaimedCommand{*ans.Next}
		e.traceClaimed(ctx, ans.PCName, viaClaimNext, next, start)
		e.tellPCTimer(ans.PCName, next)
	}
	return ans, nil
}

// RecordResult is the general path: one transaction decides any result (store.ReportResult).
// A result for an attempt no longer in flight is recorded as a LATE_RESULT event and is
// store.ErrNotInFlight.
func (e *Engine) RecordResult(ctx context.Context, id int64, r store.Result) (store.Outcome, error) {
	start := time.Now()
	out, err := e.store.ReportResult(ctx, id, r)
	e.traceResult(ctx, id, r.Attempt, r.Succeeded, &out, start, err)
	if err != nil {
		return out, err
	}
	e.afterResult(id, out)
	return out, nil
}

// afterResult hands over what a committed result leaves to do. The PC's timer is not
// told: when it wakes it finds the attempt resolved in SQL (the race has one winner there)
// and sleeps until whatever is in flight on the PC by then.
func (e *Engine) afterResult(id int64, out store.Outcome) {
	if out.CheckTask {
		e.advanceSoon(fmt.Sprintf("execution %d of task %d %s", id, out.TaskID, out.Status))
	}
}
