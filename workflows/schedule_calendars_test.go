package workflows_test

import (
	"context"
	"encoding/json"
	"time"

	"github.com/stretchr/testify/mock"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/scheduleplan"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// calendar stores a calendar excluding the ranges given.
func (s *ScheduleWorkflowSuite) calendar(name string, ranges ...[2]time.Time) {
	rs := []schedulespec.CalendarRange{}
	for _, r := range ranges {
		rs = append(rs, schedulespec.CalendarRange{Start: r[0].Format(time.RFC3339), End: r[1].Format(time.RFC3339)})
	}
	b, err := json.Marshal(rs)
	s.Require().NoError(err)
	_, err = s.store.CreateCalendar(context.Background(), store.NewCalendar{Name: name, Timezone: "UTC", Dates: []string{}, Ranges: b})
	s.Require().NoError(err)
}

// excluding makes a schedule's spec exclude the calendars named.
func excluding(spec schedulespec.Spec, names ...string) schedulespec.Spec {
	spec.ExcludeCalendars = names
	return spec
}

// A tick a calendar excludes is recorded SKIPPED naming the calendar, and decided before the
// overlap policy: under terminate_other it does not stop the run in flight (which runs to
// its end), and nothing starts for it. The tick after it is decided as usual.
func (s *ScheduleWorkflowSuite) TestExcludedTickIsSkippedNamingTheCalendarAndStopsNothing() {
	s.calendar("change-freeze", [2]time.Time{s.t0.Add(90 * time.Second), s.t0.Add(150 * time.Second)})
	start := s.t0
	in := s.createSchedule("frozen", excluding(schedulespec.Spec{Interval: every(1, "MINUTES"), StartAt: &start}, "change-freeze"), s.t0,
		withOverlap(domain.OverlapTerminateOther))
	targets := s.mockTargets(100 * time.Second)
	s.stopAt(3*minute + 10*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.Equal(map[time.Duration]string{1 * minute: "SUCCEEDED", 2 * minute: "SKIPPED", 3 * minute: "RUNNING"}, s.outcomes("frozen"))
	runs := s.runs("frozen")
	s.Equal("excluded by calendar change-freeze", runs[1].Reason)
	s.Nil(runs[1].FiredAt)
	s.Empty(targets.stopped, "the excluded tick stopped nothing")
	s.Equal([]string{"schedule/frozen/run/2026-03-01T12:01:00Z", "schedule/frozen/run/2026-03-01T12:03:00Z"}, targets.started)
	row, err := s.store.GetSchedule(context.Background(), "frozen")
	s.Require().NoError(err)
	s.Equal(int64(1), row.SkippedCount)
}

// A calendar edited after the workflow asked, before the tick's record: the record judges
// the tick again in its own transaction, holding the calendar, and records it SKIPPED —
// and the workflow, answered SKIPPED, starts nothing.
func (s *ScheduleWorkflowSuite) TestCalendarEditedBeforeTheRecordIsObeyed() {
	s.calendar("late-edit", [2]time.Time{s.t0.Add(50 * time.Second), s.t0.Add(70 * time.Second)})
	start := s.t0
	in := s.createSchedule("raced", excluding(schedulespec.Spec{Interval: every(1, "MINUTES"), StartAt: &start}, "late-edit"), s.t0,
		withOverlap(domain.OverlapAllowAll))
	targets := s.mockTargets(10 * time.Second)
	// The workflow's question was answered before the edit excluded the tick.
	s.env.OnActivity(s.acts.ExcludedBy, mock.Anything, mock.Anything).Return("", nil)
	s.stopAt(2*minute + 30*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.Equal(map[time.Duration]string{1 * minute: "SKIPPED", 2 * minute: "SUCCEEDED"}, s.outcomes("raced"))
	s.Equal("excluded by calendar late-edit", s.runs("raced")[0].Reason)
	s.Equal([]string{"schedule/raced/run/2026-03-01T12:02:00Z"}, targets.started, "nothing started for the excluded tick")
}

// Catch-up after an outage: the ticks a calendar excludes are SKIPPED naming it, inside the
// catch-up window and beyond it (they would not have fired: not MISSED); the others are
// caught up, or MISSED, as any.
func (s *ScheduleWorkflowSuite) TestCatchUpSkipsTheTicksACalendarExcludes() {
	start := s.t0.Add(-6 * minute)
	s.calendar("night", [2]time.Time{s.t0.Add(-5*minute - 30*time.Second), s.t0.Add(-3*minute - 30*time.Second)},
		[2]time.Time{s.t0.Add(-90 * time.Second), s.t0.Add(-30 * time.Second)})
	in := s.createSchedule("outage", excluding(schedulespec.Spec{Interval: every(1, "MINUTES"), StartAt: &start}, "night"), start,
		func(p *store.NewSchedule) { p.CatchupWindowMs = (2*minute + 30*time.Second).Milliseconds() })
	// No worker ran since before the first tick: an outage.
	s.stopAt(10 * time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.Equal(map[time.Duration]string{
		-5 * minute: "SKIPPED", -4 * minute: "SKIPPED", // excluded, beyond the window
		-3 * minute: "MISSED", // beyond the window
		-2 * minute: "SUCCEEDED/catchup", -1 * minute: "SKIPPED/catchup", 0: "SUCCEEDED",
	}, s.outcomes("outage"))
	for _, r := range s.runs("outage") {
		if r.Status == domain.RunSkipped {
			s.Equal("excluded by calendar night", r.Reason)
		}
	}
}

// A backfill fills the ticks the spec gives in its range, and a tick a calendar excludes is
// recorded SKIPPED naming it, trigger backfill: a backfill does not run what the calendar
// excludes (a manual trigger does, for a day that must run anyway).
func (s *ScheduleWorkflowSuite) TestBackfillOfExcludedTicksRecordsThemSkipped() {
	s.calendar("holiday", [2]time.Time{s.t0.Add(-5*minute - 30*time.Second), s.t0.Add(-3*minute - 30*time.Second)})
	in := s.createSchedule("refill", excluding(schedulespec.Spec{Cron: "* * * * *"}, "holiday"), s.t0, nil)
	var res workflows.BackfillResult
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.ScheduleBackfill, workflows.BackfillRequest{Start: s.t0.Add(-6 * minute), End: s.t0.Add(-2 * minute)},
			func(r any, err error) {
				s.NoError(err)
				res = r.(workflows.BackfillResult)
			})
	}, 5*time.Second)
	s.stopAt(30 * time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.Equal(5, res.Ticks)
	s.Equal(map[time.Duration]string{
		-6 * minute: "SUCCEEDED/backfill", -5 * minute: "SKIPPED/backfill", -4 * minute: "SKIPPED/backfill",
		-3 * minute: "SUCCEEDED/backfill", -2 * minute: "SUCCEEDED/backfill",
	}, s.outcomes("refill"))
}

// A manual trigger is an explicit request: a calendar does not skip it.
func (s *ScheduleWorkflowSuite) TestManualTriggerOnAnExcludedDayRuns() {
	s.calendar("all-day", [2]time.Time{s.t0.Add(-time.Hour), s.t0.Add(time.Hour)})
	in := s.createSchedule("manual-anyway", excluding(schedulespec.Spec{Cron: "0 0 1 1 *"}, "all-day"), s.t0, nil)
	var got workflows.TriggerResult
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.ScheduleTrigger, workflows.TriggerRequest{RequestID: "r1"}, func(r any, err error) {
			s.NoError(err)
			got = r.(workflows.TriggerResult)
		})
	}, 5*time.Second)
	s.stopAt(10 * time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	s.Equal(domain.RunSucceeded, got.Status)
}

