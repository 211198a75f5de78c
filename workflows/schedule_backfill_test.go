package workflows_test

import (
	"context"
	"errors"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// refusedUpdate sends an update that the validator must refuse, and returns the error.
func (s *ScheduleWorkflowSuite) refusedUpdate(name string, arg any, refused *error) {
	s.updates++
	s.env.UpdateWorkflow(name, "refused-"+time.Duration(s.updates).String(), &testsuite.TestUpdateCallback{
		OnReject:   func(err error) { *refused = err },
		OnAccept:   func() { s.Fail("update accepted", "%s %+v", name, arg) },
		OnComplete: func(any, error) {},
	}, arg)
}

// A backfill whose payload the update path refuses is refused on the signal path too, by
// the same validateBackfill, and changes nothing: no run, no queued range. (Before, a
// signal without a start backfilled everything from start_at, and one whose end came
// before its start was accepted and queued nothing.)
func (s *ScheduleWorkflowSuite) TestBadBackfillIsRefusedOnTheSignalPathAsOnTheUpdatePath() {
	start := s.t0.Add(-10 * minute)
	in := s.createSchedule("bad-backfill", schedulespec.Spec{Interval: every(1, "HOURS"), StartAt: &start}, s.t0, nil)
	bad := []workflows.BackfillRequest{
		{End: s.t0.Add(-minute)},                                    // no start
		{Start: s.t0.Add(-5 * minute), End: s.t0.Add(-8 * minute)},  // end before start
		{Start: s.t0.Add(-9 * minute), End: s.t0, Overlap: "never"}, // unknown overlap
	}
	refused := make([]error, len(bad))
	var described workflows.ScheduleDescription
	for i, req := range bad {
		s.env.RegisterDelayedCallback(func() {
			s.env.SignalWorkflow(workflows.ScheduleBackfill, req)
			s.refusedUpdate(workflows.ScheduleBackfill, req, &refused[i])
		}, time.Duration(i+1)*time.Second)
	}
	s.env.RegisterDelayedCallback(func() {
		v, err := s.env.QueryWorkflow(workflows.ScheduleDescribe)
		s.Require().NoError(err)
		s.Require().NoError(v.Get(&described))
	}, 30*time.Second)
	s.stopAt(time.Minute)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.Empty(s.runs("bad-backfill"), "a refused backfill records nothing")
	row, err := s.store.GetSchedule(context.Background(), "bad-backfill")
	s.Require().NoError(err)
	recorded, err := s.store.ScheduleRefusals(context.Background(), row.ID, 10)
	s.Require().NoError(err)
	s.Require().Len(recorded, len(bad), "each refused signal is recorded where the schedule's view lists it")
	for i, field := range []string{"overlap", "end", "start"} { // newest first
		s.Equal(field, recorded[i].Field)
		s.Equal("signal", recorded[i].Door)
		s.Equal(workflows.ScheduleBackfill, recorded[i].Command)
	}
	s.Zero(described.Backfills, "a refused backfill queues nothing")
	for i, field := range []string{"start", "end", "overlap"} {
		var appErr *temporal.ApplicationError
		s.Require().True(errors.As(refused[i], &appErr), "update %d: %v", i, refused[i])
		s.Equal(workflows.ErrBadCommand, appErr.Type())
		r := workflows.RefusalOf(refused[i])
		s.Require().NotNil(r)
		s.Equal(field, r.Field)
	}
}

// Backfill fills the ticks the spec gives in the range whenever the schedule was created:
// an hourly cron and an hourly interval created now, backfilled over yesterday, each run
// yesterday's 24 ticks. The interval's grid (anchored by default at its creation) extends
// backwards on the same phase.
func (s *ScheduleWorkflowSuite) TestBackfillBeforeCreationFillsTheTicksTheSpecGives() {
	for _, c := range []struct {
		name  string
		spec  schedulespec.Spec
		first time.Time
	}{
		{"bf-cron", schedulespec.Spec{Cron: "0 * * * *"}, time.Date(2026, 2, 28, 0, 0, 0, 0, time.UTC)},
		{"bf-interval", schedulespec.Spec{Interval: every(1, "HOURS")}, time.Date(2026, 2, 28, 0, 17, 0, 0, time.UTC)},
	} {
		s.Run(c.name, func() {
			s.SetupTest()
			s.t0 = time.Date(2026, 3, 1, 12, 17, 0, 0, time.UTC) // created at 12:17: the interval's grid is at :17
			s.env.SetStartTime(s.t0)
			in := s.createSchedule(c.name, c.spec, s.t0, nil)
			yesterday := time.Date(2026, 2, 28, 0, 0, 0, 0, time.UTC)
			var result workflows.BackfillResult
			s.env.RegisterDelayedCallback(func() {
				s.update(workflows.ScheduleBackfill, workflows.BackfillRequest{Start: yesterday, End: yesterday.Add(24*time.Hour - time.Second)},
					func(r any, err error) {
						s.NoError(err)
						result = r.(workflows.BackfillResult)
					})
			}, time.Minute)
			s.stopAt(10 * time.Minute)
			s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

			s.Equal(24, result.Ticks)
			runs := s.runs(c.name)
			s.Require().Len(runs, 24)
			for i, r := range runs {
				s.Equal(c.first.Add(time.Duration(i)*time.Hour), r.ScheduledAt.UTC(), "tick %d", i)
				s.Equal(domain.TriggerBackfill, r.Trigger)
				s.Equal(domain.RunSucceeded, r.Status)
			}
		})
	}
}

// A range that holds no tick of the spec is refused with the reason, and records nothing:
// a yearly cron over one day, and an interval whose start_at the user set after the range.
func (s *ScheduleWorkflowSuite) TestBackfillOfARangeWithoutTicksIsRefusedWithTheReason() {
	userStart := time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name, reason string
		spec         schedulespec.Spec
	}{
		{"bf-yearly", `no tick of cron "0 0 1 1 *" (UTC) falls in the range`, schedulespec.Spec{Cron: "0 0 1 1 *"}},
		{"bf-started", "ends before the spec's start_at 2026-03-01T11:00:00Z", schedulespec.Spec{Interval: every(1, "MINUTES"), StartAt: &userStart}},
	} {
		s.Run(c.name, func() {
			s.SetupTest()
			in := s.createSchedule(c.name, c.spec, s.t0, nil)
			yesterday := s.t0.Add(-24 * time.Hour)
			var refused error
			var described workflows.ScheduleDescription
			s.env.RegisterDelayedCallback(func() {
				s.refusedUpdate(workflows.ScheduleBackfill, workflows.BackfillRequest{Start: yesterday, End: yesterday.Add(time.Hour)}, &refused)
			}, time.Minute)
			s.env.RegisterDelayedCallback(func() {
				v, err := s.env.QueryWorkflow(workflows.ScheduleDescribe)
				s.Require().NoError(err)
				s.Require().NoError(v.Get(&described))
			}, 90*time.Second)
			s.stopAt(2 * time.Minute)
			s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
			var appErr *temporal.ApplicationError
			s.Require().True(errors.As(refused, &appErr), "%v", refused)
			s.Equal(workflows.ErrBackfillEmpty, appErr.Type())
			s.Contains(appErr.Message(), c.reason)
			s.Zero(described.Backfills)
			for _, r := range s.runs(c.name) {
				s.NotEqual(domain.TriggerBackfill, r.Trigger, "nothing was backfilled")
			}
		})
	}
}

