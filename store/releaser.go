package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store/dbgen"
)

// ReleasedFire is an armed fire the release made true — or recorded MISSED, when it was
// released after its catch-up window because tickgate was down (see ReleaseDueFires).
type ReleasedFire struct {
	RunID       int64
	ScheduleID  int64
	ScheduledAt time.Time
	VisibleAt   time.Time
	ReleasedAt  time.Time // the releasing transaction's start (now()); it commits just after
	Trigger     domain.Trigger
	Status      domain.RunStatus
	WorkflowID  string // a workflow action's target ("" for an event fire)
	// TraceContext is the span context the fire was armed with ("" when armed with tracing
	// off). Began, Committing and Committed time the release transaction by the worker's
	// clock (its start, the start of its commit, the commit's end): the fire's release and
	// commit spans are drawn from them once it committed.
	TraceContext                 string
	Began, Committing, Committed time.Time
}

// releaseBatch bounds the schedules one release transaction locks.
const releaseBatch = 1000

// TargetChecker tells what the target of an armed workflow fire did: a fire released late
// (tickgate was down or behind at its tick) may have started on time all the same, since
// Temporal's start delay started it, or not yet. The worker fills it with its Temporal
// client.
type TargetChecker interface {
	// Started answers when the target's first workflow task was scheduled (nil: not yet,
	// or no such workflow) and whether one was picked up (its code began).
	Started(ctx context.Context, workflowID string) (scheduledAt *time.Time, began bool, err error)
	// Terminate stops a target that has not begun, for a fire recorded MISSED.
	Terminate(ctx context.Context, workflowID, reason string) error
}

// ReleaseDue releases every armed fire whose visible_at has come, in transactions of at
// most releaseBatch schedules: each locks the schedules with due fires (skipping those
// another transaction holds: a fire, a command, another releaser), then in one statement
// marks their due runs released, gives their outbox messages this transaction's id as
// their feed position, and counts them on their schedules. Several processes may run it at
// once. It returns the fires it released. Armed workflow fires released late are only
// released with a TargetChecker (see decideLateWorkflowFires); without one they wait.
func (s *Store) ReleaseDue(ctx context.Context, targets TargetChecker) ([]ReleasedFire, error) {
	return s.ReleaseDueAsOf(ctx, nil, targets)
}

// ReleaseDueAsOf is ReleaseDue at the time asOf instead of the database's now() (nil): the
// fires visible by then are released as if then. For tests on a simulated clock.
func (s *Store) ReleaseDueAsOf(ctx context.Context, asOf *time.Time, targets TargetChecker) ([]ReleasedFire, error) {
	out, full, err := s.releaseOne(ctx, asOf, targets)
	if err != nil || !full {
		return out, err
	}
	// A burst (thousands of schedules sharing a tick): several transactions at once, each
	// taking the schedules the others have not locked, until none is left.
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	for range releaseParallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				fires, full, err := s.releaseOne(ctx, asOf, targets)
				mu.Lock()
				out = append(out, fires...)
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
				if err != nil || !full {
					return
				}
			}
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// releaseParallel is how many release transactions run at once in a burst.
const releaseParallel = 4

// releaseOne releases the due fires of at most releaseBatch schedules in one transaction
// (see ReleaseDue); full reports whether it took as many as it could, so more may be due.
func (s *Store) releaseOne(ctx context.Context, asOf *time.Time, targets TargetChecker) (out []ReleasedFire, full bool, err error) {
	began := time.Now()
	var committing time.Time
	err = s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		out = nil
		ids, err := q.LockSchedulesWithDueFires(ctx, dbgen.LockSchedulesWithDueFiresParams{AsOf: asOf, MaxRows: releaseBatch})
		if err != nil {
			return fmt.Errorf("lock schedules with due fires: %w", mapErr(err))
		}
		full = len(ids) == releaseBatch
		if len(ids) == 0 {
			return nil
		}
		p := dbgen.ReleaseDueFiresParams{
			AsOf: asOf, ScheduleIds: ids, GraceSeconds: LivenessGrace.Seconds(), OnTimeMs: float64(domain.OnTimeTolerance.Milliseconds()),
		}
		if targets != nil {
			if err := decideLateWorkflowFires(ctx, q, targets, &p); err != nil {
				return err
			}
		}
		rows, err := q.ReleaseDueFires(ctx, p)
		if err != nil {
			return fmt.Errorf("release due fires of %d schedules: %w", len(ids), mapErr(err))
		}
		for _, r := range rows {
			f := ReleasedFire{
				RunID: r.ID, ScheduleID: r.ScheduleID, ScheduledAt: r.ScheduledAt.UTC(), VisibleAt: r.VisibleAt.UTC(),
				ReleasedAt: r.ReleasedAt.UTC(), Trigger: domain.Trigger(r.Trigger), Status: domain.RunStatus(r.Status),
				WorkflowID: r.WorkflowID, Began: began,
			}
			if r.TraceContext != nil {
				f.TraceContext = *r.TraceContext
			}
			out = append(out, f)
		}
		committing = time.Now() // InTx commits as fn returns
		return nil
	})
	committed := time.Now()
	for i := range out {
		out[i].Committing, out[i].Committed = committing, committed
	}
	return out, full, err
}

