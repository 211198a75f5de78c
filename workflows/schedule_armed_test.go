package workflows_test

import (
	"context"
	"time"
)

// armedRow is what the database holds of a tick's run, armed or not, whatever the API shows.
type armedRow struct {
	exists, armed    bool
	visibleAt        *time.Time
	events, unplaced int // events of the schedule; outbox messages without a feed position
	firedCount       int64
	nextRunAt        *time.Time
}

// future runs the test clock a day ahead of the database's: a retraction keeps the armed
// fires whose visible time has come by the database's clock (now()), so the ticks of these
// tests must lie ahead of it.
func (s *ScheduleWorkflowSuite) future() {
	s.t0 = time.Now().UTC().Add(24 * time.Hour).Truncate(time.Hour)
	s.env.SetStartTime(s.t0)
}

func (s *ScheduleWorkflowSuite) armedState(name string, tick time.Time) armedRow {
	ctx := context.Background()
	var r armedRow
	row, err := s.store.GetSchedule(ctx, name)
	s.Require().NoError(err)
	r.firedCount, r.nextRunAt = row.FiredCount, row.NextRunAt
	err = s.store.Pool.QueryRow(ctx, `SELECT armed, visible_at FROM schedule_runs WHERE schedule_id = $1 AND scheduled_at = $2`,
		row.ID, tick).Scan(&r.armed, &r.visibleAt)
	r.exists = err == nil
	s.Require().NoError(s.store.Pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE o.tx_id IS NULL)
		FROM event_store e JOIN outbox_messages o ON o.event_id = e.id WHERE e.aggregate_id = $1`, name).Scan(&r.events, &r.unplaced))
	return r
}