// A backfill that reaches the workflow before its definition is loaded (the validator
// cannot count ticks yet) is refused by the handler with the same type and reason as once
// loaded, not accepted with zero ticks. The API's answer depended on the race before.
func (s *ScheduleWorkflowSuite) TestBackfillBeforeTheDefinitionLoadsIsRefusedWithTheReason() {
	in := s.createSchedule("bf-early", schedulespec.Spec{Cron: "0 0 1 1 *"}, s.t0, nil)
	yesterday := s.t0.Add(-24 * time.Hour)
	var outcome error
	answered := false
	s.env.RegisterDelayedCallback(func() {
		s.env.UpdateWorkflow(workflows.ScheduleBackfill, "early", &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { outcome, answered = err, true },
			OnAccept:   func() {},
			OnComplete: func(_ any, err error) { outcome, answered = err, true },
		}, workflows.BackfillRequest{Start: yesterday, End: yesterday.Add(time.Hour)})
	}, 0)
	s.stopAt(time.Minute)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	s.Require().True(answered, "the update was answered")
	var appErr *temporal.ApplicationError
	s.Require().True(errors.As(outcome, &appErr), "%v", outcome)
	s.Equal(workflows.ErrBackfillEmpty, appErr.Type())
	s.Contains(appErr.Message(), `no tick of cron "0 0 1 1 *" (UTC) falls in the range`)
	for _, r := range s.runs("bf-early") {
		s.NotEqual(domain.TriggerBackfill, r.Trigger, "nothing was backfilled")
	}
}

