package store

import (
	"context"
	"fmt"
	"log/slog"
	"math"
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

// releaseLock is the advisory lock releases take exclusively and retractions shared.
const releaseLock = 0x72656c65617365 // "release"

// settleBatch bounds the runs one settling transaction settles.
const settleBatch = 5000

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

// ReleaseDue releases every armed fire whose visible_at has come, then settles them.
//
// The release is one transaction, serialized with every other (releaseLock): it judges the
// fires it releases late (tickgate was down or behind at their time) one by one, by
// tick_fate, as ReleaseDueFires does — MISSED beyond the catch-up window after an outage,
// catch-up inside it — and then inserts one feed_releases row: every other armed fire due
// up to now is out, in the feed at this transaction's position and among the runs. However
// many fires share the tick, the release writes one row for them.
//
// Settling follows, in batches of settleBatch runs (SettleReleasedFires): each run's armed
// mark cleared and its fired_at set, and its schedule's counters and next_run_at moved on.
// Several processes may run ReleaseDue at once. It returns the fires it released late and
// the fires it settled. Armed workflow fires released late are only judged with a
// TargetChecker (see decideLateWorkflowFires); without one the release stops short of them.
func (s *Store) ReleaseDue(ctx context.Context, targets TargetChecker) ([]ReleasedFire, error) {
	return s.ReleaseDueAsOf(ctx, nil, targets)
}

// ReleaseDueAsOf is ReleaseDue at the time asOf instead of the database's now() (nil): the
// fires visible by then are released as if then. For tests on a simulated clock.
func (s *Store) ReleaseDueAsOf(ctx context.Context, asOf *time.Time, targets TargetChecker) ([]ReleasedFire, error) {
	out, _, err := s.release(ctx, asOf, targets)
	if err != nil {
		return out, err
	}
	for {
		settled, err := s.settle(ctx)
		if err != nil {
			return out, err
		}
		out = append(out, settled...)
		if len(settled) < settleBatch {
			return out, nil
		}
	}
}

// release is the release's one transaction (see ReleaseDue). released reports whether it
// committed a release (armed fires came due).
func (s *Store) release(ctx context.Context, asOf *time.Time, targets TargetChecker) (out []ReleasedFire, released bool, err error) {
	began := time.Now()
	var committing time.Time
	err = s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		out, released = nil, false
		if err := q.LockReleases(ctx, releaseLock); err != nil {
			return fmt.Errorf("release lock: %w", mapErr(err))
		}
		f, err := q.ReleaseFrontier(ctx)
		if err != nil {
			return fmt.Errorf("release frontier: %w", mapErr(err))
		}
		until := f.DbNow
		if asOf != nil {
			until = *asOf
		}
		if !until.After(f.Frontier) {
			return nil
		}
		onTime := float64(domain.OnTimeTolerance.Milliseconds())
		late, err := q.LockSchedulesWithLateFires(ctx, dbgen.LockSchedulesWithLateFiresParams{FromTime: f.Frontier, ToTime: until, OnTimeMs: onTime})
		if err != nil {
			return fmt.Errorf("lock schedules with late fires: %w", mapErr(err))
		}
		if len(late) > 0 {
			p := dbgen.ReleaseDueFiresParams{AsOf: &until, ScheduleIds: late, GraceSeconds: LivenessGrace.Seconds(), OnTimeMs: onTime}
			if targets != nil {
				if err := decideLateWorkflowFires(ctx, q, targets, &p); err != nil {
					return err
				}
			} else if first, err := firstLateWorkflowFire(ctx, q, p); err != nil {
				return err
			} else if first != nil && first.Before(until) {
				// Without Temporal to ask, a late workflow fire cannot be judged: the release
				// stops short of it, and a releaser that has a TargetChecker releases it.
				until = first.Add(-time.Microsecond)
				p.AsOf = &until
			}
			rows, err := q.ReleaseDueFires(ctx, p)
			if err != nil {
				return fmt.Errorf("release the late fires of %d schedules: %w", len(late), mapErr(err))
			}
			for _, r := range rows {
				out = append(out, ReleasedFire{
					RunID: r.ID, ScheduleID: r.ScheduleID, ScheduledAt: r.ScheduledAt.UTC(), VisibleAt: r.VisibleAt.UTC(),
					ReleasedAt: r.ReleasedAt.UTC(), Trigger: domain.Trigger(r.Trigger), Status: domain.RunStatus(r.Status),
					WorkflowID: r.WorkflowID, TraceContext: deref(r.TraceContext),
				})
			}
		}
		if !until.After(f.Frontier) {
			return nil
		}
		if _, err := q.InsertFeedRelease(ctx, dbgen.InsertFeedReleaseParams{After: f.Frontier, Until: until}); err != nil {
			return fmt.Errorf("record the release up to %s: %w", until.UTC().Format(time.RFC3339Nano), mapErr(err))
		}
		committing = time.Now() // InTx commits as fn returns
		released = true
		return nil
	})
	committed := time.Now()
	for i := range out {
		out[i].Began, out[i].Committing, out[i].Committed = began, committing, committed
	}
	return out, released && err == nil, err
}