// decideLateWorkflowFires decides the armed workflow fires of the locked schedules that are
// released late, from what their targets did, into p's decided arrays:
//   - a target Temporal started on time (its first workflow task scheduled within
//     domain.OnTimeTolerance of the tick) fired on time, whatever tickgate was doing;
//   - otherwise the fire obeys the catch-up window like any tick (armed_fire_fate): fired
//     late, or a catch-up fire, from when the target started (or now);
//   - MISSED beyond the window after an outage: the target, if it has not begun, is
//     terminated and the fire recorded MISSED. One that has begun (its own workers picked
//     it up before tickgate came back) ran: it is recorded as the catch-up run it is, saying so.
func decideLateWorkflowFires(ctx context.Context, q *dbgen.Queries, targets TargetChecker, p *dbgen.ReleaseDueFiresParams) error {
	late, err := q.LateWorkflowFires(ctx, dbgen.LateWorkflowFiresParams{
		AsOf: p.AsOf, OnTimeMs: p.OnTimeMs, GraceSeconds: p.GraceSeconds, ScheduleIds: p.ScheduleIds,
	})
	if err != nil {
		return fmt.Errorf("late workflow fires: %w", mapErr(err))
	}
	now := time.Now().UTC()
	if p.AsOf != nil {
		now = *p.AsOf
	}
	for _, f := range late {
		scheduledAt, began, err := targets.Started(ctx, f.WorkflowID)
		if err != nil {
			return fmt.Errorf("target %s of a late fire: %w", f.WorkflowID, err)
		}
		firedAt, fate, reason := now, f.Fate, f.Reason
		if scheduledAt != nil {
			firedAt = *scheduledAt
		}
		switch {
		case scheduledAt != nil && scheduledAt.Sub(f.VisibleAt) <= domain.OnTimeTolerance:
			fate, reason = "fired", "" // Temporal started it at its tick
		case fate == "missed" && began:
			fate, reason = "catchup", "started late, after an outage, by its own workers before tickgate came back; "+
				"beyond the catch-up window it would have been MISSED"
		case fate == "missed":
			if err := targets.Terminate(ctx, f.WorkflowID, reason); err != nil {
				return fmt.Errorf("stop the delayed start of a missed fire: %w", err)
			}
		}
		p.DecidedIds = append(p.DecidedIds, f.ID)
		p.DecidedFates = append(p.DecidedFates, fate)
		p.DecidedReasons = append(p.DecidedReasons, reason)
		p.DecidedFiredAt = append(p.DecidedFiredAt, firedAt.UTC())
	}
	return nil
}

// NextArmedFireIn is how long until the next armed fire is due, by the database's clock
// (negative: overdue; ok false: none is armed).
func (s *Store) NextArmedFireIn(ctx context.Context) (wait time.Duration, ok bool, err error) {
	secs, err := s.Q.NextArmedFireIn(ctx)
	if err != nil {
		return 0, false, fmt.Errorf("next armed fire: %w", mapErr(err))
	}
	if math.IsInf(secs, 1) {
		return 0, false, nil
	}
	return time.Duration(secs * float64(time.Second)), true, nil
}

// Releaser runs ReleaseDue when armed fires come due: it sleeps until the next visible_at
// (by the database's clock), at most ReleasePoll, so a fire armed meanwhile (always at least
// seconds ahead) is never waited past. Every worker process runs one; they share the work
// through ReleaseDue's row locks.
type Releaser struct {
	Store *Store
	// Targets decides armed workflow fires released late (nil: they wait for a releaser
	// that has one).
	Targets TargetChecker
	// OnRelease, when set, is told of every fire released (metrics).
	OnRelease func([]ReleasedFire)
	Logger    *slog.Logger
}

// ReleasePoll is the longest a Releaser sleeps between two looks at the armed fires.
const ReleasePoll = time.Second

// Run releases due fires until ctx ends.
func (r *Releaser) Run(ctx context.Context) {
	logger := r.Logger
	if logger == nil {
		logger = slog.Default()
	}
	for {
		fires, err := r.Store.ReleaseDue(ctx, r.Targets)
		if err != nil && ctx.Err() == nil {
			logger.Warn("release armed fires", "error", err)
		}
		if len(fires) > 0 && r.OnRelease != nil {
			r.OnRelease(fires)
		}
		wait := ReleasePoll
		if next, ok, err := r.Store.NextArmedFireIn(ctx); err == nil && ok {
			// A fire still due right after a release was held by another transaction:
			// look again shortly rather than spin.
			wait = min(max(next, 5*time.Millisecond), ReleasePoll)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}
