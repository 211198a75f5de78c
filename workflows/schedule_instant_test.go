package workflows_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// A tick and two manual triggers at one instant (docs/schedules.md "How a schedule's
// workflow decides"): the hourly tick of 12:00:10 comes due as the triggers "a" and "b"
// arrive, in one workflow task. The loop decides them one after the other — the tick first,
// since it was due when they came, then a, then b — each seeing the runs the ones before it
// started, so each policy holds exactly as it does for fires decided apart. (When update
// handlers decided concurrently with the loop, all three saw nothing running: under skip and
// the buffer policies all three started.)

// instant is what became of the three fires, keyed "tick", "manual/a" and "manual/b".
type instant struct {
	answers map[string]workflows.TriggerResult // the triggers' updates' answers
	early   map[string]string                  // statuses 5 s after the instant
	final   map[string]string                  // statuses at the end (runs last a minute)
	reasons map[string]string                  // reasons at the end
	runIDs  map[string]int64
	targets *fakeTargets
}

// fireAtOnce runs the instant under the schedule's policies (mutate) and reads what it did.
func (s *ScheduleWorkflowSuite) fireAtOnce(name string, mutate func(*store.NewSchedule)) instant {
	start := s.t0.Add(10 * time.Second)
	in := s.createSchedule(name, schedulespec.Spec{Interval: every(1, "HOURS"), StartAt: &start}, s.t0, mutate)
	got := instant{answers: map[string]workflows.TriggerResult{}, targets: s.mockTargets(time.Minute)}
	for _, id := range []string{"a", "b"} {
		s.env.RegisterDelayedCallback(func() {
			s.update(workflows.ScheduleTrigger, workflows.TriggerRequest{RequestID: id}, func(r any, err error) {
				s.Require().NoError(err)
				got.answers["manual/"+id] = r.(workflows.TriggerResult)
			})
		}, 10*time.Second)
	}
	s.env.RegisterDelayedCallback(func() { got.early, _, _ = s.byFire(name) }, 15*time.Second)
	s.stopAt(5 * minute)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	got.final, got.reasons, got.runIDs = s.byFire(name)
	s.Require().Len(got.answers, 2, "both triggers were answered")
	return got
}

// byFire maps a schedule's runs by what fired them ("tick", "manual/<request id>") to their
// status, reason and id.
func (s *ScheduleWorkflowSuite) byFire(name string) (status, reason map[string]string, ids map[string]int64) {
	status, reason, ids = map[string]string{}, map[string]string{}, map[string]int64{}
	for _, r := range s.runs(name) {
		key := "tick"
		if r.Trigger == domain.TriggerManual {
			_, suffix, _ := strings.Cut(r.IdempotencyKey, "@")
			key = suffix
		}
		s.Require().NotContains(status, key, "one run per fire")
		status[key], reason[key], ids[key] = string(r.Status), r.Reason, r.ID
	}
	return status, reason, ids
}

// wfID is the target workflow id of one of the instant's fires.
func wfID(name, fire string, t0 time.Time) string {
	if fire == "tick" {
		return fmt.Sprintf("schedule/%s/run/%s", name, t0.Add(10*time.Second).Format(time.RFC3339))
	}
	return fmt.Sprintf("schedule/%s/run/%s", name, fire)
}

// skip: the tick starts; both triggers find it running and are skipped, saying so.
func (s *ScheduleWorkflowSuite) TestAtOneInstantSkipStartsOne() {
	got := s.fireAtOnce("instant-skip", withOverlap(domain.OverlapSkip))
	s.Equal(map[string]string{"tick": "RUNNING", "manual/a": "SKIPPED", "manual/b": "SKIPPED"}, got.early)
	s.Equal(map[string]string{"tick": "SUCCEEDED", "manual/a": "SKIPPED", "manual/b": "SKIPPED"}, got.final)
	running := fmt.Sprintf("overlap skip: run %d is still running", got.runIDs["tick"])
	for _, id := range []string{"manual/a", "manual/b"} {
		s.Equal(domain.RunSkipped, got.answers[id].Status, "%s's answer", id)
		s.Equal(running, got.answers[id].Reason)
		s.Equal(running, got.reasons[id])
	}
	s.Equal([]string{wfID("instant-skip", "tick", s.t0)}, got.targets.started)
	s.Equal(1, got.targets.maxInFlight(time.Minute))
}

