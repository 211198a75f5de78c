package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/scheduleplan"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// fakeTargets stands in for the target workflows of a workflow action: each run "lasts"
// runFor on the workflow clock from its start (an armed fire's target starts at its tick,
// after its start delay), and ends CANCELED or TERMINATED if the schedule stopped it.
type fakeTargets struct {
	mu      sync.Mutex
	started []string
	startAt map[string]time.Time // the armed starts, by workflow id
	delays  []time.Time          // the armed starts whose wait has not begun, in order
	stopped map[string]string
	// began is when each target began running, on the workflow clock: its start, or an
	// armed one's tick.
	began map[string]time.Time
	// ended is when each target's wait returned its end, on the workflow clock.
	ended map[string]time.Time
}

func (s *ScheduleWorkflowSuite) mockTargets(runFor time.Duration) *fakeTargets {
	f := &fakeTargets{stopped: map[string]string{}, startAt: map[string]time.Time{}, began: map[string]time.Time{}, ended: map[string]time.Time{}}
	s.env.OnActivity(s.acts.StartRunWorkflow, mock.Anything, mock.Anything).Return(func(_ context.Context, r activities.StartRun) (string, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if _, again := f.began[r.WorkflowID]; !again { // a start taken over is started again, idempotently
			f.began[r.WorkflowID] = s.env.Now()
			if r.StartAt != nil && r.StartAt.After(s.env.Now()) {
				f.began[r.WorkflowID] = *r.StartAt
			}
		}
		f.started = append(f.started, r.WorkflowID)
		if r.StartAt != nil {
			f.startAt[r.WorkflowID] = *r.StartAt
			f.delays = append(f.delays, *r.StartAt)
		}
		return "run-of-" + r.WorkflowID, nil
	})
	// A run's wait is scheduled right after its start: the first armed start not yet waited
	// for is this wait's, and its run lasts from its start delay on.
	s.env.OnActivity(s.acts.AwaitRunWorkflow, mock.Anything, mock.Anything).AfterFn(func() time.Duration {
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.delays) == 0 {
			return runFor
		}
		at := f.delays[0]
		f.delays = f.delays[1:]
		return runFor + max(at.Sub(s.env.Now()), 0)
	}).Return(func(_ context.Context, id string) (activities.RunOutcome, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.ended[id] = s.env.Now()
		switch f.stopped[id] {
		case "terminate":
			return activities.RunOutcome{Status: domain.RunTerminated, Error: "terminated"}, nil
		case "cancel":
			return activities.RunOutcome{Status: domain.RunCanceled, Error: "canceled"}, nil
		}
		return activities.RunOutcome{Status: domain.RunSucceeded}, nil
	})
	s.env.OnActivity(s.acts.StopRunWorkflow, mock.Anything, mock.Anything).Return(func(_ context.Context, r activities.StopRun) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		if r.Terminate {
			f.stopped[r.WorkflowID] = "terminate"
		} else {
			f.stopped[r.WorkflowID] = "cancel"
		}
		return nil
	})
	return f
}

func workflowAction(p *store.NewSchedule) {
	p.Action = json.RawMessage(`{"kind":"workflow","workflow_type":"Report","task_queue":"reports","input":{"x":1}}`)
}

func withOverlap(overlap domain.Overlap) func(*store.NewSchedule) {
	return func(p *store.NewSchedule) {
		workflowAction(p)
		p.Overlap = overlap
	}
}

// outcomes maps each run's offset from t0 to its status (and trigger when not scheduled).
func (s *ScheduleWorkflowSuite) outcomes(name string) map[time.Duration]string {
	out := map[time.Duration]string{}
	for _, r := range s.runs(name) {
		v := string(r.Status)
		if r.Trigger != domain.TriggerScheduled {
			v += "/" + string(r.Trigger)
		}
		out[r.ScheduledAt.Sub(s.t0)] = v
	}
	return out
}

func (s *ScheduleWorkflowSuite) minuteTicks(name string, mutate func(*store.NewSchedule)) workflows.ScheduleInput {
	start := s.t0
	return s.createSchedule(name, schedulespec.Spec{Interval: every(1, "MINUTES"), StartAt: &start}, s.t0, mutate)
}

const minute = time.Minute