// A backfill is an explicit request, like a trigger: it runs while the schedule is paused
// (as Temporal's does), and what it has still to run is in PostgreSQL as it goes — its
// pending ranges on the schedule's row, its ticks waiting under the overlap policy as
// BUFFERED runs, which start one after another while the schedule stays paused.
func (s *ScheduleWorkflowSuite) TestBackfillRunsWhilePausedAndShowsWhatWaits() {
	in := s.createSchedule("bf-paused", schedulespec.Spec{Cron: "0 * * * *"}, s.t0, func(p *store.NewSchedule) {
		workflowAction(p)
		p.Overlap = domain.OverlapBufferAll
		p.Paused = true
	})
	s.mockTargets(100 * time.Second)
	// Every pending-backfill mirror write, as the row held it right after.
	var mirrored [][]store.PendingBackfill
	s.env.OnActivity(s.acts.MirrorBackfills, mock.Anything, mock.Anything).Return(func(ctx context.Context, w activities.WaitingBackfills) error {
		if err := s.acts.MirrorBackfills(ctx, w); err != nil {
			return err
		}
		row, err := s.store.GetScheduleByID(ctx, w.ScheduleID)
		s.Require().NoError(err)
		pending, err := store.Backfills(row)
		s.Require().NoError(err)
		mirrored = append(mirrored, pending)
		return nil
	})
	first := s.t0.Add(-25 * time.Hour)
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.ScheduleBackfill, workflows.BackfillRequest{Start: first, End: s.t0.Add(-time.Hour)},
			func(r any, err error) {
				s.NoError(err)
				s.Equal(25, r.(workflows.BackfillResult).Ticks)
			})
	}, time.Minute)
	var atFiveMinutes map[time.Duration]string
	s.env.RegisterDelayedCallback(func() { atFiveMinutes = s.outcomes("bf-paused") }, 5*time.Minute)
	s.stopAt(5*time.Minute + time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	// Queued: 25 to run; each round of 10 fires them (the first starts, the rest wait
	// behind it under buffer_all) and the row says what is left.
	s.Require().GreaterOrEqual(len(mirrored), 2)
	s.Equal([]store.PendingBackfill{{Start: first, End: s.t0.Add(-time.Hour), Remaining: 25}}, mirrored[0])
	s.Empty(mirrored[len(mirrored)-1], "every tick of the range fired: nothing left to backfill")
	// By 5m, while still paused: the first three ran one after another (100 s each), the
	// fourth runs, and 21 wait as BUFFERED rows.
	counts := map[string]int{}
	for _, v := range atFiveMinutes {
		counts[v]++
	}
	s.Equal(map[string]int{"SUCCEEDED/backfill": 2, "RUNNING/backfill": 1, "BUFFERED/backfill": 22}, counts)
	row, err := s.store.GetSchedule(context.Background(), "bf-paused")
	s.Require().NoError(err)
	s.True(row.Paused, "the schedule stayed paused throughout")
}

// The workflow judges a command by its own clock, whatever the door: a backfill whose end
// lies hours ahead of the workflow's now, and a reschedule to 2020, are refused as signals
// and as updates with the same refusal (the test's clock starts at t0, months before the
// machine's, so only the workflow's clock can tell them apart from valid ones). Nothing
// fires before its tick.
func (s *ScheduleWorkflowSuite) TestCommandsAreJudgedByTheWorkflowsClock() {
	start := s.t0.Add(-3 * time.Hour)
	in := s.createSchedule("own-clock", schedulespec.Spec{Interval: every(1, "HOURS"), StartAt: &start}, s.t0, nil)
	early := workflows.BackfillRequest{Start: s.t0.Add(-2*time.Hour - 30*minute), End: s.t0.Add(5 * time.Hour)}
	past := workflows.RescheduleRequest{NextRunAt: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)}
	var refusedBackfill, refusedReschedule error
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(workflows.ScheduleBackfill, early)
		s.env.SignalWorkflow(workflows.ScheduleReschedule, past)
		s.refusedUpdate(workflows.ScheduleBackfill, early, &refusedBackfill)
		s.refusedUpdate(workflows.ScheduleReschedule, past, &refusedReschedule)
	}, time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	backfillRefusal, rescheduleRefusal := workflows.RefusalOf(refusedBackfill), workflows.RefusalOf(refusedReschedule)
	s.Require().NotNil(backfillRefusal, "%v", refusedBackfill)
	s.Require().NotNil(rescheduleRefusal, "%v", refusedReschedule)
	s.Equal("end", backfillRefusal.Field)
	s.Contains(backfillRefusal.Reason, "is in the future")
	s.Equal("next_run_at", rescheduleRefusal.Field)
	s.Contains(rescheduleRefusal.Reason, "is in the past")

	row, err := s.store.GetSchedule(context.Background(), "own-clock")
	s.Require().NoError(err)
	recorded, err := s.store.ScheduleRefusals(context.Background(), row.ID, 10)
	s.Require().NoError(err)
	s.Require().Len(recorded, 2)
	got := map[string]string{}
	for _, r := range recorded {
		got[r.Command] = r.Field + ": " + r.Reason
	}
	s.Equal(backfillRefusal.Error(), got[workflows.ScheduleBackfill], "the signal's refusal is the update's")
	s.Equal(rescheduleRefusal.Error(), got[workflows.ScheduleReschedule], "the signal's refusal is the update's")

	s.Empty(s.runs("own-clock"), "nothing fired: the refused commands changed nothing, and no tick came")
	s.True(s.env.IsWorkflowCompleted(), "with nothing in flight, the schedule rested")
	row, err = s.store.GetSchedule(context.Background(), "own-clock")
	s.Require().NoError(err)
	s.Require().NotNil(row.NextRunAt)
	s.Equal(s.t0.Add(time.Hour), row.NextRunAt.UTC(), "its next fire is the next hourly tick, not an early one")
}

