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
}

// releaseBatch bounds the schedules one release transaction locks.
const releaseBatch = 2000

// ReleaseDue releases every armed fire whose visible_at has come, in transactions of at
// most releaseBatch schedules: each locks the schedules with due fires (skipping those
// another transaction holds: a fire, a command, another releaser), then in one statement
// marks their due runs released, gives their outbox messages this transaction's id as
// their feed position, and counts them on their schedules. Several processes may run it at
// once. It returns the fires it released.
func (s *Store) ReleaseDue(ctx context.Context) ([]ReleasedFire, error) {
	return s.ReleaseDueAsOf(ctx, nil)
}

// ReleaseDueAsOf is ReleaseDue at the time asOf instead of the database's now() (nil): the
// fires visible by then are released as if then. For tests on a simulated clock.
func (s *Store) ReleaseDueAsOf(ctx context.Context, asOf *time.Time) ([]ReleasedFire, error) {
	var out []ReleasedFire
	for {
		var locked int
		err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
			ids, err := q.LockSchedulesWithDueFires(ctx, dbgen.LockSchedulesWithDueFiresParams{AsOf: asOf, MaxRows: releaseBatch})
			if err != nil {
				return fmt.Errorf("lock schedules with due fires: %w", mapErr(err))
			}
			locked = len(ids)
			if locked == 0 {
				return nil
			}
			rows, err := q.ReleaseDueFires(ctx, dbgen.ReleaseDueFiresParams{
				AsOf: asOf, ScheduleIds: ids, GraceSeconds: LivenessGrace.Seconds(), OnTimeMs: domain.OnTimeTolerance.Milliseconds(),
			})
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
		if err != nil || locked < releaseBatch {
			return out, err
		}
	}
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
		fires, err := r.Store.ReleaseDue(ctx)
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