// buffer_one: the tick starts, a waits in the buffer, b finds the buffer full; a starts
// when the tick's run ends.
func (s *ScheduleWorkflowSuite) TestAtOneInstantBufferOneBuffersOne() {
	got := s.fireAtOnce("instant-buffer-one", withOverlap(domain.OverlapBufferOne))
	s.Equal(map[string]string{"tick": "RUNNING", "manual/a": "BUFFERED", "manual/b": "SKIPPED"}, got.early)
	s.Equal(map[string]string{"tick": "SUCCEEDED", "manual/a": "SUCCEEDED", "manual/b": "SKIPPED"}, got.final)
	s.Equal(domain.RunBuffered, got.answers["manual/a"].Status)
	s.Equal(fmt.Sprintf("overlap buffer_one: waiting for run %d to end", got.runIDs["tick"]), got.answers["manual/a"].Reason)
	s.Equal(domain.RunSkipped, got.answers["manual/b"].Status)
	s.Equal("overlap buffer_one: buffer full (1)", got.reasons["manual/b"])
	s.Equal([]string{wfID("instant-buffer-one", "tick", s.t0), wfID("instant-buffer-one", "manual/a", s.t0)}, got.targets.started)
	s.Equal(1, got.targets.maxInFlight(time.Minute))
}

// buffer_all: the tick starts, a and b wait, and run one after the other in the order they
// came.
func (s *ScheduleWorkflowSuite) TestAtOneInstantBufferAllRunsEachInTurn() {
	name := "instant-buffer-all"
	got := s.fireAtOnce(name, withOverlap(domain.OverlapBufferAll))
	s.Equal(map[string]string{"tick": "RUNNING", "manual/a": "BUFFERED", "manual/b": "BUFFERED"}, got.early)
	s.Equal(map[string]string{"tick": "SUCCEEDED", "manual/a": "SUCCEEDED", "manual/b": "SUCCEEDED"}, got.final)
	s.Equal(domain.RunBuffered, got.answers["manual/a"].Status)
	s.Equal(domain.RunBuffered, got.answers["manual/b"].Status)
	s.Equal([]string{wfID(name, "tick", s.t0), wfID(name, "manual/a", s.t0), wfID(name, "manual/b", s.t0)}, got.targets.started)
	s.Equal(1, got.targets.maxInFlight(time.Minute))
}

// cancel_other: the tick starts; a waits and asks it to stop; b supersedes a (only the
// newest waits) and asks again; the tick's run ends canceled and b runs.
func (s *ScheduleWorkflowSuite) TestAtOneInstantCancelOtherRunsTheNewest() {
	name := "instant-cancel-other"
	got := s.fireAtOnce(name, withOverlap(domain.OverlapCancelOther))
	s.Equal(map[string]string{"tick": "RUNNING", "manual/a": "SKIPPED", "manual/b": "BUFFERED"}, got.early)
	s.Equal(map[string]string{"tick": "CANCELED", "manual/a": "SKIPPED", "manual/b": "SUCCEEDED"}, got.final)
	s.Equal(domain.RunBuffered, got.answers["manual/a"].Status, "a waited when it was decided")
	s.Equal(domain.RunBuffered, got.answers["manual/b"].Status)
	s.Equal("overlap cancel_other: superseded by the tick of "+s.t0.Add(10*time.Second).Format(time.RFC3339), got.reasons["manual/a"])
	s.Equal("cancel", got.targets.stopped[wfID(name, "tick", s.t0)])
	s.Equal([]string{wfID(name, "tick", s.t0), wfID(name, "manual/b", s.t0)}, got.targets.started)
}

// terminate_other: each fire terminates the runs before it and starts at once: the tick's
// and a's runs end terminated, b's runs.
func (s *ScheduleWorkflowSuite) TestAtOneInstantTerminateOtherKeepsTheNewest() {
	name := "instant-terminate-other"
	got := s.fireAtOnce(name, withOverlap(domain.OverlapTerminateOther))
	s.Equal(map[string]string{"tick": "TERMINATED", "manual/a": "TERMINATED", "manual/b": "SUCCEEDED"}, got.final)
	s.Equal(domain.RunRunning, got.answers["manual/a"].Status)
	s.Equal(domain.RunRunning, got.answers["manual/b"].Status)
	s.Equal("terminate", got.targets.stopped[wfID(name, "tick", s.t0)], "a terminated the tick's run")
	s.Equal("terminate", got.targets.stopped[wfID(name, "manual/a", s.t0)], "b terminated a's run")
	s.NotContains(got.targets.stopped, wfID(name, "manual/b", s.t0))
	s.Equal([]string{wfID(name, "tick", s.t0), wfID(name, "manual/a", s.t0), wfID(name, "manual/b", s.t0)}, got.targets.started)
}

// allow_all: all three run side by side.
func (s *ScheduleWorkflowSuite) TestAtOneInstantAllowAllRunsAll() {
	got := s.fireAtOnce("instant-allow-all", withOverlap(domain.OverlapAllowAll))
	s.Equal(map[string]string{"tick": "RUNNING", "manual/a": "RUNNING", "manual/b": "RUNNING"}, got.early)
	s.Equal(map[string]string{"tick": "SUCCEEDED", "manual/a": "SUCCEEDED", "manual/b": "SUCCEEDED"}, got.final)
	s.Equal(3, got.targets.maxInFlight(time.Minute))
}