// A one-time schedule woken with its workflow (a workflow action) fires its one tick, waits
// for the run to end, and rests with its completion planned: the planner's completion step
// then marks it completed.
func (s *ScheduleWorkflowSuite) TestOneTimeScheduleFiresOnceThenCompletes() {
	at := s.t0.Add(30 * time.Second)
	in := s.createSchedule("remind", schedulespec.Spec{At: &at}, s.t0, func(p *store.NewSchedule) {
		workflowAction(p)
		p.Watermark = &s.t0
	})
	targets := s.mockTargets(20 * time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	s.True(s.env.IsWorkflowCompleted(), "it rests once its run ended")
	s.NoError(s.env.GetWorkflowError())

	s.Equal([]string{"schedule/remind/run/2026-03-01T12:00:30Z"}, targets.started, "fired once")
	s.Equal(map[time.Duration]string{30 * time.Second: "SUCCEEDED"}, s.outcomes("remind"))
	row, err := s.store.GetSchedule(context.Background(), "remind")
	s.Require().NoError(err)
	s.Equal(scheduleplan.Complete, *row.PlanAction, "its rest plans its completion")
	s.Nil(row.CompletedAt)

	// The planner completes the rest (its run has ended), then the completion.
	ok, err := s.store.CompleteScheduleRest(context.Background(), row.ID, *row.Owner)
	s.Require().NoError(err)
	s.True(ok)
	planner := &activities.ScheduleActivities{Store: s.store}
	res, err := planner.PlanRound(context.Background(), s.env.Now())
	s.Require().NoError(err)
	s.Equal(1, res.Completed)
	row, err = s.store.GetSchedule(context.Background(), "remind")
	s.Require().NoError(err)
	s.NotNil(row.CompletedAt)
}

// An update that makes a schedule one-time, with an at the API took a moment in the past
// (within the catch-up window), fires it: the reload counts ticks from just before at, not
// from the reload, which came after it.
func (s *ScheduleWorkflowSuite) TestOneTimeSpecSetByAnUpdateFiresItsAtEvenJustPast() {
	in := s.createSchedule("retimed", schedulespec.Spec{Cron: "0 0 1 1 *"}, s.t0, nil)
	at := s.t0.Add(20 * time.Second)
	s.env.RegisterDelayedCallback(func() {
		spec, _ := json.Marshal(schedulespec.Spec{At: &at})
		_, err := s.store.UpdateSchedule(context.Background(), store.ScheduleChange{
			Name: "retimed", Spec: spec, Action: json.RawMessage(`{"kind":"event","topic":"billing","type":"invoice.due"}`), Overlap: "skip",
		})
		s.NoError(err)
		s.update(workflows.ScheduleRefresh, nil, func(r any, err error) { s.NoError(err) })
	}, 25*time.Second) // the refresh reaches the workflow after at
	s.stopAt(40 * time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	s.Equal(map[time.Duration]string{20 * time.Second: "SUCCEEDED"}, s.outcomes("retimed"))
}
