package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store/dbgen"
)

// ArmedTick is one tick of an armed window: its nominal time and when it becomes visible
// (the tick with its jitter).
type ArmedTick struct {
	Tick      time.Time
	VisibleAt time.Time
	// TraceContext is the fire's span context ("" with tracing off; see Fire.TraceContext).
	TraceContext string
}

// ArmWindow commits a window of armed fires in one transaction under the schedule's row
// lock: per tick the run, its event and its outbox message, each hidden until the releaser
// releases it at its visible time (see RecordFire with VisibleAt, which arms one), and the
// schedule's next_run_at on its earliest armed run. Ticks recorded before (a retried
// arming) are left as they are (S1). It returns how many runs it created. A deleted
// schedule is ErrNotFound.
func (s *Store) ArmWindow(ctx context.Context, scheduleID int64, ticks []ArmedTick, afterLast *time.Time, event domain.Event) (created int, err error) {
	if len(ticks) == 0 {
		return 0, nil
	}
	p := dbgen.ArmWindowParams{
		ScheduleID: scheduleID, AfterLast: afterLast, Topic: event.Topic, Type: event.Type, Data: event.Data,
		ScheduledAt: make([]time.Time, len(ticks)), VisibleAt: make([]time.Time, len(ticks)), IdempotencyKeys: make([]string, len(ticks)),
	}
	if len(p.Data) == 0 {
		p.Data = json.RawMessage(`{}`)
	}
	for i, t := range ticks {
		p.ScheduledAt[i], p.VisibleAt[i], p.IdempotencyKeys[i] = t.Tick.UTC(), t.VisibleAt.UTC(), domain.TickKey(scheduleID, t.Tick)
		if t.TraceContext != "" {
			if p.TraceContexts == nil { // tracing off: no array, every row's column NULL
				p.TraceContexts = make([]string, len(ticks))
			}
			p.TraceContexts[i] = t.TraceContext
		}
	}
	err = s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		sched, err := q.LockScheduleByID(ctx, scheduleID)
		if err != nil {
			return fmt.Errorf("lock schedule %d: %w", scheduleID, mapErr(err))
		}
		p.AggregateID = sched.Name
		rows, err := q.ArmWindow(ctx, p)
		if err != nil {
			return fmt.Errorf("arm %d ticks of schedule %d from %s: %w", len(ticks), scheduleID, ticks[0].Tick.UTC().Format(time.RFC3339), mapErr(err))
		}
		created = len(rows)
		if err := q.SetNextRunAtToFirstArmed(ctx, scheduleID); err != nil {
			return fmt.Errorf("next run of schedule %d after arming: %w", scheduleID, mapErr(err))
		}
		return nil
	})
	return created, err
}