// allow_all with max_concurrent 2: the tick and a take the two places, b waits and runs
// when one ends.
func (s *ScheduleWorkflowSuite) TestAtOneInstantMaxConcurrentBuffersBeyondTheCap() {
	got := s.fireAtOnce("instant-cap-buffer", capped(2, domain.WhenFullBuffer))
	s.Equal(map[string]string{"tick": "RUNNING", "manual/a": "RUNNING", "manual/b": "BUFFERED"}, got.early)
	s.Equal(map[string]string{"tick": "SUCCEEDED", "manual/a": "SUCCEEDED", "manual/b": "SUCCEEDED"}, got.final)
	s.Equal(domain.RunRunning, got.answers["manual/a"].Status)
	s.Equal(domain.RunBuffered, got.answers["manual/b"].Status)
	s.Equal("max_concurrent 2: 2 runs in flight; waits for one to end", got.answers["manual/b"].Reason)
	s.Equal(2, got.targets.maxInFlight(time.Minute))
}

// allow_all with max_concurrent 1 and overlap_when_full skip: the tick takes the place, a
// and b are skipped, saying so.
func (s *ScheduleWorkflowSuite) TestAtOneInstantMaxConcurrentSkipsWhenFull() {
	got := s.fireAtOnce("instant-cap-skip", capped(1, domain.WhenFullSkip))
	s.Equal(map[string]string{"tick": "RUNNING", "manual/a": "SKIPPED", "manual/b": "SKIPPED"}, got.early)
	s.Equal(map[string]string{"tick": "SUCCEEDED", "manual/a": "SKIPPED", "manual/b": "SKIPPED"}, got.final)
	for _, id := range []string{"manual/a", "manual/b"} {
		s.Equal(domain.RunSkipped, got.answers[id].Status)
		s.Equal("max_concurrent 1: 1 run in flight (overlap_when_full skip)", got.reasons[id])
	}
	s.Equal(1, got.targets.maxInFlight(time.Minute))
}

// The signal door decides in the same order: a tick and two trigger signals at one instant
// under skip start one run; the signals, which have no caller, leave their SKIPPED rows.
func (s *ScheduleWorkflowSuite) TestAtOneInstantSignalsAreDecidedInOrderToo() {
	start := s.t0.Add(10 * time.Second)
	in := s.createSchedule("instant-signals", schedulespec.Spec{Interval: every(1, "HOURS"), StartAt: &start}, s.t0, withOverlap(domain.OverlapSkip))
	targets := s.mockTargets(time.Minute)
	for _, id := range []string{"a", "b"} {
		s.env.RegisterDelayedCallback(func() {
			s.env.SignalWorkflow(workflows.ScheduleTrigger, workflows.TriggerRequest{RequestID: id})
		}, 10*time.Second)
	}
	s.stopAt(5 * minute)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	final, _, _ := s.byFire("instant-signals")
	s.Equal(map[string]string{"tick": "SUCCEEDED", "manual/a": "SKIPPED", "manual/b": "SKIPPED"}, final)
	s.Len(targets.started, 1)
	row, err := s.store.GetSchedule(context.Background(), "instant-signals")
	s.Require().NoError(err)
	s.Equal(int64(2), row.SkippedCount)
}

// Commands of one instant are decided in the order they came, each after the one before
// it: a pause and then a reschedule, both accepted at their doors (the schedule was not
// paused yet), leave the schedule paused and refuse the reschedule as the rules do for a
// paused schedule — the update answers the loop's refusal. (Decided beside each other, the
// reschedule was judged before the pause took effect and left a paused schedule with a
// pending reschedule.)
func (s *ScheduleWorkflowSuite) TestAtOneInstantARescheduleAfterAPauseIsRefused() {
	in := s.createSchedule("instant-pause-reschedule", schedulespec.Spec{Cron: "0 * * * *"}, s.t0, nil)
	var paused workflows.ScheduleDescription
	var rescheduleErr error
	answered := 0
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.SchedulePause, workflows.PauseRequest{Note: "freeze"}, func(r any, err error) {
			s.Require().NoError(err)
			paused, answered = r.(workflows.ScheduleDescription), answered+1
		})
	}, 10*time.Second)
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.ScheduleReschedule, workflows.RescheduleRequest{NextRunAt: s.t0.Add(10 * minute)}, func(_ any, err error) {
			rescheduleErr, answered = err, answered+1
		})
	}, 10*time.Second)
	s.stopAt(time.Minute)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.Require().Equal(2, answered, "both updates were accepted and answered")
	s.True(paused.Paused)
	s.True(paused.Changed)
	refusal := workflows.RefusalOf(rescheduleErr)
	s.Require().NotNil(refusal, "the reschedule is refused: %v", rescheduleErr)
	s.Equal(workflows.ErrCommandConflict, refusal.Kind)
	s.Equal("paused", refusal.Field)
	row, err := s.store.GetSchedule(context.Background(), "instant-pause-reschedule")
	s.Require().NoError(err)
	s.True(row.Paused)
	s.Nil(row.RescheduledTo, "no reschedule pending on a paused schedule")
	s.Nil(row.NextRunAt)
}
