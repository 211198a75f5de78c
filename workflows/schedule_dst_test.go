package workflows_test

import (
	"fmt"
	"sort"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/workflows"
)

// A schedule's DST policy (spec.dst) decides, in its workflow, the fires of a clock change:
// at Europe/Berlin's spring-forward (2026-03-29 01:00 UTC, 02:00 CET → 03:00 CEST) and
// fall-back (2026-10-25 01:00 UTC, 03:00 CEST → 02:00 CET), cron "15,45 1-3 * * *" fires at
// exactly these instants under each of the four policies (and without one, as before: once
// and shift). Each target runs for two days, so the workflow has runs in flight throughout
// and decides every fire itself (it never rests and hands them to the planner).
func (s *ScheduleWorkflowSuite) TestDSTPolicyDecidesTheFiresOfAClockChange() {
	at := func(month time.Month, day, hour, minute int) time.Time {
		return time.Date(2026, month, day, hour, minute, 0, 0, time.UTC)
	}
	springFrom, springUntil := at(3, 29, 0, 14), at(3, 29, 2, 0)
	fallFrom, fallUntil := at(10, 24, 23, 14), at(10, 25, 3, 0)
	springShift := []time.Time{at(3, 29, 0, 15), at(3, 29, 0, 45), at(3, 29, 1, 0), at(3, 29, 1, 15), at(3, 29, 1, 45)}
	springSkip := []time.Time{at(3, 29, 0, 15), at(3, 29, 0, 45), at(3, 29, 1, 15), at(3, 29, 1, 45)}
	fallOnce := []time.Time{at(10, 24, 23, 15), at(10, 24, 23, 45), at(10, 25, 0, 15), at(10, 25, 0, 45), at(10, 25, 2, 15), at(10, 25, 2, 45)}
	fallTwice := []time.Time{at(10, 24, 23, 15), at(10, 24, 23, 45), at(10, 25, 0, 15), at(10, 25, 0, 45),
		at(10, 25, 1, 15), at(10, 25, 1, 45), at(10, 25, 2, 15), at(10, 25, 2, 45)}

	for i, p := range []struct {
		dst          *schedulespec.DST
		spring, fall []time.Time
	}{
		{nil, springShift, fallOnce},
		{&schedulespec.DST{Repeated: "once", Skipped: "shift"}, springShift, fallOnce},
		{&schedulespec.DST{Repeated: "once", Skipped: "skip"}, springSkip, fallOnce},
		{&schedulespec.DST{Repeated: "twice", Skipped: "shift"}, springShift, fallTwice},
		{&schedulespec.DST{Repeated: "twice", Skipped: "skip"}, springSkip, fallTwice},
	} {
		label := "no dst"
		if p.dst != nil {
			label = fmt.Sprintf("repeated=%s skipped=%s", p.dst.Repeated, p.dst.Skipped)
		}
		for _, tr := range []struct {
			name        string
			from, until time.Time
			want        []time.Time
		}{{"spring-forward", springFrom, springUntil, p.spring}, {"fall-back", fallFrom, fallUntil, p.fall}} {
			s.Run(tr.name+", "+label, func() {
				name := fmt.Sprintf("dst-%d-%s", i, tr.name)
				s.freshEnv(tr.from)
				in := s.createSchedule(name, schedulespec.Spec{Cron: "15,45 1-3 * * *", Timezone: "Europe/Berlin", DST: p.dst},
					tr.from, withOverlap(domain.OverlapAllowAll))
				targets := s.mockTargets(48 * time.Hour)
				s.stopAt(tr.until.Sub(tr.from))
				s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

				var ticks []time.Time
				for _, r := range s.runs(name) {
					s.Equal(domain.TriggerScheduled, r.Trigger)
					s.Equal(domain.RunRunning, r.Status, "tick %s", r.ScheduledAt)
					ticks = append(ticks, r.ScheduledAt.UTC())
				}
				s.Equal(tr.want, ticks, "the ticks recorded")
				var began []time.Time
				for _, b := range targets.began {
					began = append(began, b.UTC())
				}
				sort.Slice(began, func(i, j int) bool { return began[i].Before(began[j]) })
				s.Equal(tr.want, began, "the instants the targets began")
			})
		}
	}
}

// freshEnv gives the suite a new test environment whose clock starts at start (for a
// subtest: SetupTest runs once per test method).
func (s *ScheduleWorkflowSuite) freshEnv(start time.Time) {
	s.env = s.NewTestWorkflowEnvironment()
	s.env.RegisterWorkflowWithOptions(workflows.ScheduleWorkflow, workflow.RegisterOptions{Name: workflows.ScheduleWorkflowType})
	s.env.RegisterActivity(s.acts)
	s.t0 = start
	s.env.SetStartTime(start)
}
