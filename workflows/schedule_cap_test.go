package workflows_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// capped is a workflow action under allow_all with a concurrency cap of n.
func capped(n int32, whenFull domain.WhenFull) func(*store.NewSchedule) {
	return func(p *store.NewSchedule) {
		workflowAction(p)
		p.Overlap = domain.OverlapAllowAll
		wf := string(whenFull)
		p.MaxConcurrent, p.OverlapWhenFull = &n, &wf
	}
}

// maxInFlight is the most targets that ran at one instant: each ran runFor from when it
// began (a run that ends at the instant another begins is not counted with it: the schedule
// learns of an end after it).
func (f *fakeTargets) maxInFlight(runFor time.Duration) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, at := range f.began {
		edges = append(edges, edge{at, +1}, edge{at.Add(runFor), -1})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta // ends first
	})
	n, most := 0, 0
	for _, e := range edges {
		n += e.delta
		most = max(most, n)
	}
	return most
}

// tally counts a schedule's runs by "STATUS/trigger".
func (s *ScheduleWorkflowSuite) tally(name string) map[string]int {
	out := map[string]int{}
	for _, r := range s.runs(name) {
		out[string(r.Status)+"/"+string(r.Trigger)]++
	}
	return out
}

// The cap on scheduled ticks: every 10 s, runs of 47 s, at most 2 in flight. A tick that
// finds two running waits BUFFERED, saying why, and starts when one ends, in tick order; no
// moment has more than two running, and every tick has its row (S2).
func (s *ScheduleWorkflowSuite) TestMaxConcurrentBuffersScheduledTicksBeyondTheCap() {
	start := s.t0
	in := s.createSchedule("capped", schedulespec.Spec{Interval: every(10, "SECONDS"), StartAt: &start}, s.t0, capped(2, domain.WhenFullBuffer))
	targets := s.mockTargets(47 * time.Second)
	var waiting []store.ScheduleRun
	s.env.RegisterDelayedCallback(func() {
		row, err := s.store.GetSchedule(context.Background(), "capped")
		s.Require().NoError(err)
		waiting, err = s.store.BufferedRuns(context.Background(), row.ID)
		s.Require().NoError(err)
	}, 45*time.Second)
	s.stopAt(2*minute + 5*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.Equal(2, targets.maxInFlight(47*time.Second), "never more than max_concurrent running")
	s.Require().Len(waiting, 2, "at 45s: 10s and 20s run, 30s and 40s wait")
	s.Equal(s.t0.Add(30*time.Second), waiting[0].ScheduledAt.UTC())
	s.Equal("max_concurrent 2: 2 runs in flight; waits for one to end", waiting[0].Reason)
	s.Equal("max_concurrent 2: 2 runs in flight and 1 tick waiting before it; waits its turn", waiting[1].Reason)
	runs := s.runs("capped")
	s.Require().Len(runs, 12, "every tick from 10s to 120s has its row")
	var order []string
	for i, r := range runs {
		s.Equal(s.t0.Add(time.Duration(i+1)*10*time.Second), r.ScheduledAt.UTC())
		if r.FiredAt != nil {
			order = append(order, r.ScheduledAt.UTC().Format("15:04:05"))
		}
	}
	s.True(slices.IsSortedFunc(runs, func(a, b store.ScheduleRun) int {
		if a.FiredAt == nil || b.FiredAt == nil {
			return 0
		}
		return a.FiredAt.Compare(*b.FiredAt)
	}), "waiting ticks start in tick order: %v", order)
	// 10s and 20s start at once; from then on one start per run that ends.
	fired := runs[2].FiredAt.UTC()
	s.Equal(s.t0.Add(57*time.Second), fired, "the 30s tick started when the 10s run ended")
	s.Equal(domain.TriggerScheduled, runs[2].Trigger)
}

// overlap_when_full skip: a tick that finds the cap full is recorded SKIPPED with the reason,
// and nothing waits.
func (s *ScheduleWorkflowSuite) TestMaxConcurrentSkipsTicksWhenFullUnderSkip() {
	start := s.t0
	in := s.createSchedule("capped-skip", schedulespec.Spec{Interval: every(10, "SECONDS"), StartAt: &start}, s.t0, capped(2, domain.WhenFullSkip))
	targets := s.mockTargets(25 * time.Second)
	s.stopAt(65 * time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.Equal(2, targets.maxInFlight(25*time.Second))
	// 10s runs to 35s, 20s to 45s; 30s finds both; 40s finds 20s alone and starts (to 65s);
	// 50s finds 40s alone and starts; 60s finds 40s and 50s.
	s.Equal(map[time.Duration]string{
		10 * time.Second: "SUCCEEDED", 20 * time.Second: "SUCCEEDED", 30 * time.Second: "SKIPPED",
		40 * time.Second: "RUNNING", 50 * time.Second: "RUNNING", 60 * time.Second: "SKIPPED",
	}, s.outcomes("capped-skip"))
	for _, r := range s.runs("capped-skip") {
		if r.Status == domain.RunSkipped {
			s.Equal("max_concurrent 2: 2 runs in flight (overlap_when_full skip)", r.Reason)
		}
	}
	row, err := s.store.GetSchedule(context.Background(), "capped-skip")
	s.Require().NoError(err)
	s.Equal(int64(2), row.SkippedCount)
}

// Manual triggers obey the cap like ticks: with max_concurrent 1, a trigger while a run is in
// flight waits BUFFERED (the update answers so, with the reason) and starts when the run
// ends; a second waits behind it.
func (s *ScheduleWorkflowSuite) TestMaxConcurrentHoldsForManualTriggers() {
	in := s.createSchedule("capped-manual", schedulespec.Spec{Cron: "0 0 1 1 *"}, s.t0, capped(1, domain.WhenFullBuffer))
	targets := s.mockTargets(time.Minute)
	var answers []workflows.TriggerResult
	for i := range 3 {
		s.env.RegisterDelayedCallback(func() {
			s.update(workflows.ScheduleTrigger, workflows.TriggerRequest{RequestID: fmt.Sprintf("t%d", i)}, func(r any, err error) {
				s.Require().NoError(err)
				answers = append(answers, r.(workflows.TriggerResult))
			})
		}, time.Duration(i+1)*time.Second)
	}
	s.stopAt(4 * minute)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.Require().Len(answers, 3)
	s.Equal(domain.RunRunning, answers[0].Status)
	s.Equal(domain.RunBuffered, answers[1].Status)
	s.Equal("max_concurrent 1: 1 run in flight; waits for one to end", answers[1].Reason)
	s.Equal(domain.RunBuffered, answers[2].Status)
	s.Equal(1, targets.maxInFlight(time.Minute))
	s.Equal(map[string]int{"SUCCEEDED/manual": 3}, s.tally("capped-manual"), "each ran, one after another")
	s.Equal([]string{"schedule/capped-manual/run/manual/t0", "schedule/capped-manual/run/manual/t1", "schedule/capped-manual/run/manual/t2"},
		targets.started)
}

// Fires of the same instant — a tick and two manual triggers in one workflow task — take the
// last place once: the loop decides them one after the other, each after the run the one
// before it started is in flight. With max_concurrent 1, one runs and the others wait. (See
// schedule_instant_test.go for every policy.)
func (s *ScheduleWorkflowSuite) TestMaxConcurrentHoldsForFiresDecidedAtOnce() {
	start := s.t0.Add(10 * time.Second)
	in := s.createSchedule("capped-at-once", schedulespec.Spec{Interval: every(1, "HOURS"), StartAt: &start}, s.t0, capped(1, domain.WhenFullBuffer))
	targets := s.mockTargets(time.Minute)
	var answers []workflows.TriggerResult
	for i := range 2 {
		s.env.RegisterDelayedCallback(func() {
			s.update(workflows.ScheduleTrigger, workflows.TriggerRequest{RequestID: fmt.Sprintf("at-once-%d", i)}, func(r any, err error) {
				s.Require().NoError(err)
				answers = append(answers, r.(workflows.TriggerResult))
			})
		}, 10*time.Second)
	}
	var early map[string]int
	s.env.RegisterDelayedCallback(func() { early = s.tally("capped-at-once") }, 20*time.Second)
	s.stopAt(5 * minute)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.Require().Len(answers, 2)
	s.Equal(1, early["RUNNING/scheduled"]+early["RUNNING/manual"], "one of the three runs: %v", early)
	s.Equal(2, early["BUFFERED/scheduled"]+early["BUFFERED/manual"], "the others wait: %v", early)
	s.Equal(1, targets.maxInFlight(time.Minute))
}

// Backfill ticks obey the cap: a range of five past ticks with max_concurrent 2 starts two
// and buffers three, which start in order as runs end.
func (s *ScheduleWorkflowSuite) TestMaxConcurrentHoldsForBackfills() {
	in := s.createSchedule("capped-backfill", schedulespec.Spec{Cron: "0 * * * *"}, s.t0, capped(2, domain.WhenFullBuffer))
	targets := s.mockTargets(time.Minute)
	var early map[string]int
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.ScheduleBackfill, workflows.BackfillRequest{Start: s.t0.Add(-5 * time.Hour), End: s.t0.Add(-time.Hour)},
			func(r any, err error) { s.Require().NoError(err) })
	}, time.Second)
	s.env.RegisterDelayedCallback(func() { early = s.tally("capped-backfill") }, 30*time.Second)
	s.stopAt(5 * minute)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.Equal(map[string]int{"RUNNING/backfill": 2, "BUFFERED/backfill": 3}, early)
	s.Equal(2, targets.maxInFlight(time.Minute))
	s.Equal(map[string]int{"SUCCEEDED/backfill": 5}, s.tally("capped-backfill"))
	for _, r := range s.runs("capped-backfill") {
		if r.Reason != "" {
			s.True(strings.HasPrefix(r.Reason, "max_concurrent 2:"), r.Reason)
		}
	}
}

