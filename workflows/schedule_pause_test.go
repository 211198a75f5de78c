package workflows_test

import (
	"time"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

func (s *ScheduleWorkflowSuite) describe() workflows.ScheduleDescription {
	v, err := s.env.QueryWorkflow(workflows.ScheduleDescribe)
	s.Require().NoError(err)
	var d workflows.ScheduleDescription
	s.Require().NoError(v.Get(&d))
	return d
}

// Seed 004, case 14: while paused nothing starts but an explicit trigger — not the tick
// buffered behind a run that ends during the pause. It stays buffered and starts after
// resume, under the overlap policy (here once the manual run it then waits for has ended).
func (s *ScheduleWorkflowSuite) TestPauseHoldsTheBufferUntilResume() {
	in := s.minuteTicks("pause-buffer", withOverlap("buffer_one"))
	targets := s.mockTargets(100 * time.Second)
	var whilePaused workflows.ScheduleDescription
	var recordedWhilePaused map[time.Duration]string
	// 1m runs until 2m40; 2m is buffered behind it; the pause comes at 2m10.
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.SchedulePause, workflows.PauseRequest{Note: "hold"}, func(r any, err error) { s.NoError(err) })
	}, 2*minute+10*time.Second)
	s.env.RegisterDelayedCallback(func() {
		whilePaused = s.describe()
		recordedWhilePaused = s.outcomes("pause-buffer")
		// The one start a paused schedule allows: nothing runs, so it starts at once.
		s.update(workflows.ScheduleTrigger, workflows.TriggerRequest{RequestID: "while-paused"}, func(r any, err error) {
			s.NoError(err)
			s.Equal(domain.RunRunning, r.(workflows.TriggerResult).Status)
		})
	}, 3*minute+30*time.Second)
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.ScheduleResume, nil, func(r any, err error) { s.NoError(err) })
	}, 5*minute+30*time.Second)
	s.stopAt(5*minute + 50*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.Equal(1, whilePaused.Buffered, "the tick stays buffered after the run it waited for ended")
	s.Empty(whilePaused.Running, "and did not start")
	s.Equal(map[time.Duration]string{1 * minute: "SUCCEEDED", 2 * minute: "BUFFERED"}, recordedWhilePaused,
		"the held tick is in PostgreSQL as BUFFERED: accounted for, and shown as waiting")
	// 3m..5m came while paused: neither fired nor recorded. The manual run went 3m30-5m10;
	// the buffered 2m tick started at the resume.
	s.Equal(map[time.Duration]string{
		1 * minute: "SUCCEEDED", 210 * time.Second: "SUCCEEDED/manual", 2 * minute: "RUNNING",
	}, s.outcomes("pause-buffer"))
	for _, r := range s.runs("pause-buffer") {
		if r.ScheduledAt.Equal(s.t0.Add(2 * minute)) {
			s.Equal(s.t0.Add(5*minute+30*time.Second), r.FiredAt.UTC(), "the buffered tick started at the resume")
		}
	}
	s.Equal([]string{"schedule/pause-buffer/run/2026-03-01T12:01:00Z", "schedule/pause-buffer/run/manual/while-paused",
		"schedule/pause-buffer/run/2026-03-01T12:02:00Z"}, targets.started)
}

// Seed 004, case 15: catch-up ticks are historical runs that must execute; a run that
// succeeded since the previous tick (skip_if_successful) does not skip them. Only the live
// tick is subject to it.
func (s *ScheduleWorkflowSuite) TestSkipIfSuccessfulDoesNotSkipCatchUpTicks() {
	start := s.t0.Add(-5 * minute)
	in := s.createSchedule("catchup-skip-if-ok", schedulespec.Spec{Interval: every(1, "MINUTES"), StartAt: &start}, start, func(p *store.NewSchedule) {
		p.SkipIfSuccessful = true
		p.CatchupWindowMs = (10 * minute).Milliseconds()
	})
	// The schedule's workflow was down since -5m; a manual run succeeded at -90s, after
	// every catch-up tick's previous tick.
	in.Carry = &workflows.ScheduleCarry{Watermark: start, LastSuccessAt: s.t0.Add(-90 * time.Second)}
	s.stopAt(1*minute + 10*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	s.Equal(map[time.Duration]string{
		-4 * minute: "SUCCEEDED/catchup", -3 * minute: "SUCCEEDED/catchup", -2 * minute: "SUCCEEDED/catchup", -1 * minute: "SUCCEEDED/catchup",
		0: "SUCCEEDED", 1 * minute: "SUCCEEDED",
	}, s.outcomes("catchup-skip-if-ok"))
}
