package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store/dbgen"
)

// The rollout engine's moves between statuses that the gates govern (docs/rollouts.md):
// promotion PENDING → AVAILABLE, one round at a time under an advisory lock, and the claim
// AVAILABLE → RUNNING. The gates themselves are SQL functions, one per gate, composed by
// rollout_wait_for and applied to every PENDING task by rollout_gates (store/schema.sql);
// the statements that apply them are PromoteTasks and PromoteHeads (store/queries/rollouts.sql).

// promotionLockKey is the transaction-level advisory lock every promotion round holds, and
// that every change adding PENDING work takes too, so rounds never interleave with each
// other or with a new blocker (R1–R3 hold with any number of promoters).
const promotionLockKey int64 = 0x726f6c6c6f7574 // "rollout"

// underPromotionLock runs fn in one transaction that holds the promotion lock.
//
// The transaction runs without JIT compilation: the gates statement's estimated cost (it
// reads every live task several times) crosses PostgreSQL's jit_optimize_above_cost and
// jit_inline_above_cost at a few thousand PENDING tasks, and compiling it then took longer
// (about 200 ms) than running it (about 25 ms on 10,000 PENDING tasks) — on every round.
func (s *Store) underPromotionLock(ctx context.Context, fn func(q *dbgen.Queries) error) error {
	return s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		if err := q.PromotionLock(ctx, promotionLockKey); err != nil {
			return fmt.Errorf("promotion lock: %w", err)
		}
		return fn(q)
	})
}

// Promotion is the result of one promotion round.
type Promotion struct {
	// Promoted are the tasks moved PENDING → AVAILABLE.
	Promoted []dbgen.PromoteTasksRow
	// RolloutIDs are the distinct rollouts promoted into, ascending.
	RolloutIDs []int64
	// NextRunAt is the earliest moment ahead at which a gate may let a PENDING task through:
	// its run_at, or a window opening or ending, or a rate's minute passing (nil if none).
	NextRunAt *time.Time
	// NextWhy says which ("run_at", "window opens", "window ends", "rate").
	NextWhy string
	// CausesWritten is how many PENDING tasks got a new waiting cause.
	CausesWritten int64
}

// collectRollouts sets RolloutIDs from Promoted.
func (p *Promotion) collectRollouts() {
	for _, r := range p.Promoted {
		p.RolloutIDs = append(p.RolloutIDs, r.RolloutID)
	}
	slices.Sort(p.RolloutIDs)
	p.RolloutIDs = slices.Compact(p.RolloutIDs)
}

// PromoteRound applies the gates to every PENDING task at once: one transaction, a
// fixed number of statements whatever the number of tasks (lock, the window spans that
// ended, the abort thresholds' safety net, promote with waiting causes, the next gate
// change). The run_at gate reads the database's clock.
func (s *Store) PromoteRound(ctx context.Context) (Promotion, error) {
	return s.PromoteRoundAsOf(ctx, time.Time{})
}

// PromoteRoundAsOf is PromoteRound with the run_at gate read at the later of the database's
// clock and asOf (the zero time: the database's clock alone). The promoter passes its
// workflow's time: the timer that woke it for a run_at decides that the run_at has come.
func (s *Store) PromoteRoundAsOf(ctx context.Context, asOf time.Time) (Promotion, error) {
	var asOfArg *time.Time
	if !asOf.IsZero() {
		asOfArg = &asOf
	}
	var p Promotion
	err := s.underPromotionLock(ctx, func(q *dbgen.Queries) error {
		if err := refreshWindows(ctx, q, asOfArg); err != nil {
			return err
		}
		if err := abortSafetyNet(ctx, q); err != nil {
			return err
		}
		rows, err := q.PromoteTasks(ctx, asOfArg)
		if err != nil {
			return fmt.Errorf("promote: %w", err)
		}
		for _, r := range rows {
			if r.Status != domain.TaskRunAvailable {
				p.CausesWritten++
				continue
			}
			p.Promoted = append(p.Promoted, r)
		}
		p.collectRollouts()
		gate, err := q.NextGateChange(ctx, asOfArg)
		if err != nil {
			return fmt.Errorf("next gate change: %w", err)
		}
		if len(gate) > 0 {
			at := gate[0].At
			p.NextRunAt, p.NextWhy = &at, gate[0].Why
		}
		return nil
	})
	if err != nil {
		return Promotion{}, fmt.Errorf("promotion round: %w", mapErr(err))
	}
	return p, nil
}