// A schedule holds at most MaxPendingBackfills backfills at once: one more is refused, on
// the update path and on the signal path alike, with a conflict naming the backfills, and
// queues nothing; the ones held go on.
func (s *ScheduleWorkflowSuite) TestPendingBackfillsAreCapped() {
	in := s.createSchedule("bf-cap", schedulespec.Spec{Cron: "* * * * *"}, s.t0.Add(-48*time.Hour), func(p *store.NewSchedule) {
		workflowAction(p)
		p.Overlap = domain.OverlapBufferAll
		p.Paused = true
	})
	s.mockTargets(time.Hour)
	// Each range holds 120 ticks: at 10 a round, none is done within the first round.
	ranges := make([]workflows.BackfillRequest, workflows.MaxPendingBackfills+1)
	for i := range ranges {
		start := s.t0.Add(-time.Duration(2*(i+1)) * time.Hour)
		ranges[i] = workflows.BackfillRequest{Start: start, End: start.Add(2*time.Hour - time.Second)}
	}
	accepted := 0
	var refused error
	var described workflows.ScheduleDescription
	s.env.RegisterDelayedCallback(func() {
		for _, r := range ranges[:workflows.MaxPendingBackfills] {
			s.update(workflows.ScheduleBackfill, r, func(_ any, err error) {
				s.NoError(err)
				accepted++
			})
		}
		s.refusedUpdate(workflows.ScheduleBackfill, ranges[workflows.MaxPendingBackfills], &refused)
		s.env.SignalWorkflow(workflows.ScheduleBackfill, ranges[workflows.MaxPendingBackfills])
	}, time.Minute)
	s.env.RegisterDelayedCallback(func() {
		v, err := s.env.QueryWorkflow(workflows.ScheduleDescribe)
		s.Require().NoError(err)
		s.Require().NoError(v.Get(&described))
	}, time.Minute+time.Second)
	s.stopAt(2 * time.Minute)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.Equal(workflows.MaxPendingBackfills, accepted)
	r := workflows.RefusalOf(refused)
	s.Require().NotNil(r, "%v", refused)
	s.Equal(workflows.ErrCommandConflict, r.Kind)
	s.Equal("backfills", r.Field)
	s.Contains(r.Reason, "at most 10 at once")
	s.LessOrEqual(described.Backfills, workflows.MaxPendingBackfills, "the refused backfill was not queued")
	row, err := s.store.GetSchedule(context.Background(), "bf-cap")
	s.Require().NoError(err)
	recorded, err := s.store.ScheduleRefusals(context.Background(), row.ID, 10)
	s.Require().NoError(err)
	s.Require().Len(recorded, 1, "the refused signal is recorded")
	s.Equal("backfills", recorded[0].Field)
	s.Equal("signal", recorded[0].Door)
	last := ranges[workflows.MaxPendingBackfills]
	for _, run := range s.runs("bf-cap") {
		at := run.ScheduledAt.UTC()
		s.True(at.Before(last.Start) || at.After(last.End), "no tick of the refused range fired: %s", at)
	}
}
