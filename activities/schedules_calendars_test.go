package activities_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/scheduleplan"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/store"
)

// calendar creates a calendar in the store, as POST /calendars stores one.
func (e *plannerEnv) calendar(name string, dates []string, ranges ...schedulespec.CalendarRange) {
	e.t.Helper()
	if ranges == nil {
		ranges = []schedulespec.CalendarRange{}
	}
	b, err := json.Marshal(ranges)
	require.NoError(e.t, err)
	_, err = e.st.CreateCalendar(context.Background(), store.NewCalendar{Name: name, Timezone: "UTC", Dates: dates, Ranges: b})
	require.NoError(e.t, err)
}

// The planner arms a tick a calendar excludes as the SKIPPED tick it is: a run row holding
// the tick's key (S1), with the reason naming the calendar, no event, shown at its release
// and counted skipped — not silently absent. The ticks around it fire.
func TestPlannerArmsExcludedTicksSkippedNamingTheCalendar(t *testing.T) {
	t.Parallel()
	e := newPlannerEnv(t)
	t0 := time.Now().UTC().Truncate(time.Second).Add(time.Hour)
	start := t0
	e.calendar("maintenance", nil, schedulespec.CalendarRange{
		Start: t0.Add(25 * time.Second).Format(time.RFC3339), End: t0.Add(45 * time.Second).Format(time.RFC3339)})
	e.create("beat", schedulespec.Spec{Interval: every(10, "SECONDS"), StartAt: &start, ExcludeCalendars: []string{"maintenance"}},
		event, api.SchedulePolicies{}, t0)

	res := e.at(t0)
	require.Equal(t, int((scheduleplan.ArmLead+scheduleplan.ArmSpan)/(10*time.Second)), res.Armed, "skipped ticks are armed too")
	require.Empty(t, e.runs("beat"), "nothing shows before its time, a skipped tick neither")
	e.at(t0.Add(60 * time.Second))

	runs := e.runs("beat")
	require.Len(t, runs, 6)
	for i, r := range runs {
		tick := t0.Add(time.Duration(i+1) * 10 * time.Second)
		require.Equal(t, tick, r.ScheduledAt.UTC())
		require.Equal(t, domain.TriggerScheduled, r.Trigger)
		require.Equal(t, domain.TickKey(e.row("beat").ID, tick), r.IdempotencyKey, "the row holds the tick's key")
		if tick.Equal(t0.Add(30*time.Second)) || tick.Equal(t0.Add(40*time.Second)) {
			require.Equal(t, domain.RunSkipped, r.Status, "tick %s", tick)
			require.Equal(t, "excluded by calendar maintenance", r.Reason)
			require.Nil(t, r.FiredAt)
			require.NotNil(t, r.FinishedAt)
			continue
		}
		require.Equal(t, domain.RunSucceeded, r.Status, "tick %s", tick)
	}
	row := e.row("beat")
	require.Equal(t, int64(4), row.FiredCount)
	require.Equal(t, int64(2), row.SkippedCount)
	require.Equal(t, t0.Add(70*time.Second), row.NextRunAt.UTC())
	var events int
	require.NoError(t, e.st.Pool.QueryRow(context.Background(), `SELECT count(*) FROM event_store e JOIN schedule_runs r ON r.id = e.schedule_run_id
		WHERE r.schedule_id = $1 AND r.scheduled_at <= $2`, row.ID, t0.Add(60*time.Second)).Scan(&events))
	require.Equal(t, 4, events, "a skipped tick appends no event")
	// The feed shows a row once every older transaction of the cluster has ended: other
	// tests' transactions may hold it back a moment.
	require.Eventually(t, func() bool {
		feed, err := e.st.EventFeed(context.Background(), 0, "billing", 100)
		return err == nil && len(feed) == 4
	}, 10*time.Second, 20*time.Millisecond, "the feed shows the fired ticks only")
}

// A skipped tick released late, after an outage past the catch-up window, stays the
// SKIPPED tick a calendar made it: the calendar excludes it, it would not have fired.
func TestPlannerSkippedTickReleasedLateStaysSkipped(t *testing.T) {
	t.Parallel()
	e := newPlannerEnv(t)
	t0 := time.Now().UTC().Truncate(time.Minute).Add(-time.Hour)
	start := t0
	// Closed the day of t0 and the next, so the ticks a round arms are all excluded even
	// when they cross midnight.
	e.calendar("closed", []string{t0.Format("2006-01-02"), t0.AddDate(0, 0, 1).Format("2006-01-02")})
	e.create("late", schedulespec.Spec{Interval: every(1, "MINUTES"), StartAt: &start, ExcludeCalendars: []string{"closed"}}, event,
		api.SchedulePolicies{}, t0)
	_, err := e.acts.PlanRound(context.Background(), t0)
	require.NoError(t, err)
	// Released 30 minutes late by a releaser that was down all along (no liveness recorded).
	_, err = e.st.ReleaseDueAsOf(context.Background(), ptr(t0.Add(30*time.Minute)), nil)
	require.NoError(t, err)
	runs := e.runs("late")
	require.NotEmpty(t, runs)
	for _, r := range runs {
		require.Equal(t, domain.RunSkipped, r.Status)
		require.Equal(t, "excluded by calendar closed", r.Reason)
	}
	require.Zero(t, e.row("late").MissedCount)
}

// A schedule whose action is a workflow and that excludes calendars is not armed by the
// planner (a calendar edit could not take back a target Temporal starts by itself): its
// workflow is woken before its fire, and decides the tick then.
func TestPlannerWakesWorkflowActionsThatExcludeCalendars(t *testing.T) {
	t.Parallel()
	e := newPlannerEnv(t)
	t0 := time.Now().UTC().Truncate(time.Second).Add(time.Hour)
	start := t0.Add(2 * time.Minute)
	e.calendar("holidays", []string{"2030-12-25"})
	wf := domain.Action{Kind: domain.ActionWorkflow, WorkflowType: "Report", TaskQueue: "reports"}
	e.create("report", schedulespec.Spec{Interval: every(1, "HOURS"), StartAt: &start, ExcludeCalendars: []string{"holidays"}}, wf,
		api.SchedulePolicies{Overlap: domain.OverlapAllowAll}, t0)
	row := e.row("report")
	require.Equal(t, scheduleplan.Wake, *row.PlanAction)
	require.Equal(t, start.Add(-scheduleplan.WakeLead), row.PlanAt.UTC())
	res := e.at(start.Add(-scheduleplan.WakeLead))
	require.Zero(t, res.Armed)
	require.Equal(t, []string{"report"}, e.wakes.wakes())
}

func ptr[T any](v T) *T { return &v }
