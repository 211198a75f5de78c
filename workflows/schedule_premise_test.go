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
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// plantLostRun leaves in PostgreSQL what a lost workflow task leaves there: a manual fire
// recorded RUNNING (its RecordTick committed) and its target started, in a task Temporal
// never completed — the schedule's workflow, going on from before that task, knows nothing of
// it. It returns the run.
func (s *ScheduleWorkflowSuite) plantLostRun(name string, targets *fakeTargets) store.ScheduleRun {
	ctx := context.Background()
	row, err := s.store.GetSchedule(ctx, name)
	s.Require().NoError(err)
	def, err := activities.DefinitionFromRow(row)
	s.Require().NoError(err)
	now := s.env.Now().UTC()
	key := domain.ManualKey(row.ID, "lost-task")
	event := domain.FireEvent(def.Name, def.Action, now, domain.TriggerManual, now)
	rec, err := s.acts.RecordTick(ctx, activities.TickRecord{
		ScheduleID: row.ID, ScheduledAt: now, FiredAt: now, Trigger: domain.TriggerManual, Status: domain.RunRunning,
		IdempotencyKey: key, WorkflowID: domain.RunWorkflowID(name, key), Event: &event, NextRunAt: row.NextRunAt,
	})
	s.Require().NoError(err)
	s.Require().True(rec.Created)
	targets.mu.Lock()
	targets.began[rec.WorkflowID] = now
	targets.mu.Unlock()
	run, err := s.store.GetRun(ctx, row.ID, rec.ID)
	s.Require().NoError(err)
	return run
}

// mostAtOnce is the most targets that ran at one instant, each from when it began to when
// its wait returned its end (still running at the end of the test: to the end of time). A
// target that ends at the instant another begins is not counted with it.
func (f *fakeTargets) mostAtOnce() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for id, at := range f.began {
		edges = append(edges, edge{at, +1})
		if end, ok := f.ended[id]; ok {
			edges = append(edges, edge{end, -1})
		}
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

// lostRunCase is a schedule whose workflow fires while a run a lost workflow task left is in
// flight: the lost run from 5s, an hourly tick due at 10s and a manual trigger at 10s, runs
// of a minute.
type lostRunCase struct {
	name   string
	mutate func(*store.NewSchedule)
	// answer is the trigger's answer: its status and reason (%d: the lost run's id).
	answer domain.RunStatus
	reason string
	// early is what runs and waits at 30s, while the lost run is in flight; final at the end.
	early, final map[string]int
}

// runLostRunCase runs c and checks what holds under every policy: nothing starts while the
// lost run is in flight — its record finds it, the workflow takes it in and decides the tick
// and the trigger again, counting it — and the lost run is watched to its end, which is
// recorded.
func (s *ScheduleWorkflowSuite) runLostRunCase(c lostRunCase) {
	start := s.t0.Add(10 * time.Second)
	in := s.createSchedule(c.name, schedulespec.Spec{Interval: every(1, "HOURS"), StartAt: &start}, s.t0, c.mutate)
	targets := s.mockTargets(time.Minute)
	var lost store.ScheduleRun
	s.env.RegisterDelayedCallback(func() { lost = s.plantLostRun(c.name, targets) }, 5*time.Second)
	var answer workflows.TriggerResult
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.ScheduleTrigger, workflows.TriggerRequest{RequestID: "after-the-loss"}, func(r any, err error) {
			s.Require().NoError(err)
			answer = r.(workflows.TriggerResult)
		})
	}, 10*time.Second)
	var early map[string]int
	s.env.RegisterDelayedCallback(func() { early = s.tally(c.name) }, 30*time.Second)
	s.stopAt(4 * minute)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.Equal(c.early, early, "at 30s the lost run alone is in flight")
	s.Equal(c.answer, answer.Status, "the trigger's answer")
	reason := c.reason
	if strings.Contains(reason, "%d") {
		reason = fmt.Sprintf(reason, lost.ID)
	}
	s.Equal(reason, answer.Reason)
	s.Equal(1, targets.mostAtOnce(), "never a target beside the lost run's")
	lostEnd, watched := targets.ended[lost.WorkflowID]
	s.Require().True(watched, "the lost run was taken in and watched")
	for id, at := range targets.began {
		if id != lost.WorkflowID {
			s.False(at.Before(lostEnd), "%s began at %s, before the lost run ended at %s", id, at, lostEnd)
		}
	}
	run, err := s.store.GetRun(context.Background(), in.ScheduleID, lost.ID)
	s.Require().NoError(err)
	s.Equal(domain.RunSucceeded, run.Status, "the lost run's end is recorded")
	s.Equal(c.final, s.tally(c.name))
}

// A run a lost workflow task left in flight holds its place under max_concurrent 1 with
// overlap_when_full skip: the tick and the trigger that come while it runs are SKIPPED.
func (s *ScheduleWorkflowSuite) TestARunALostTaskLeftHoldsItsPlaceUnderTheCapSkip() {
	skipped := "max_concurrent 1: 1 run in flight (overlap_when_full skip)"
	s.runLostRunCase(lostRunCase{
		name: "lost-cap-skip", mutate: capped(1, domain.WhenFullSkip), answer: domain.RunSkipped, reason: skipped,
		early: map[string]int{"RUNNING/manual": 1, "SKIPPED/scheduled": 1, "SKIPPED/manual": 1},
		final: map[string]int{"SUCCEEDED/manual": 1, "SKIPPED/scheduled": 1, "SKIPPED/manual": 1},
	})
}