// firstLateWorkflowFire is the earliest armed workflow fire the release would take late.
func firstLateWorkflowFire(ctx context.Context, q *dbgen.Queries, p dbgen.ReleaseDueFiresParams) (*time.Time, error) {
	late, err := q.LateWorkflowFires(ctx, dbgen.LateWorkflowFiresParams{AsOf: p.AsOf, OnTimeMs: p.OnTimeMs, ScheduleIds: p.ScheduleIds})
	if err != nil {
		return nil, fmt.Errorf("late workflow fires: %w", mapErr(err))
	}
	var first *time.Time
	for _, f := range late {
		if first == nil || f.VisibleAt.Before(*first) {
			v := f.VisibleAt
			first = &v
		}
	}
	return first, nil
}

// settle settles at most settleBatch released runs in one transaction (see ReleaseDue).
func (s *Store) settle(ctx context.Context) ([]ReleasedFire, error) {
	rows, err := s.Q.SettleReleasedFires(ctx, settleBatch)
	if err != nil {
		return nil, fmt.Errorf("settle released fires: %w", mapErr(err))
	}
	out := make([]ReleasedFire, len(rows))
	for i, r := range rows {
		// The release that made it true is one transaction for many fires: its time is the
		// fire's release, began and committed alike (the settling follows it).
		at := r.ReleasedAt.UTC()
		out[i] = ReleasedFire{
			RunID: r.ID, ScheduleID: r.ScheduleID, ScheduledAt: r.ScheduledAt.UTC(), VisibleAt: r.VisibleAt.UTC(),
			ReleasedAt: at, Trigger: domain.Trigger(r.Trigger), Status: domain.RunStatus(r.Status),
			WorkflowID: r.WorkflowID, TraceContext: deref(r.TraceContext), Began: at, Committing: at, Committed: at,
		}
	}
	return out, nil
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
	direct := map[int64]bool{}
	for _, f := range late {
		var startedAt *time.Time
		var began bool
		if f.Direct {
			// An http fire whose first attempt the releasing worker sends: nothing of it is in
			// Temporal, and nothing was sent before its release.
			direct[f.ID] = true
		} else if startedAt, began, err = targets.Started(ctx, f.WorkflowID); err != nil {
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
		if j.Fate == "missed" && !direct[j.ID] {
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

// Releaser releases armed fires when they come due and settles them: it sleeps until the
// next visible_at (by the database's clock), at most ReleasePoll, so a fire armed meanwhile
// (always seconds ahead) is never waited past. Settling runs beside it, so that a big
// release's settling never holds the next release back. Every worker process runs one;
// they share the work through the release lock and the runs' row locks.
type Releaser struct {
	Store *Store
	// Targets decides armed workflow fires released late (nil: they wait for a releaser
	// that has one).
	Targets TargetChecker
	// OnRelease, when set, is told of every fire released late and every fire settled
	// (metrics).
	OnRelease func([]ReleasedFire)
	// Released, when set, is called as soon as a release of this process has committed: the
	// worker's http sender then sends the first attempts of the http fires it made true.
	Released func()
	Logger   *slog.Logger
}

// ReleasePoll is the longest a Releaser sleeps between two looks at the armed fires.
const ReleasePoll = time.Second

// Run releases and settles due fires until ctx ends.
func (r *Releaser) Run(ctx context.Context) {
	logger := r.Logger
	if logger == nil {
		logger = slog.Default()
	}
	toSettle := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.settleLoop(ctx, toSettle, logger)
	}()
	defer func() { <-done }()
	for {
		fires, released, err := r.Store.release(ctx, nil, r.Targets)
		if err != nil && ctx.Err() == nil {
			logger.Warn("release armed fires", "error", err)
		}
		if released && r.Released != nil {
			r.Released()
		}
		r.report(fires)
		select {
		case toSettle <- struct{}{}:
		default:
		}
		wait := ReleasePoll
		if next, ok, err := r.Store.NextArmedFireIn(ctx); err == nil && ok {
			wait = min(max(next, 5*time.Millisecond), ReleasePoll)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// settleLoop settles released fires, batch after batch, after each release and every
// ReleasePoll (another process's release leaves fires to settle too).
func (r *Releaser) settleLoop(ctx context.Context, released <-chan struct{}, logger *slog.Logger) {
	for {
		for {
			fires, err := r.Store.settle(ctx)
			if err != nil {
				if ctx.Err() == nil {
					logger.Warn("settle released fires", "error", err)
				}
				break
			}
			r.report(fires)
			if len(fires) < settleBatch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-released:
		case <-time.After(ReleasePoll):
		}
	}
}

func (r *Releaser) report(fires []ReleasedFire) {
	if len(fires) > 0 && r.OnRelease != nil {
		r.OnRelease(fires)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