func (s *ScheduleWorkflowSuite) TestOverlapSkipRecordsTicksThatCameWhileARunRan() {
	in := s.minuteTicks("skip", withOverlap("skip"))
	s.mockTargets(100 * time.Second)
	s.stopAt(5*minute + 10*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	s.Equal(map[time.Duration]string{
		1 * minute: "SUCCEEDED", 2 * minute: "SKIPPED", 3 * minute: "SUCCEEDED", 4 * minute: "SKIPPED", 5 * minute: "RUNNING",
	}, s.outcomes("skip"))
	for _, r := range s.runs("skip") {
		if r.Status == domain.RunSkipped {
			s.Contains(r.Reason, "still running")
		}
	}
}

func (s *ScheduleWorkflowSuite) TestOverlapBufferOneRunsOneAfterwardsAndSkipsBeyond() {
	in := s.minuteTicks("buffer-one", withOverlap("buffer_one"))
	s.mockTargets(100 * time.Second)
	s.stopAt(5*minute + 10*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	// 1m runs to 2m40; 2m waits and runs 2m40-4m20; 3m waits; 4m finds the buffer full;
	// 3m runs from 4m20; 5m waits in the buffer, recorded BUFFERED with why.
	s.Equal(map[time.Duration]string{
		1 * minute: "SUCCEEDED", 2 * minute: "SUCCEEDED", 3 * minute: "RUNNING", 4 * minute: "SKIPPED", 5 * minute: "BUFFERED",
	}, s.outcomes("buffer-one"))
	runs := s.runs("buffer-one")
	waiting := runs[len(runs)-1]
	s.Nil(waiting.FiredAt, "a buffered tick has not fired")
	s.Nil(waiting.FinishedAt, "a buffered tick is not final")
	s.Equal(fmt.Sprintf("overlap buffer_one: waiting for run %d to end", runs[2].ID), waiting.Reason)
}

func (s *ScheduleWorkflowSuite) TestOverlapBufferAllRunsEveryTickInOrder() {
	in := s.minuteTicks("buffer-all", withOverlap("buffer_all"))
	targets := s.mockTargets(100 * time.Second)
	s.stopAt(6*minute + 10*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	// 5m and 6m wait behind 4m, each a BUFFERED row.
	s.Equal(map[time.Duration]string{
		1 * minute: "SUCCEEDED", 2 * minute: "SUCCEEDED", 3 * minute: "SUCCEEDED", 4 * minute: "RUNNING",
		5 * minute: "BUFFERED", 6 * minute: "BUFFERED",
	}, s.outcomes("buffer-all"))
	s.Equal([]string{"schedule/buffer-all/run/2026-03-01T12:01:00Z", "schedule/buffer-all/run/2026-03-01T12:02:00Z",
		"schedule/buffer-all/run/2026-03-01T12:03:00Z", "schedule/buffer-all/run/2026-03-01T12:04:00Z"}, targets.started)
}

func (s *ScheduleWorkflowSuite) TestOverlapAllowAllStartsEveryTick() {
	in := s.minuteTicks("allow-all", withOverlap("allow_all"))
	s.mockTargets(150 * time.Second)
	s.stopAt(4*minute + 10*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	s.Equal(map[time.Duration]string{
		1 * minute: "SUCCEEDED", 2 * minute: "RUNNING", 3 * minute: "RUNNING", 4 * minute: "RUNNING",
	}, s.outcomes("allow-all"))
}

func (s *ScheduleWorkflowSuite) TestOverlapCancelOtherCancelsTheRunThenStarts() {
	in := s.minuteTicks("cancel-other", withOverlap("cancel_other"))
	targets := s.mockTargets(100 * time.Second)
	s.stopAt(3*minute + 30*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	// 3m waits while 2m is being canceled.
	s.Equal(map[time.Duration]string{1 * minute: "CANCELED", 2 * minute: "RUNNING", 3 * minute: "BUFFERED"}, s.outcomes("cancel-other"))
	s.Equal("cancel", targets.stopped["schedule/cancel-other/run/2026-03-01T12:01:00Z"])
}

// Catching up on a backlog under cancel_other, each newer tick supersedes the one waiting
// for the canceled run (recorded SKIPPED with its reason, S2): only the newest waits, so
// the schedule comes back to its ticks instead of running the backlog one by one.
func (s *ScheduleWorkflowSuite) TestOverlapCancelOtherCatchingUpRunsOnlyTheNewestWaitingTick() {
	start := s.t0.Add(-5 * minute)
	in := s.createSchedule("cancel-backlog", schedulespec.Spec{Interval: every(1, "MINUTES"), StartAt: &start}, start, func(p *store.NewSchedule) {
		workflowAction(p)
		p.Overlap = "cancel_other"
		p.CatchupWindowMs = (10 * minute).Milliseconds()
	})
	targets := s.mockTargets(100 * time.Second)
	s.stopAt(2*minute + 10*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	// -4m runs and is canceled; -3m..-1m and 0 each wait and are superseded by the next
	// tick (0 by +1m, which came while -4m was still stopping); +1m runs; +2m waits (BUFFERED).
	s.Equal(map[time.Duration]string{
		-4 * minute: "CANCELED/catchup", -3 * minute: "SKIPPED/catchup", -2 * minute: "SKIPPED/catchup", -1 * minute: "SKIPPED/catchup",
		0: "SKIPPED", 1 * minute: "RUNNING", 2 * minute: "BUFFERED",
	}, s.outcomes("cancel-backlog"))
	for _, r := range s.runs("cancel-backlog") {
		if r.Status == domain.RunSkipped {
			s.Contains(r.Reason, "overlap cancel_other: superseded by the tick of "+r.ScheduledAt.Add(minute).UTC().Format(time.RFC3339))
		}
	}
	s.Equal([]string{"schedule/cancel-backlog/run/2026-03-01T11:56:00Z", "schedule/cancel-backlog/run/2026-03-01T12:01:00Z"}, targets.started)
	s.Equal("cancel", targets.stopped["schedule/cancel-backlog/run/2026-03-01T12:01:00Z"], "+2m asked +1m to stop")
}

// A run that ends at the instant a newer cancel_other tick supersedes the tick waiting for
// it: the loop decides the tick first (it was due by the time the end arrived), against the
// run still in flight — the waiting tick SKIPPED, the new one waiting, the run asked to
// stop — and then takes the end, which starts the waiting tick. (When a watch recorded its
// run's end from its own coroutine, the end could land in the middle of that decision; the
// decision once read the running runs again, found none and panicked, failing every
// workflow task of the schedule from then on.)
func (s *ScheduleWorkflowSuite) TestOverlapCancelOtherWhenTheRunEndsAsATickSupersedes() {
	in := s.minuteTicks("cancel-race", withOverlap("cancel_other"))
	var started []string
	s.env.OnActivity(s.acts.StartRunWorkflow, mock.Anything, mock.Anything).Return(func(_ context.Context, r activities.StartRun) (string, error) {
		started = append(started, r.WorkflowID)
		return "run-of-" + r.WorkflowID, nil
	})
	s.env.OnActivity(s.acts.StopRunWorkflow, mock.Anything, mock.Anything).Return(nil)
	// 1m's run ends at 3m, the instant the tick of 3m supersedes 2m; later runs outlast the
	// test.
	var waits int
	s.env.OnActivity(s.acts.AwaitRunWorkflow, mock.Anything, mock.Anything).AfterFn(func() time.Duration {
		if waits++; waits == 1 {
			return s.t0.Add(3 * minute).Sub(s.env.Now())
		}
		return time.Hour
	}).Return(activities.RunOutcome{Status: domain.RunCanceled, Error: "canceled"}, nil)
	s.stopAt(3*minute + 30*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	s.Require().True(s.env.IsWorkflowCompleted())
	s.True(temporal.IsCanceledError(s.env.GetWorkflowError()), "ended by the test's cancel, not a panic: %v", s.env.GetWorkflowError())
	s.Equal(map[time.Duration]string{1 * minute: "CANCELED", 2 * minute: "SKIPPED", 3 * minute: "RUNNING"}, s.outcomes("cancel-race"))
	s.Equal([]string{"schedule/cancel-race/run/2026-03-01T12:01:00Z", "schedule/cancel-race/run/2026-03-01T12:03:00Z"}, started,
		"3m started once 1m's end was taken")
}

func (s *ScheduleWorkflowSuite) TestOverlapTerminateOtherTerminatesAndStartsAtOnce() {
	in := s.minuteTicks("terminate-other", withOverlap("terminate_other"))
	targets := s.mockTargets(100 * time.Second)
	s.stopAt(2*minute + 10*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	runs := s.runs("terminate-other")
	s.Require().Len(runs, 2)
	s.Equal(s.t0.Add(2*minute), runs[1].FiredAt.UTC(), "the new run starts at its tick, not after the old one ends")
	s.Equal("terminate", targets.stopped["schedule/terminate-other/run/2026-03-01T12:01:00Z"])
}

func (s *ScheduleWorkflowSuite) TestTriggerOverridesOverlapPolicy() {
	in := s.minuteTicks("override", withOverlap("skip"))
	s.mockTargets(100 * time.Second)
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.ScheduleTrigger, workflows.TriggerRequest{RequestID: "r", Overlap: "allow_all", Input: json.RawMessage(`{"x":2}`)},
			func(r any, err error) { s.NoError(err) })
	}, 90*time.Second)
	s.stopAt(100 * time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	out := s.outcomes("override")
	s.Equal("RUNNING/manual", out[90*time.Second], "allow_all for this trigger starts it beside the running one")
}

func (s *ScheduleWorkflowSuite) TestSkipIfSuccessfulSkipsTheTickAfterAManualRun() {
	in := s.minuteTicks("skip-if-ok", func(p *store.NewSchedule) { p.SkipIfSuccessful = true })
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.ScheduleTrigger, workflows.TriggerRequest{RequestID: "early"}, func(r any, err error) { s.NoError(err) })
	}, 90*time.Second)
	s.stopAt(4*minute + 10*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	s.Equal(map[time.Duration]string{
		1 * minute: "SUCCEEDED", 90 * time.Second: "SUCCEEDED/manual", 2 * minute: "SKIPPED", 3 * minute: "SUCCEEDED", 4 * minute: "SUCCEEDED",
	}, s.outcomes("skip-if-ok"))
}

func (s *ScheduleWorkflowSuite) TestUpdateWhileARunIsInFlight() {
	start := s.t0
	in := s.createSchedule("live-update", schedulespec.Spec{Interval: every(10, "SECONDS"), StartAt: &start}, s.t0, withOverlap("skip"))
	s.mockTargets(100 * time.Second)
	s.env.RegisterDelayedCallback(func() {
		// PATCH: the row changes (as the API does), then the workflow is told to reload.
		_, err := s.store.UpdateSchedule(context.Background(), store.ScheduleChange{
			Name: "live-update", Spec: json.RawMessage(`{"interval":{"every":25,"unit":"SECONDS"},"start_at":"2026-03-01T12:00:00Z","timezone":"UTC"}`),
			Action: json.RawMessage(`{"kind":"workflow","workflow_type":"Report","task_queue":"reports"}`), Overlap: "skip",
		})
		s.NoError(err)
		s.update(workflows.ScheduleRefresh, nil, func(r any, err error) { s.NoError(err) })
	}, 32*time.Second)
	s.stopAt(2*minute + 10*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	out := s.outcomes("live-update")
	s.Equal("SUCCEEDED", out[10*time.Second], "the run in flight finished normally")
	s.Equal("SKIPPED", out[20*time.Second])
	s.Equal("SKIPPED", out[30*time.Second])
	// After the change at 32s the 25-second grid applies: 50s, 75s, 100s (skipped while the
	// first run ends at 110s), then 125s runs.
	s.Equal("SKIPPED", out[50*time.Second])
	s.Equal("SKIPPED", out[100*time.Second])
	s.Equal("RUNNING", out[125*time.Second])
	_, old := out[40*time.Second]
	s.False(old, "the old 10-second grid no longer applies")
}

// A workflow action's schedule, whose next fire is near, keeps its workflow; a backfill over
// ticks it fired runs only the ticks that never ran.
func (s *ScheduleWorkflowSuite) TestBackfillOverlappingTicksThatRanRunsEachTickOnce() {
	start := s.t0.Add(-10 * minute)
	in := s.createSchedule("backfill", schedulespec.Spec{Interval: every(1, "MINUTES"), StartAt: &start}, s.t0, func(p *store.NewSchedule) {
		workflowAction(p)
		p.Overlap = domain.OverlapAllowAll
	})
	s.mockTargets(time.Second)
	var result workflows.BackfillResult
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.ScheduleBackfill, workflows.BackfillRequest{Start: s.t0.Add(-10 * minute), End: s.t0.Add(2 * minute)},
			func(r any, err error) {
				s.NoError(err)
				result = r.(workflows.BackfillResult)
			})
	}, 3*minute+30*time.Second)
	s.stopAt(5*minute + 10*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	s.Equal(13, result.Ticks)
	out := s.outcomes("backfill")
	for m := -10; m <= 0; m++ {
		s.Equal("SUCCEEDED/backfill", out[time.Duration(m)*minute], "tick %dm", m)
	}
	for m := 1; m <= 5; m++ {
		s.Equal("SUCCEEDED", out[time.Duration(m)*minute], "tick %dm ran once, as scheduled", m)
	}
	s.Len(s.runs("backfill"), 16)
}

// A reschedule moves the next fire: the natural ticks it replaces are SKIPPED, the
// rescheduled one fires, and then the schedule, an event action with nothing in flight,
// rests with its next natural tick (3m) planned for the planner to arm.
func (s *ScheduleWorkflowSuite) TestRescheduleMovesTheNextFireAndRecordsReplacedTicks() {
	in := s.minuteTicks("reschedule", nil)
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.ScheduleReschedule, workflows.RescheduleRequest{NextRunAt: s.t0.Add(150 * time.Second)},
			func(r any, err error) { s.NoError(err) })
	}, 10*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	s.True(s.env.IsWorkflowCompleted(), "it rested")
	s.Equal(map[time.Duration]string{
		1 * minute: "SKIPPED", 2 * minute: "SKIPPED", 150 * time.Second: "SUCCEEDED",
	}, s.outcomes("reschedule"))
	row, err := s.store.GetSchedule(context.Background(), "reschedule")
	s.Require().NoError(err)
	s.Require().NotNil(row.NextRunAt)
	s.Equal(s.t0.Add(3*minute), row.NextRunAt.UTC())
	s.Nil(row.RescheduledTo, "the reschedule is done")
	s.Require().NotNil(row.PlanAction)
	s.Equal(scheduleplan.Arm, *row.PlanAction, "the planner arms the 3m fire")
	s.NotNil(row.RestRequestedAt)
}

// A workflow action arms its ticks one at a time (an event schedule this fast arms windows,
// see TestEveryTickOfAFastScheduleIsArmedInWindowsOnce); the pause retracts the armed 40 s
// tick, so the watermark is the last tick that fired.
func (s *ScheduleWorkflowSuite) TestContinueAsNewKeepsWatermarkAndPause() {
	s.future()
	start := s.t0
	in := s.createSchedule("long-life", schedulespec.Spec{Interval: every(10, "SECONDS"), StartAt: &start}, s.t0, withOverlap("allow_all"))
	s.mockTargets(time.Second)
	// Seven waits before the pause: before each tick and after each run's end (1 s later).
	in.Carry = &workflows.ScheduleCarry{Watermark: s.t0, ContinueAsNewAfter: 7, LastSuccessAt: s.t0}
	s.env.RegisterDelayedCallback(func() {
		s.release() // the releaser has released 10–30 s by now; 40 s is armed
		s.update(workflows.SchedulePause, workflows.PauseRequest{Note: "kept"}, func(r any, err error) { s.NoError(err) })
	}, 35*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	var can *workflow.ContinueAsNewError
	s.Require().True(errors.As(s.env.GetWorkflowError(), &can), "%v", s.env.GetWorkflowError())
	var next workflows.ScheduleInput
	s.Require().NoError(converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	s.Require().NotNil(next.Carry)
	s.Equal(in.ScheduleID, next.ScheduleID)
	s.True(next.Carry.Paused, "the pause carries over")
	s.Equal("kept", next.Carry.Note)
	s.Equal(s.t0.Add(30*time.Second), next.Carry.Watermark, "the watermark carries over")
	s.Len(s.runs("long-life"), 3)

	// The next run resumes from the carried state without firing any tick again (s.env is
	// the new environment from here on: its clock is the one the release goes by).
	env := s.NewTestWorkflowEnvironment()
	s.env = env
	env.RegisterWorkflowWithOptions(workflows.ScheduleWorkflow, workflow.RegisterOptions{Name: workflows.ScheduleWorkflowType})
	env.RegisterActivity(s.acts)
	env.OnActivity(s.acts.StartRunWorkflow, mock.Anything, mock.Anything).Return("run", nil)
	env.OnActivity(s.acts.AwaitRunWorkflow, mock.Anything, mock.Anything).After(time.Second).Return(activities.RunOutcome{Status: domain.RunSucceeded}, nil)
	env.SetStartTime(s.t0.Add(36 * time.Second))
	next.Carry.ContinueAsNewAfter = 1000
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(workflows.ScheduleResume, nil)
	}, 10*time.Second)
	env.RegisterDelayedCallback(env.CancelWorkflow, 40*time.Second)
	env.ExecuteWorkflow(workflows.ScheduleWorkflowType, next)
	var got []time.Duration
	for _, r := range s.runs("long-life") {
		got = append(got, r.ScheduledAt.Sub(s.t0))
	}
	// 10-30s before; paused 36-46s (40s is neither fired nor caught up); 50s-70s after resume.
	s.Equal([]time.Duration{10 * time.Second, 20 * time.Second, 30 * time.Second, 50 * time.Second, 60 * time.Second, 70 * time.Second}, got)
}

// A fire whose RecordTick commits but whose answer is lost (here: the local activity's first
// attempt fails after its commit; in the chaos run: the worker died before completing the
// workflow task) finds its RUNNING row on the retry. The run must still be started, once,
// and watched to its end — not left RUNNING for good.
func (s *ScheduleWorkflowSuite) TestRunWhoseFireAnswerWasLostIsStartedAndWatched() {
	// The test environment dates a local activity retry's deadline by its mock clock
	// compared with the wall clock, so this test runs its mock clock from now.
	s.t0 = time.Now().UTC().Truncate(time.Second)
	s.env.SetStartTime(s.t0)
	start := s.t0
	in := s.createSchedule("lost-answer", schedulespec.Spec{Interval: every(10, "SECONDS"), StartAt: &start}, s.t0, withOverlap("skip"))
	attempts := s.loseFirstRecordAnswers()
	targets := s.mockTargets(3 * time.Second)
	s.stopAt(35 * time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.Equal(map[time.Duration]string{
		10 * time.Second: "SUCCEEDED", 20 * time.Second: "SUCCEEDED", 30 * time.Second: "SUCCEEDED",
	}, s.outcomes("lost-answer"), "every run started and watched to its end")
	s.Len(targets.started, 3, "each run started once")
	for _, n := range attempts {
		s.Equal(2, n, "each fire's record was retried once")
	}
}

// A lost workflow task may fire a tick that its retry decides to skip (the previous run
// ended in between in one attempt, not in the other). The committed RUNNING row wins: the
// retry's SKIPPED record finds it and the run is started and watched, not left RUNNING.
func (s *ScheduleWorkflowSuite) TestRunFiredByALostAttemptIsAdoptedWhenTheRetrySkips() {
	in := s.minuteTicks("diverged", withOverlap("skip"))
	targets := s.mockTargets(100 * time.Second)
	lostFire := s.t0.Add(2 * minute)
	s.env.OnActivity(s.acts.RecordTick, mock.Anything, mock.Anything).Return(func(ctx context.Context, rec activities.TickRecord) (activities.RunRecord, error) {
		if rec.ScheduledAt.Equal(lostFire) && rec.Status == domain.RunSkipped {
			// What the lost attempt committed: the tick fired as a run.
			fired := rec
			fired.Status, fired.Reason, fired.FiredAt = domain.RunRunning, "", rec.ScheduledAt
			fired.WorkflowID = "schedule/diverged/run/" + lostFire.Format(time.RFC3339)
			fired.Event = &domain.Event{Topic: "schedules", Type: "schedule.fired"}
			if _, err := s.acts.RecordTick(ctx, fired); err != nil {
				return activities.RunRecord{}, err
			}
		}
		return s.acts.RecordTick(ctx, rec)
	})
	s.stopAt(5*minute + 10*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	s.Equal(map[time.Duration]string{
		1 * minute: "SUCCEEDED", 2 * minute: "SUCCEEDED", 3 * minute: "SKIPPED", 4 * minute: "RUNNING", 5 * minute: "SKIPPED",
	}, s.outcomes("diverged"), "the lost attempt's run was adopted, watched to its end, and counted as running")
	s.Contains(targets.started, "schedule/diverged/run/"+lostFire.Format(time.RFC3339))
}