// Catch-up ticks obey the cap: after an outage, six ticks inside the catch-up window come due
// at once; with max_concurrent 1 one starts and five wait, each starting when the run before
// it ends, as catch-up runs.
func (s *ScheduleWorkflowSuite) TestMaxConcurrentHoldsForCatchUpTicks() {
	start := s.t0.Add(-7 * minute)
	in := s.createSchedule("capped-catchup", schedulespec.Spec{Interval: every(1, "MINUTES"), StartAt: &start}, start, func(p *store.NewSchedule) {
		capped(1, domain.WhenFullBuffer)(p)
		p.CatchupWindowMs = (10 * minute).Milliseconds()
	})
	// No worker ran since -6m30s: the ticks -6m..-1m are late after an outage.
	s.alive("before", start.Add(-time.Hour), s.t0.Add(-6*minute-30*time.Second))
	in.Carry = &workflows.ScheduleCarry{Watermark: start}
	targets := s.mockTargets(20 * time.Second)
	var early map[string]int
	s.env.RegisterDelayedCallback(func() { early = s.tally("capped-catchup") }, 10*time.Second)
	s.stopAt(3 * minute)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.Equal(map[string]int{"RUNNING/catchup": 1, "BUFFERED/catchup": 5, "BUFFERED/scheduled": 1}, early,
		"one catch-up run at a time; the other catch-up ticks, and the tick on time behind them, wait")
	s.Equal(1, targets.maxInFlight(20*time.Second))
	got := s.tally("capped-catchup")
	s.Equal(6, got["SUCCEEDED/catchup"], "every catch-up tick ran: %v", got)
}