// A run a lost workflow task left in flight holds its place under max_concurrent 1 with
// overlap_when_full buffer: the tick and the trigger wait, and run one after the other once
// it has ended.
func (s *ScheduleWorkflowSuite) TestARunALostTaskLeftHoldsItsPlaceUnderTheCapBuffer() {
	s.runLostRunCase(lostRunCase{
		name: "lost-cap-buffer", mutate: capped(1, domain.WhenFullBuffer), answer: domain.RunBuffered,
		reason: "max_concurrent 1: 1 run in flight and 1 tick waiting before it; waits its turn",
		early:  map[string]int{"RUNNING/manual": 1, "BUFFERED/scheduled": 1, "BUFFERED/manual": 1},
		final:  map[string]int{"SUCCEEDED/manual": 2, "SUCCEEDED/scheduled": 1},
	})
}

// A run a lost workflow task left in flight holds its place under overlap skip: the tick and
// the trigger that come while it runs are SKIPPED, naming it.
func (s *ScheduleWorkflowSuite) TestARunALostTaskLeftHoldsItsPlaceUnderOverlapSkip() {
	s.runLostRunCase(lostRunCase{
		name: "lost-overlap-skip", mutate: withOverlap(domain.OverlapSkip), answer: domain.RunSkipped,
		reason: "overlap skip: run %d is still running",
		early:  map[string]int{"RUNNING/manual": 1, "SKIPPED/scheduled": 1, "SKIPPED/manual": 1},
		final:  map[string]int{"SUCCEEDED/manual": 1, "SKIPPED/scheduled": 1, "SKIPPED/manual": 1},
	})
}

// A buffered tick drained while a run the workflow does not count is in flight waits for it
// too. With max_concurrent 1, a trigger runs from 1s and the 10s tick waits BUFFERED behind
// it; at 30s a run the workflow does not know of is put in flight beside them (planted as a
// lost task leaves one). When the trigger's run ends, the buffered tick's record finds that
// run, which is taken in, and the tick starts only once it has ended.
func (s *ScheduleWorkflowSuite) TestABufferedTickWaitsForARunALostTaskLeftInFlight() {
	start := s.t0.Add(10 * time.Second)
	in := s.createSchedule("lost-drain", schedulespec.Spec{Interval: every(1, "HOURS"), StartAt: &start}, s.t0, capped(1, domain.WhenFullBuffer))
	targets := s.mockTargets(time.Minute)
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.ScheduleTrigger, workflows.TriggerRequest{RequestID: "first"}, func(r any, err error) {
			s.Require().NoError(err)
			s.Equal(domain.RunRunning, r.(workflows.TriggerResult).Status)
		})
	}, time.Second)
	var lost store.ScheduleRun
	s.env.RegisterDelayedCallback(func() { lost = s.plantLostRun("lost-drain", targets) }, 30*time.Second)
	var afterFirst map[string]int
	s.env.RegisterDelayedCallback(func() { afterFirst = s.tally("lost-drain") }, 90*time.Second)
	s.stopAt(5 * minute)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.Equal(map[string]int{"SUCCEEDED/manual": 1, "RUNNING/manual": 1, "BUFFERED/scheduled": 1}, afterFirst,
		"at 90s the first run ended, the lost one runs, the tick still waits")
	lostEnd, watched := targets.ended[lost.WorkflowID]
	s.True(watched, "the lost run was taken in and watched")
	tickTarget := domain.RunWorkflowID("lost-drain", domain.TickKey(in.ScheduleID, start))
	s.False(targets.began[tickTarget].Before(lostEnd), "the tick began at %s, before the lost run ended at %s", targets.began[tickTarget], lostEnd)
	s.Equal(map[string]int{"SUCCEEDED/manual": 2, "SUCCEEDED/scheduled": 1}, s.tally("lost-drain"))
}

// Backfill ticks wait for a run a lost task left in flight too: with max_concurrent 1, a
// backfill of three past hours asked at 10s, while the lost run of 5s is in flight, starts
// none of them beside it; they run one after the other once it has ended.
func (s *ScheduleWorkflowSuite) TestBackfillTicksWaitForARunALostTaskLeftInFlight() {
	in := s.createSchedule("lost-backfill", schedulespec.Spec{Cron: "0 * * * *"}, s.t0, capped(1, domain.WhenFullBuffer))
	targets := s.mockTargets(time.Minute)
	var lost store.ScheduleRun
	s.env.RegisterDelayedCallback(func() { lost = s.plantLostRun("lost-backfill", targets) }, 5*time.Second)
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.ScheduleBackfill, workflows.BackfillRequest{Start: s.t0.Add(-3 * time.Hour), End: s.t0.Add(-time.Hour)},
			func(r any, err error) { s.Require().NoError(err) })
	}, 10*time.Second)
	var early map[string]int
	s.env.RegisterDelayedCallback(func() { early = s.tally("lost-backfill") }, 30*time.Second)
	s.stopAt(5 * minute)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.Equal(map[string]int{"RUNNING/manual": 1, "BUFFERED/backfill": 3}, early, "at 30s the lost run alone is in flight")
	s.Equal(1, targets.mostAtOnce(), "never a target beside another")
	lostEnd, watched := targets.ended[lost.WorkflowID]
	s.Require().True(watched, "the lost run was taken in and watched")
	for id, at := range targets.began {
		if id != lost.WorkflowID {
			s.False(at.Before(lostEnd), "%s began at %s, before the lost run ended at %s", id, at, lostEnd)
		}
	}
	s.Equal(map[string]int{"SUCCEEDED/manual": 1, "SUCCEEDED/backfill": 3}, s.tally("lost-backfill"))
}
