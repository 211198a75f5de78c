package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store/dbgen"
)

// First attempts of http fires (store/queries/http_first_attempts.sql). An http fire the
// planner arms is queued for its first attempt in the arming transaction; once released, a
// sender (activities.HTTPSender, one per worker process) holds it under a lease, records the
// attempt before it is sent and again with its answer, and records the run's outcome — or,
// when the attempt failed in a way the retry policy tries again, starts the run's delivery
// workflow and only then lets the row go. So, while the row exists, no delivery workflow of
// the run runs; once it is gone, the run is final or its delivery workflow exists.

// FirstAttempt is a first attempt a sender holds: what it sends.
type FirstAttempt struct {
	Target HTTPDeliveryTarget
	// VisibleAt is the fire's time (its tick, plus its jitter).
	VisibleAt time.Time
	// TraceContext is the fire's trace ("" with tracing off).
	TraceContext string
}

// ClaimFirstAttempts takes, for sender, up to max first attempts whose fires are released,
// under a lease of lease (renewed by RenewFirstAttemptLeases while it holds them), and reads
// what each sends. Only RUNNING runs are claimed, and what they send is read in the same
// statement (one snapshot); a run stopped after is refused by StartFirstAttempts.
func (s *Store) ClaimFirstAttempts(ctx context.Context, sender string, lease time.Duration, max int) ([]FirstAttempt, error) {
	rows, err := s.Q.ClaimFirstAttempts(ctx, dbgen.ClaimFirstAttemptsParams{Sender: sender, LeaseSeconds: lease.Seconds(), MaxRows: int4(max)})
	if err != nil {
		return nil, fmt.Errorf("claim first attempts: %w", mapErr(err))
	}
	out := make([]FirstAttempt, 0, len(rows))
	for _, r := range rows {
		t, err := deliveryTarget(dbgen.HTTPDeliveryOfRow{
			RunID: r.RunID, ScheduleID: r.ScheduleID, WorkflowID: r.WorkflowID, IdempotencyKey: r.IdempotencyKey,
			ScheduledAt: r.ScheduledAt, Status: r.Status, ScheduleName: r.ScheduleName, Action: r.Action, Retry: r.Retry,
			Secret: r.Secret, PreviousSecret: r.PreviousSecret, HeaderValues: r.HeaderValues,
		})
		if err != nil {
			// What it would send cannot be read: the run goes on to its delivery workflow,
			// which reads it again at each attempt and says why it fails.
			t = HTTPDeliveryTarget{RunID: r.RunID, ScheduleID: r.ScheduleID, WorkflowID: r.WorkflowID, Schedule: r.ScheduleName, Unreadable: err}
		}
		out = append(out, FirstAttempt{Target: t, VisibleAt: r.VisibleAt.UTC(), TraceContext: r.TraceContext})
	}
	return out, nil
}

