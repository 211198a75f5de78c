package workflows_test

import (
	"context"
	"time"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// alive records a tickgate worker alive from `from` to `to` (its last beat), as a worker
// process's liveness loop would have.
func (s *ScheduleWorkflowSuite) alive(id string, from, to time.Time) {
	_, err := s.store.Pool.Exec(context.Background(),
		"INSERT INTO worker_liveness (worker_id, started_at, beat_at) VALUES ($1, $2, $3)", id, from, to)
	s.Require().NoError(err)
}

// S2, late is not missed: a schedule whose ticks are 10 minutes behind while a worker was
// alive all along (a busy tickgate, not a stopped one) fires every one of them late, as
// scheduled, with its lateness in fired_at — none is MISSED, whatever the catch-up window.
func (s *ScheduleWorkflowSuite) TestLateTicksWhileTickgateRanFireLateNotMissed() {
	start := s.t0.Add(-10 * time.Minute)
	in := s.createSchedule("behind", schedulespec.Spec{Interval: every(1, "MINUTES"), StartAt: &start}, start, nil)
	s.alive("busy-worker", start.Add(-time.Hour), s.t0)
	s.stopAt(30 * time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	runs := s.runs("behind")
	s.Require().Len(runs, 10, "ticks -9m..0")
	for i, r := range runs {
		tick := start.Add(time.Duration(i+1) * time.Minute)
		s.Equal(tick, r.ScheduledAt.UTC())
		s.Equal(domain.RunSucceeded, r.Status, "tick %s", tick)
		s.Equal(domain.TriggerScheduled, r.Trigger, "late because busy, not caught up after an outage")
		s.False(r.FiredAt.Before(s.t0), "fired when the schedule got to it: %s", r.FiredAt)
	}
	row, err := s.store.GetSchedule(context.Background(), "behind")
	s.Require().NoError(err)
	s.Zero(row.MissedCount)
}

// S2: a tick is MISSED only for the outage that made it late, and the reason says which. A
// worker ran until -7m (alive to -6m45s with the liveness grace) and another from -3m; the
// catch-up window is 1 minute. Ticks before the outage's end are MISSED with it as their
// reason; the -3m, -2m and -1m ticks came while a worker ran, and fire late.
func (s *ScheduleWorkflowSuite) TestOnlyAnOutageMakesALateTickMissed() {
	start := s.t0.Add(-10 * time.Minute)
	in := s.createSchedule("outage-between", schedulespec.Spec{Interval: every(1, "MINUTES"), StartAt: &start}, start, func(p *store.NewSchedule) {
		p.CatchupWindowMs = time.Minute.Milliseconds()
	})
	s.alive("before", start.Add(-time.Hour), s.t0.Add(-7*time.Minute))
	s.alive("after", s.t0.Add(-3*time.Minute), s.t0)
	s.stopAt(30 * time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	got := map[time.Duration]string{}
	for _, r := range s.runs("outage-between") {
		got[r.ScheduledAt.Sub(s.t0)] = string(r.Status) + "/" + string(r.Trigger)
		if r.Status == domain.RunMissed {
			s.Equal("missed: no tickgate worker was running from 2026-03-01T11:53:15Z to 2026-03-01T11:57:00Z, "+
				"and the tick is older than the catch-up window (1m)", r.Reason)
		}
	}
	s.Equal(map[time.Duration]string{
		-9 * time.Minute: "MISSED/scheduled", -8 * time.Minute: "MISSED/scheduled", -7 * time.Minute: "MISSED/scheduled",
		-6 * time.Minute: "MISSED/scheduled", -5 * time.Minute: "MISSED/scheduled", -4 * time.Minute: "MISSED/scheduled",
		-3 * time.Minute: "SUCCEEDED/scheduled", -2 * time.Minute: "SUCCEEDED/scheduled", -1 * time.Minute: "SUCCEEDED/scheduled",
		0: "SUCCEEDED/scheduled",
	}, got)
}
