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
			out = append(out, ReleasedFire{
				RunID: r.ID, ScheduleID: r.ScheduleID, ScheduledAt: r.ScheduledAt.UTC(), VisibleAt: r.VisibleAt.UTC(),
				ReleasedAt: r.ReleasedAt.UTC(), Trigger: domain.Trigger(r.Trigger), Status: domain.RunStatus(r.Status),
			})
		}
		return nil
	})
	return out, full, err
}

// decideLateWorkflowFires judges the armed workflow fires of the locked schedules that are
// released late, into p's decided arrays. What their targets did only Temporal knows: each
// target's start (its first workflow task scheduled) and whether its code began are asked
// for, and tick_fate, the rule every late tick obeys, decides from them
// (JudgeLateWorkflowFires). A target decided MISSED that has not begun is terminated before
// the release records it, so that a MISSED row never has a target that ran.
func decideLateWorkflowFires(ctx context.Context, q *dbgen.Queries, targets TargetChecker, p *dbgen.ReleaseDueFiresParams) error {
	late, err := q.LateWorkflowFires(ctx, dbgen.LateWorkflowFiresParams{AsOf: p.AsOf, OnTimeMs: p.OnTimeMs, ScheduleIds: p.ScheduleIds})
	if err != nil {
		return fmt.Errorf("late workflow fires: %w", mapErr(err))
	}
	if len(late) == 0 {
		return nil
	}
	facts := dbgen.JudgeLateWorkflowFiresParams{AsOf: p.AsOf, OnTimeMs: p.OnTimeMs, GraceSeconds: p.GraceSeconds}
	workflowIDs := make(map[int64]string, len(late))
	for _, f := range late {
		startedAt, began, err := targets.Started(ctx, f.WorkflowID)
		if err != nil {
			return fmt.Errorf("target %s of a late fire: %w", f.WorkflowID, err)
		}
		facts.Ids = append(facts.Ids, f.ID)
		var started time.Time // zero: not started (NULL in the query)
		if startedAt != nil {
			started = startedAt.UTC()
		}
		facts.StartedAt = append(facts.StartedAt, started)
		facts.Began = append(facts.Began, began)
		workflowIDs[f.ID] = f.WorkflowID
	}
	judged, err := q.JudgeLateWorkflowFires(ctx, facts)
	if err != nil {
		return fmt.Errorf("judge late workflow fires: %w", mapErr(err))
	}
	for _, j := range judged {
		if j.Fate == "missed" {
			if err := targets.Terminate(ctx, workflowIDs[j.ID], j.Reason); err != nil {
				return fmt.Errorf("stop the delayed start of a missed fire: %w", err)
			}
		}
		p.DecidedIds = append(p.DecidedIds, j.ID)
		p.DecidedFates = append(p.DecidedFates, j.Fate)
		p.DecidedReasons = append(p.DecidedReasons, j.Reason)
		p.DecidedFiredAt = append(p.DecidedFiredAt, j.FiredAt)
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