// StartFirstAttempts records, before they are sent, the first attempts of the runs given as
// being sent at the times given — only for the rows sender still holds of runs still
// RUNNING — and answers the runs recorded: those, and only those, may be sent.
func (s *Store) StartFirstAttempts(ctx context.Context, sender string, runIDs []int64, startedAt []time.Time) (map[int64]bool, error) {
	ids, err := s.Q.StartFirstAttempts(ctx, dbgen.StartFirstAttemptsParams{RunIds: runIDs, StartedAt: startedAt, Sender: sender})
	if err != nil {
		return nil, fmt.Errorf("record %d first attempts as sent: %w", len(runIDs), mapErr(err))
	}
	out := make(map[int64]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}

// FirstAttemptOutcome is a first attempt's answer, and what it makes of its run.
type FirstAttemptOutcome struct {
	RunID int64
	// Outcome is the attempt's: domain.AttemptSucceeded, AttemptRetryable or AttemptFinal.
	Outcome               string
	StartedAt, FinishedAt time.Time
	LatencyMs             int64
	StatusCode            int // 0: no answer
	Error, ResponseStart  string
	RetryAfter            time.Duration
	// RunStatus is the run's end when the attempt decides it (SUCCEEDED, or FAILED with
	// RunError); "" when the run goes on to its delivery workflow.
	RunStatus domain.RunStatus
	RunError  string
	// Reason, when the host's limits made the attempt late, says so on the run.
	Reason string
}

// EndedRun is a run a first attempt ended.
type EndedRun struct {
	RunID, ScheduleID int64
	Status            domain.RunStatus
}

// FinishFirstAttempts records the answers of first attempts sent by sender and, for the rows
// it still holds, their runs' outcomes, in one transaction: a run decided (SUCCEEDED or
// FAILED) ends and its row goes; a run that goes on to its delivery workflow is answered in
// handOver (its row stays until the workflow was started: ReleaseFirstAttempts). The
// attempt itself is recorded whoever holds the row: a sender the sweep took for dead records
// its true answer too, and a 2xx recorded late still stops every later attempt.
func (s *Store) FinishFirstAttempts(ctx context.Context, sender string, outs []FirstAttemptOutcome) (handOver []int64, ended []EndedRun, err error) {
	if len(outs) == 0 {
		return nil, nil, nil
	}
	var f dbgen.FinishFirstAttemptsParams
	ids := make([]int64, len(outs))
	byID := make(map[int64]FirstAttemptOutcome, len(outs))
	for i, o := range outs {
		ids[i] = o.RunID
		byID[o.RunID] = o
		f.RunIds = append(f.RunIds, o.RunID)
		f.Outcomes = append(f.Outcomes, o.Outcome)
		f.FinishedAt = append(f.FinishedAt, o.FinishedAt.UTC())
		f.LatencyMs = append(f.LatencyMs, o.LatencyMs)
		f.StatusCodes = append(f.StatusCodes, int4(o.StatusCode))
		f.Errors = append(f.Errors, o.Error)
		f.ResponseStarts = append(f.ResponseStarts, o.ResponseStart)
		f.RetryAfterMs = append(f.RetryAfterMs, o.RetryAfter.Milliseconds())
	}
	err = s.inTxRetried(ctx, func(q *dbgen.Queries) error {
		handOver, ended = nil, nil
		if err := q.FinishFirstAttempts(ctx, f); err != nil {
			return fmt.Errorf("record the answers of %d first attempts: %w", len(outs), mapErr(err))
		}
		held, err := q.LockHeldFirstAttempts(ctx, dbgen.LockHeldFirstAttemptsParams{RunIds: ids, Sender: sender})
		if err != nil {
			return fmt.Errorf("first attempts held: %w", mapErr(err))
		}
		var end dbgen.EndFirstAttemptRunsParams
		var fired dbgen.MarkFirstAttemptRunsFiredParams
		for _, id := range held {
			o := byID[id]
			if o.RunStatus == "" {
				handOver = append(handOver, id)
				fired.RunIds = append(fired.RunIds, id)
				fired.FiredAt = append(fired.FiredAt, o.StartedAt.UTC())
				fired.Reasons = append(fired.Reasons, o.Reason)
				continue
			}
			end.RunIds = append(end.RunIds, id)
			end.Statuses = append(end.Statuses, string(o.RunStatus))
			end.Errors = append(end.Errors, o.RunError)
			end.FinishedAt = append(end.FinishedAt, o.FinishedAt.UTC())
			end.FiredAt = append(end.FiredAt, o.StartedAt.UTC())
			end.Reasons = append(end.Reasons, o.Reason)
		}
		if len(fired.RunIds) > 0 {
			if err := q.MarkFirstAttemptRunsFired(ctx, fired); err != nil {
				return fmt.Errorf("mark %d runs fired: %w", len(fired.RunIds), mapErr(err))
			}
		}
		if len(end.RunIds) == 0 {
			return nil
		}
		rows, err := q.EndFirstAttemptRuns(ctx, end)
		if err != nil {
			return fmt.Errorf("end %d runs: %w", len(end.RunIds), mapErr(err))
		}
		if err := noteEndedRuns(ctx, q, rows, &ended); err != nil {
			return err
		}
		ends := make([]runEnd, len(rows))
		for i, r := range rows {
			ends[i] = runEnd{ScheduleID: r.ScheduleID, ScheduledAt: r.ScheduledAt, Status: r.Status, FinishedAt: byID[r.ID].FinishedAt, Error: byID[r.ID].RunError}
		}
		if err := noteStreaks(ctx, q, ends, time.Now()); err != nil {
			return err
		}
		if err := q.DeleteHeldFirstAttempts(ctx, dbgen.DeleteHeldFirstAttemptsParams{RunIds: end.RunIds, Sender: sender}); err != nil {
			return fmt.Errorf("let go of %d first attempts: %w", len(end.RunIds), mapErr(err))
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return handOver, ended, nil
}

// noteEndedRuns moves on the schedules of the runs a batch ended (their last success, a
// one-time schedule's completion), their rows locked in id order after the runs'.
func noteEndedRuns(ctx context.Context, q *dbgen.Queries, rows []dbgen.EndFirstAttemptRunsRow, ended *[]EndedRun) error {
	if len(rows) == 0 {
		return nil
	}
	var p dbgen.NoteEndedRunsParams
	seen := map[int64]bool{}
	var scheduleIDs []int64
	for _, r := range rows {
		*ended = append(*ended, EndedRun{RunID: r.ID, ScheduleID: r.ScheduleID, Status: r.Status})
		p.ScheduleIds = append(p.ScheduleIds, r.ScheduleID)
		p.Statuses = append(p.Statuses, string(r.Status))
		p.ScheduledAt = append(p.ScheduledAt, r.ScheduledAt)
		if !seen[r.ScheduleID] {
			seen[r.ScheduleID] = true
			scheduleIDs = append(scheduleIDs, r.ScheduleID)
		}
	}
	sort.Slice(scheduleIDs, func(i, j int) bool { return scheduleIDs[i] < scheduleIDs[j] })
	if err := q.LockSchedulesOfEndedRuns(ctx, scheduleIDs); err != nil {
		return fmt.Errorf("lock the schedules of %d runs ended: %w", len(rows), mapErr(err))
	}
	if err := q.NoteEndedRuns(ctx, p); err != nil {
		return fmt.Errorf("note %d runs ended on their schedules: %w", len(rows), mapErr(err))
	}
	return nil
}

// ReleaseFirstAttempts lets go of the rows of runs whose delivery workflow sender started.
func (s *Store) ReleaseFirstAttempts(ctx context.Context, sender string, runIDs []int64) error {
	if len(runIDs) == 0 {
		return nil
	}
	if err := s.Q.DeleteHeldFirstAttempts(ctx, dbgen.DeleteHeldFirstAttemptsParams{RunIds: runIDs, Sender: sender}); err != nil {
		return fmt.Errorf("let go of %d first attempts handed over: %w", len(runIDs), mapErr(err))
	}
	return nil
}

// RenewFirstAttemptLeases renews the leases of the first attempts given that sender holds;
// it answers how many it renewed.
func (s *Store) RenewFirstAttemptLeases(ctx context.Context, sender string, runIDs []int64, lease time.Duration) (int64, error) {
	n, err := s.Q.RenewHeldFirstAttempts(ctx, dbgen.RenewHeldFirstAttemptsParams{RunIds: runIDs, Sender: sender, LeaseSeconds: lease.Seconds()})
	if err != nil {
		return 0, fmt.Errorf("renew first attempt leases: %w", mapErr(err))
	}
	return n, nil
}

// FirstAttemptQueued reports whether run's first attempt is still the sender's: no delivery
// workflow of it may start meanwhile.
func (s *Store) FirstAttemptQueued(ctx context.Context, runID int64) (bool, error) {
	q, err := s.Q.FirstAttemptQueued(ctx, runID)
	if err != nil {
		return false, fmt.Errorf("first attempt of run %d: %w", runID, mapErr(err))
	}
	return q, nil
}

// Swept is what a sweep of first attempts whose sender's lease ran out did.
type Swept struct {
	// Requeued attempts were never sent: back in the queue for any sender.
	Requeued int
	// Lost attempts were being sent when their sender died: recorded lost.
	Lost int
	// HandOver are the runs, held now by the sweeping sender, that go on to their delivery
	// workflow (their attempt was sent): start it, then ReleaseFirstAttempts.
	HandOver []int64
	// Dropped rows were of runs no longer RUNNING.
	Dropped int64
}

// SweepFirstAttempts takes, for sender, up to max first attempts whose sender's lease ran
// out (it died, or stalled past its lease): one never sent goes back to the queue; one sent
// goes on to its delivery workflow, a send whose answer was never recorded recorded lost.
// Rows of runs that are no longer RUNNING are dropped.
func (s *Store) SweepFirstAttempts(ctx context.Context, sender string, lease time.Duration, max int) (Swept, error) {
	var out Swept
	err := s.inTxRetried(ctx, func(q *dbgen.Queries) error {
		out = Swept{}
		rows, err := q.TakeExpiredFirstAttempts(ctx, dbgen.TakeExpiredFirstAttemptsParams{Sender: sender, LeaseSeconds: lease.Seconds(), MaxRows: int4(max)})
		if err != nil {
			return fmt.Errorf("take expired first attempts: %w", mapErr(err))
		}
		var requeue, lost []int64
		for _, r := range rows {
			switch {
			case r.RunStatus != string(domain.RunRunning):
				// dropped below
			case r.Outcome == "":
				requeue = append(requeue, r.RunID)
			case r.Outcome == domain.AttemptSending:
				lost = append(lost, r.RunID)
				out.HandOver = append(out.HandOver, r.RunID)
			default:
				// Answered, but the run's outcome was not recorded by its sender: its delivery
				// workflow reads the attempt and acts on it (a 2xx: done; a final answer: failed).
				out.HandOver = append(out.HandOver, r.RunID)
			}
		}
		if len(requeue) > 0 {
			if err := q.RequeueFirstAttempts(ctx, dbgen.RequeueFirstAttemptsParams{RunIds: requeue, Sender: sender}); err != nil {
				return fmt.Errorf("requeue %d first attempts: %w", len(requeue), mapErr(err))
			}
		}
		if len(lost) > 0 {
			if err := q.LoseFirstAttempts(ctx, lost); err != nil {
				return fmt.Errorf("record %d first attempts lost: %w", len(lost), mapErr(err))
			}
			if err := q.MarkLostRunsFired(ctx, lost); err != nil {
				return fmt.Errorf("mark %d runs fired: %w", len(lost), mapErr(err))
			}
		}
		if out.Dropped, err = q.DropStaleFirstAttempts(ctx); err != nil {
			return fmt.Errorf("drop first attempts of runs that ended: %w", mapErr(err))
		}
		out.Requeued, out.Lost = len(requeue), len(lost)
		return nil
	})
	return out, err
}

// NextFirstAttemptIn is how long until the next queued first attempt comes due, by the
// database's clock (negative: overdue; ok false: none queued).
func (s *Store) NextFirstAttemptIn(ctx context.Context) (wait time.Duration, ok bool, err error) {
	secs, err := s.Q.NextFirstAttemptIn(ctx)
	if err != nil {
		return 0, false, fmt.Errorf("next first attempt: %w", mapErr(err))
	}
	if math.IsInf(secs, 1) {
		return 0, false, nil
	}
	return time.Duration(secs * float64(time.Second)), true, nil
}

// StopFirstAttemptRun stops the released run of workflowID whose first attempt is the
// sender's (overlap cancel_other or terminate_other, for a run with no delivery workflow
// yet): its row goes, so nothing more is sent for it, and it ends with status and errText.
// It reports whether there was such a run.
func (s *Store) StopFirstAttemptRun(ctx context.Context, workflowID string, status domain.RunStatus, errText string) (bool, error) {
	ids, err := s.Q.StopFirstAttemptRun(ctx, dbgen.StopFirstAttemptRunParams{WorkflowID: workflowID, Status: status, Error: errText})
	if err != nil {
		return false, fmt.Errorf("stop the run of %s: %w", workflowID, mapErr(err))
	}
	return len(ids) > 0, nil
}

// FirstAttemptState is a run as a wait for its end sees it, by its workflow id.
type FirstAttemptState struct {
	RunID int64
	// Queued: its first attempt is the sender's still (no delivery workflow yet).
	Queued bool
	// Direct: its current series began with a first attempt the sender sent; with Queued
	// false, the run is final (Status) or its delivery workflow was started.
	Direct bool
	Status domain.RunStatus
	Error  string
}

// FirstAttemptRunState reads the run of workflowID (ErrNotFound: no such run).
func (s *Store) FirstAttemptRunState(ctx context.Context, workflowID string) (FirstAttemptState, error) {
	r, err := s.Q.FirstAttemptRunState(ctx, workflowID)
	if err != nil {
		return FirstAttemptState{}, fmt.Errorf("the run of %s: %w", workflowID, mapErr(err))
	}
	return FirstAttemptState{RunID: r.ID, Queued: r.Queued, Direct: r.Direct, Status: r.Status, Error: r.Error}, nil
}

// inTxRetried runs fn in a transaction, again when PostgreSQL broke a deadlock or a
// serialization conflict by aborting it (the batches of first attempts lock runs and
// schedules that settling and other batches lock too).
func (s *Store) inTxRetried(ctx context.Context, fn func(q *dbgen.Queries) error) error {
	for try := 0; ; try++ {
		err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error { return fn(q) })
		var pgErr *pgconn.PgError
		if err == nil || try >= 4 || !errors.As(err, &pgErr) || (pgErr.Code != "40P01" && pgErr.Code != "40001") {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(10*(try+1)) * time.Millisecond):
		}
	}
}

// deliveryTarget decodes what a delivery of a run sends.
func deliveryTarget(row dbgen.HTTPDeliveryOfRow) (HTTPDeliveryTarget, error) {
	t := HTTPDeliveryTarget{
		RunID: row.RunID, ScheduleID: row.ScheduleID, WorkflowID: row.WorkflowID, Key: row.IdempotencyKey,
		ScheduledAt: row.ScheduledAt.UTC(), Redrive: int(row.Redrives), Schedule: row.ScheduleName, Status: row.Status,
		Delivered: row.Delivered,
	}
	if err := json.Unmarshal(row.Action, &t.Action); err != nil {
		return HTTPDeliveryTarget{}, fmt.Errorf("delivery of run %d: the action of schedule %q: %w", row.RunID, row.ScheduleName, err)
	}
	if len(row.Retry) > 0 {
		t.Retry = new(domain.Retry)
		if err := json.Unmarshal(row.Retry, t.Retry); err != nil {
			return HTTPDeliveryTarget{}, fmt.Errorf("delivery of run %d: the retry policy of schedule %q: %w", row.RunID, row.ScheduleName, err)
		}
	}
	for _, secret := range []string{row.Secret, row.PreviousSecret} {
		if secret != "" {
			t.Secrets = append(t.Secrets, secret)
		}
	}
	if err := json.Unmarshal(row.HeaderValues, &t.HeaderValues); err != nil {
		return HTTPDeliveryTarget{}, fmt.Errorf("delivery of run %d: header values: %w", row.RunID, err)
	}
	if row.DirectAttempts > 0 {
		d := &DirectAttempts{Made: int(row.DirectAttempts), Began: row.DirectBegan.UTC(), Outcome: row.DirectOutcome,
			StatusCode: int(row.DirectStatus), Error: row.DirectError, ResponseStart: row.DirectResponse,
			RetryAfter: time.Duration(row.DirectRetryAfterMs) * time.Millisecond}
		if !row.DirectFinished.IsZero() && row.DirectFinished.Year() > 1 {
			d.Finished = row.DirectFinished.UTC()
		}
		t.Direct = d
	}
	return t, nil
}

// RequeueFirstAttempts puts back in the queue, for any sender, first attempts sender holds
// and did not send.
func (s *Store) RequeueFirstAttempts(ctx context.Context, sender string, runIDs []int64) error {
	if err := s.Q.RequeueFirstAttempts(ctx, dbgen.RequeueFirstAttemptsParams{RunIds: runIDs, Sender: sender}); err != nil {
		return fmt.Errorf("requeue %d first attempts: %w", len(runIDs), mapErr(err))
	}
	return nil
}