// The planner and a manual trigger racing for the last place: the planner arms, ahead, only
// as many fires as the cap has room for (here 2 of the 12 ticks in its reach), and a trigger
// that wakes the schedule's workflow right after finds them in flight — armed fires hold
// their place — and waits. Never more than max_concurrent run, whichever comes first.
func (s *ScheduleWorkflowSuite) TestMaxConcurrentHoldsBetweenThePlannerAndATrigger() {
	s.future()
	start := s.t0
	s.createSchedule("capped-race", schedulespec.Spec{Interval: every(10, "SECONDS"), StartAt: &start}, s.t0, capped(2, domain.WhenFullBuffer))
	_, err := s.store.Pool.Exec(context.Background(), "UPDATE schedules SET plan_at = $1, plan_action = 'arm' WHERE name = 'capped-race'", s.t0)
	s.Require().NoError(err)
	tc := testenv.TemporalClient(s.T())
	planner := &activities.ScheduleActivities{Store: s.store, Temporal: tc}
	res, err := planner.PlanRound(context.Background(), s.t0)
	s.Require().NoError(err)
	s.Equal(2, res.Armed, "armed up to the cap, not the 12 ticks of its reach")
	s.T().Cleanup(func() {
		for _, id := range []string{"schedule/capped-race/run/" + s.t0.Add(10*time.Second).Format(time.RFC3339),
			"schedule/capped-race/run/" + s.t0.Add(20*time.Second).Format(time.RFC3339)} {
			_ = tc.TerminateWorkflow(context.Background(), id, "", "test over")
		}
	})
	row, err := s.store.GetSchedule(context.Background(), "capped-race")
	s.Require().NoError(err)
	// The trigger's update starts the workflow (as update-with-start does), which takes the
	// schedule over from its row.
	targets := s.mockTargets(25 * time.Second)
	var answer workflows.TriggerResult
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.ScheduleTrigger, workflows.TriggerRequest{RequestID: "race"}, func(r any, err error) {
			s.Require().NoError(err)
			answer = r.(workflows.TriggerResult)
		})
	}, 0)
	s.stopAt(80 * time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, workflows.ScheduleInput{ScheduleID: row.ID, Name: row.Name})

	s.Equal(domain.RunBuffered, answer.Status, "the armed fires hold both places")
	s.Equal("max_concurrent 2: 2 runs in flight; waits for one to end", answer.Reason)
	s.Equal(2, targets.maxInFlight(25*time.Second), "never more than max_concurrent running")
	s.Equal(1, s.tally("capped-race")["SUCCEEDED/manual"]+s.tally("capped-race")["RUNNING/manual"], "the manual run ran when a place freed")
}