// PromoteHeadsRound is a promotion round without the waiting causes (PromoteHeads): the
// same gates (rollout_gates) under the same lock, cheaper because it looks only at each database's head
// tasks and writes no cause. A runner runs it between batches of its tasks; the causes of
// the tasks it leaves PENDING are brought up to date by the next full round. NextRunAt is
// not read.
func (s *Store) PromoteHeadsRound(ctx context.Context) (Promotion, error) {
	var p Promotion
	err := s.underPromotionLock(ctx, func(q *dbgen.Queries) error {
		rows, err := q.PromoteHeads(ctx, nil)
		if err != nil {
			return fmt.Errorf("promote: %w", err)
		}
		for _, r := range rows {
			p.Promoted = append(p.Promoted, dbgen.PromoteTasksRow(r))
		}
		p.collectRollouts()
		return nil
	})
	if err != nil {
		return Promotion{}, fmt.Errorf("promotion round (heads): %w", mapErr(err))
	}
	return p, nil
}

// ClaimTaskRuns moves up to max AVAILABLE tasks of a running rollout to RUNNING; each row goes
// to exactly one caller however many claim at once (R4).
func (s *Store) ClaimTaskRuns(ctx context.Context, rolloutID int64, max int) ([]TaskRun, error) {
	return s.ClaimTaskRunsOf(ctx, rolloutID, max, ClaimAll)
}

// ClaimKind selects the executors a claim takes.
type ClaimKind int

const (
	// ClaimAll claims tasks of every executor.
	ClaimAll ClaimKind = iota
	// ClaimExternal claims only external tasks (their result comes from outside).
	ClaimExternal
	// ClaimRunnable claims only the tasks an executor runs (noop, http, sql).
	ClaimRunnable
)

// ClaimTaskRunsOf is ClaimTaskRuns restricted to one kind of executor; each row still goes to
// exactly one caller (R4).
func (s *Store) ClaimTaskRunsOf(ctx context.Context, rolloutID int64, max int, kind ClaimKind) ([]TaskRun, error) {
	var ext pgtype.Bool
	switch kind {
	case ClaimExternal:
		ext = pgtype.Bool{Bool: true, Valid: true}
	case ClaimRunnable:
		ext = pgtype.Bool{Bool: false, Valid: true}
	}
	rows, err := s.Q.ClaimTasks(ctx, dbgen.ClaimTasksParams{RolloutID: rolloutID, MaxRows: int4(max), External: ext})
	if err != nil {
		return nil, fmt.Errorf("claim tasks of rollout %d: %w", rolloutID, mapErr(err))
	}
	return rows, nil
}

// refreshWindows computes the next window span of every rollout whose span has ended by
// the promotion clock and that still has PENDING tasks (domain.WindowAt, with the
// schedules' cron and DST rules). A rollout whose windows never open again keeps its
// ended span: the window gate stays closed.
func refreshWindows(ctx context.Context, q *dbgen.Queries, asOf *time.Time) error {
	stale, err := q.StaleRolloutWindows(ctx, asOf)
	if err != nil {
		return fmt.Errorf("windows: %w", err)
	}
	for _, r := range stale {
		var ws []domain.Window
		if err := json.Unmarshal(r.Windows, &ws); err != nil {
			return fmt.Errorf("rollout %d: decode windows: %w", r.ID, err)
		}
		span, err := windowSpanAt(ws, r.Clock)
		if err != nil {
			return fmt.Errorf("rollout %d: %w", r.ID, err)
		}
		if !span.End.After(r.Clock) {
			continue
		}
		if err := q.SetRolloutWindow(ctx, dbgen.SetRolloutWindowParams{ID: r.ID, WindowStart: &span.Start, WindowEnd: &span.End}); err != nil {
			return fmt.Errorf("rollout %d: set window: %w", r.ID, err)
		}
	}
	return nil
}

// windowSpanAt is the span of windows holding t or the next to open; when none ever opens
// again, an ended span (the gate stays closed).
func windowSpanAt(ws []domain.Window, t time.Time) (domain.WindowSpan, error) {
	span, ok, err := domain.WindowAt(ws, t)
	if err != nil {
		return domain.WindowSpan{}, err
	}
	if !ok {
		return domain.WindowSpan{Start: t.Add(-2 * time.Microsecond), End: t.Add(-time.Microsecond)}, nil
	}
	return span, nil
}

// abortSafetyNet trips the abort threshold of every running rollout that crossed it
// without its check running (the write's check was lost with its process).
func abortSafetyNet(ctx context.Context, q *dbgen.Queries) error {
	ids, err := q.RunningRolloutsWithAbort(ctx)
	if err != nil || len(ids) == 0 {
		return err
	}
	_, err = tripAbortThresholds(ctx, q, ids)
	return err
}
