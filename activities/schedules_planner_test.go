package activities_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/scheduleplan"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/store"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// recordingStarter records the planner's wakes and stops instead of starting workflows.
type recordingStarter struct {
	mu    sync.Mutex
	woken []string
}

func (r *recordingStarter) WakeSchedule(_ context.Context, _ int64, name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.woken = append(r.woken, name)
	return nil
}

func (r *recordingStarter) StopSchedule(context.Context, string, string) error { return nil }

func (r *recordingStarter) wakes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.woken...)
}

// plannerEnv is a planner on a real database, run by hand at the times a test gives.
type plannerEnv struct {
	t     *testing.T
	st    *store.Store
	acts  *activities.ScheduleActivities
	wakes *recordingStarter
}

func newPlannerEnv(t *testing.T) *plannerEnv {
	st := testenv.Store(t)
	w := &recordingStarter{}
	return &plannerEnv{t: t, st: st, wakes: w, acts: &activities.ScheduleActivities{Store: st, Schedules: w}}
}

// create makes a schedule the way POST /schedules does, at createdAt.
func (e *plannerEnv) create(name string, spec schedulespec.Spec, action domain.Action, pol api.SchedulePolicies, createdAt time.Time) store.Schedule {
	e.t.Helper()
	compiled, err := schedulespec.Normalize(spec, createdAt)
	require.NoError(e.t, err)
	if pol.Overlap == "" {
		pol.Overlap = domain.OverlapSkip
	}
	row, err := e.st.CreateSchedule(context.Background(), api.NewScheduleRow(api.CreateScheduleRequest{Name: name, Spec: compiled.Spec, Action: action}, compiled, pol, createdAt))
	require.NoError(e.t, err)
	_, err = e.st.Pool.Exec(context.Background(), "UPDATE schedules SET created_at = $1 WHERE id = $2", createdAt, row.ID)
	require.NoError(e.t, err)
	return row
}

// at runs what the planner and a releaser running all along have done by now: a planner
// round, and the release of every fire due, each at its time.
func (e *plannerEnv) at(now time.Time) activities.RoundResult {
	e.t.Helper()
	res, err := e.acts.PlanRound(context.Background(), now)
	require.NoError(e.t, err)
	e.release(now)
	return res
}

// release releases every fire due by now at its visible time, earliest first, as a
// releaser running all along did.
func (e *plannerEnv) release(now time.Time) {
	e.t.Helper()
	for {
		var due *time.Time
		require.NoError(e.t, e.st.Pool.QueryRow(context.Background(),
			"SELECT min(visible_at) FROM schedule_runs WHERE armed AND visible_at <= $1", now).Scan(&due))
		if due == nil {
			return
		}
		_, err := e.st.ReleaseDueAsOf(context.Background(), due, nil)
		require.NoError(e.t, err)
	}
}

func (e *plannerEnv) row(name string) store.Schedule {
	e.t.Helper()
	row, err := e.st.GetSchedule(context.Background(), name)
	require.NoError(e.t, err)
	return row
}

// runs lists the schedule's runs, oldest first, as GET /schedules/{name}/runs shows them.
func (e *plannerEnv) runs(name string) []store.ScheduleRun {
	e.t.Helper()
	runs, err := e.st.ListRuns(context.Background(), e.row(name).ID, 0, 100000)
	require.NoError(e.t, err)
	for i, j := 0, len(runs)-1; i < j; i, j = i+1, j-1 {
		runs[i], runs[j] = runs[j], runs[i]
	}
	return runs
}

func (e *plannerEnv) armed(name string) int {
	e.t.Helper()
	var n int
	require.NoError(e.t, e.st.Pool.QueryRow(context.Background(), "SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND armed", e.row(name).ID).Scan(&n))
	return n
}

var event = domain.Action{Kind: domain.ActionEvent, Topic: "billing", Type: "invoice.due", Data: json.RawMessage(`{"k":1}`)}

func every(n int64, unit string) *schedulespec.Interval {
	return &schedulespec.Interval{Every: n, Unit: unit}
}

// A schedule at rest is armed by the planner ahead of its fires: every fire due up to
// ArmLead+ArmSpan ahead, in one round, hidden (no run listed, not counted, no feed
// position), next_run_at on the first; the planner looks again when the next tick enters the
// span. The release makes each fire true at its time. The schedule has no workflow at all.
func TestPlannerArmsTheFiresOfASchedulesAtRestAhead(t *testing.T) {
	t.Parallel()
	e := newPlannerEnv(t)
	t0 := time.Now().UTC().Truncate(time.Second).Add(time.Hour)
	start := t0
	e.create("ten-seconds", schedulespec.Spec{Interval: every(10, "SECONDS"), StartAt: &start}, event, api.SchedulePolicies{}, t0)

	res := e.at(t0)
	reach := scheduleplan.ArmLead + scheduleplan.ArmSpan
	want := int(reach / (10 * time.Second))
	require.Equal(t, want, res.Armed, "every fire up to %s ahead", reach)
	require.Equal(t, want, e.armed("ten-seconds"))
	require.Empty(t, e.runs("ten-seconds"), "nothing is true before its time")
	row := e.row("ten-seconds")
	require.Zero(t, row.FiredCount)
	require.Equal(t, t0.Add(10*time.Second), row.NextRunAt.UTC(), "next_run_at is the first fire not yet released")
	next := t0.Add(time.Duration(want+1) * 10 * time.Second)
	require.Equal(t, next.Add(-scheduleplan.ArmLead), row.PlanAt.UTC(), "the planner looks again when the next tick not armed is ArmLead ahead")
	require.Equal(t, scheduleplan.Arm, *row.PlanAction)
	require.Nil(t, row.Owner, "at rest")
	require.Empty(t, e.wakes.wakes(), "no workflow woken")

	e.at(t0.Add(25 * time.Second))
	runs := e.runs("ten-seconds")
	require.Len(t, runs, 2)
	for i, r := range runs {
		require.Equal(t, t0.Add(time.Duration(i+1)*10*time.Second), r.ScheduledAt.UTC())
		require.Equal(t, domain.RunSucceeded, r.Status)
		require.Equal(t, domain.TriggerScheduled, r.Trigger)
	}
	row = e.row("ten-seconds")
	require.Equal(t, int64(2), row.FiredCount)
	require.Equal(t, t0.Add(30*time.Second), row.NextRunAt.UTC())
	require.Equal(t, want-2, e.armed("ten-seconds"), "the rest stay armed; the next round comes later")
}

// An every-second schedule at rest, run for five minutes with the planner and the releaser
// looking every second: each tick fires once, in order, at its time (S1, S2), armed in
// rounds of many fires — not one round per fire.
func TestPlannerArmsEveryTickOnceInRounds(t *testing.T) {
	t.Parallel()
	e := newPlannerEnv(t)
	t0 := time.Now().UTC().Truncate(time.Second).Add(time.Hour)
	start := t0
	e.create("every-second", schedulespec.Spec{Interval: every(1, "SECONDS"), StartAt: &start}, event, api.SchedulePolicies{}, t0)
	rounds := 0
	for sec := 0; sec <= 300; sec++ {
		if e.at(t0.Add(time.Duration(sec)*time.Second)).Armed > 0 {
			rounds++
		}
	}
	runs := e.runs("every-second")
	require.Len(t, runs, 300)
	for i, r := range runs {
		require.Equal(t, t0.Add(time.Duration(i+1)*time.Second), r.ScheduledAt.UTC(), "tick %d once, in order", i+1)
		require.Equal(t, r.ScheduledAt, *r.FiredAt, "released at its time")
	}
	require.LessOrEqual(t, rounds, 1+int(300*time.Second/scheduleplan.ArmSpan)+1, "armed in rounds of a span each")
	require.GreaterOrEqual(t, rounds, int(300*time.Second/scheduleplan.ArmSpan))
	dup, err := e.st.CountDuplicateTicks(context.Background())
	require.NoError(t, err)
	require.Zero(t, dup)
}

// walk runs the planner and the releaser from `from` to `to`, every step.
func (e *plannerEnv) walk(from, to time.Time, step time.Duration) {
	for now := from; !now.After(to); now = now.Add(step) {
		e.at(now)
	}
}

// Daylight saving time, at rest: a local time skipped by spring-forward fires once at the
// transition; one repeated by fall-back fires once, at its first occurrence.
func TestPlannerFiresDSTTransitionsOnce(t *testing.T) {
	t.Parallel()
	e := newPlannerEnv(t)
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	nyStart := time.Date(2026, 3, 7, 12, 0, 0, 0, ny)
	e.create("ny-spring", schedulespec.Spec{Cron: "30 2 * * *", Timezone: "America/New_York"}, event, api.SchedulePolicies{}, nyStart)
	e.walk(nyStart, nyStart.Add(3*24*time.Hour), 30*time.Minute)
	var got []time.Time
	for _, r := range e.runs("ny-spring") {
		got = append(got, r.ScheduledAt.UTC())
	}
	require.Equal(t, []time.Time{
		time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC),  // 02:30 does not exist: once, at 03:00 EDT
		time.Date(2026, 3, 9, 2, 30, 0, 0, ny).UTC(), // then 02:30 EDT as usual
		time.Date(2026, 3, 10, 2, 30, 0, 0, ny).UTC(),
	}, got)

	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	berlinStart := time.Date(2026, 10, 24, 12, 0, 0, 0, berlin)
	e.create("berlin-fall", schedulespec.Spec{Cron: "*/30 2 * * *", Timezone: "Europe/Berlin"}, event, api.SchedulePolicies{}, berlinStart)
	e.walk(berlinStart, berlinStart.Add(2*24*time.Hour), 15*time.Minute)
	got = nil
	for _, r := range e.runs("berlin-fall") {
		got = append(got, r.ScheduledAt.UTC())
	}
	require.Equal(t, []time.Time{
		time.Date(2026, 10, 25, 0, 0, 0, 0, time.UTC), time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC),
		time.Date(2026, 10, 26, 1, 0, 0, 0, time.UTC), time.Date(2026, 10, 26, 1, 30, 0, 0, time.UTC),
	}, got)
}

// The DST policy at rest (spec.dst): the planner arms what the policy says, the same
// instants the workflow fires (workflows: TestDSTPolicyDecidesTheFiresOfAClockChange). Under
// repeated=twice and skipped=skip, New York's 02:30 fires at neither instant of its
// skipped day and at both of its repeated one.
func TestPlannerFollowsTheDSTPolicy(t *testing.T) {
	t.Parallel()
	e := newPlannerEnv(t)
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	policy := &schedulespec.DST{Repeated: "twice", Skipped: "skip"}
	ticks := func(name string) []time.Time {
		var got []time.Time
		for _, r := range e.runs(name) {
			got = append(got, r.ScheduledAt.UTC())
		}
		return got
	}
	springStart := time.Date(2026, 3, 7, 12, 0, 0, 0, ny)
	e.create("ny-spring-skip", schedulespec.Spec{Cron: "30 2 * * *", Timezone: "America/New_York", DST: policy}, event, api.SchedulePolicies{}, springStart)
	e.walk(springStart, springStart.Add(3*24*time.Hour), 30*time.Minute)
	require.Equal(t, []time.Time{
		time.Date(2026, 3, 9, 2, 30, 0, 0, ny).UTC(), // 2026-03-08 02:30 does not exist: skipped
		time.Date(2026, 3, 10, 2, 30, 0, 0, ny).UTC(),
	}, ticks("ny-spring-skip"))

	fallStart := time.Date(2026, 10, 31, 12, 0, 0, 0, ny)
	e.create("ny-fall-twice", schedulespec.Spec{Cron: "30 1 * * *", Timezone: "America/New_York", DST: policy}, event, api.SchedulePolicies{}, fallStart)
	e.walk(fallStart, fallStart.Add(2*24*time.Hour), 30*time.Minute)
	require.Equal(t, []time.Time{
		time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC), // 01:30 EDT
		time.Date(2026, 11, 1, 6, 30, 0, 0, time.UTC), // 01:30 EST, an hour later
		time.Date(2026, 11, 2, 6, 30, 0, 0, time.UTC),
	}, ticks("ny-fall-twice"))
}

// S2 at rest: the planner, back after an outage, arms the ticks it missed too, and their
// release judges each by tick_fate, the rule every late tick obeys — MISSED beyond the
// catch-up window with the outage as the reason, a catch-up fire inside it, and fired late
// (not MISSED) where a worker was alive.
func TestPlannerAfterAnOutageJudgesLateTicksByTheOneRule(t *testing.T) {
	t.Parallel()
	e := newPlannerEnv(t)
	t0 := time.Now().UTC().Truncate(time.Minute).Add(-time.Hour)
	start := t0.Add(-10 * time.Minute)
	e.create("outage", schedulespec.Spec{Interval: every(1, "MINUTES"), StartAt: &start}, event,
		api.SchedulePolicies{CatchupWindow: schedulespec.Duration(3 * time.Minute)}, start)
	// A worker ran before -9m30s (alive to -9m15s with the grace) and from -4m30s on.
	_, err := e.st.Pool.Exec(context.Background(), `INSERT INTO worker_liveness (worker_id, started_at, beat_at) VALUES
		('before', $1, $2), ('after', $3, $4)`, start.Add(-time.Hour), t0.Add(-9*time.Minute-30*time.Second), t0.Add(-4*time.Minute-30*time.Second), t0)
	require.NoError(t, err)
	// The planner and the releasers come back at t0, together.
	_, err = e.acts.PlanRound(context.Background(), t0)
	require.NoError(t, err)
	_, err = e.st.ReleaseDueAsOf(context.Background(), &t0, nil)
	require.NoError(t, err)

	got := map[time.Duration]string{}
	for _, r := range e.runs("outage") {
		got[r.ScheduledAt.Sub(t0)] = string(r.Status) + "/" + string(r.Trigger)
		if r.Status == domain.RunMissed {
			require.Equal(t, fmt.Sprintf("missed: no tickgate worker was running from %s to %s, and the tick is older than the catch-up window (3m)",
				r.ScheduledAt.UTC().Format(time.RFC3339), t0.Add(-4*time.Minute-30*time.Second).Format(time.RFC3339)), r.Reason)
		}
	}
	require.Equal(t, map[time.Duration]string{
		-9 * time.Minute: "MISSED/scheduled", -8 * time.Minute: "MISSED/scheduled", -7 * time.Minute: "MISSED/scheduled",
		-6 * time.Minute: "MISSED/scheduled", -5 * time.Minute: "MISSED/scheduled",
		-4 * time.Minute: "SUCCEEDED/scheduled", -3 * time.Minute: "SUCCEEDED/scheduled", -2 * time.Minute: "SUCCEEDED/scheduled",
		-1 * time.Minute: "SUCCEEDED/scheduled", 0: "SUCCEEDED/scheduled",
	}, got, "ticks after the outage fire late, as scheduled: a worker was alive")
	row := e.row("outage")
	require.Equal(t, int64(5), row.MissedCount)
	var missedEvents int
	require.NoError(t, e.st.Pool.QueryRow(context.Background(), `SELECT count(*) FROM event_store e JOIN schedule_runs r ON r.id = e.schedule_run_id
		WHERE r.schedule_id = $1 AND r.status = 'MISSED'`, row.ID).Scan(&missedEvents))
	require.Zero(t, missedEvents, "a MISSED fire has no event")
}

// The same outage, but the releasers come back before the planner: by the time the planner
// arms the ticks it missed, a release has already passed their time. Those fires are
// released by the round that arms them, judged by the same rule (MISSED beyond the window,
// late as scheduled where a worker was alive), and their events reach a consumer that had
// already read the feed to its end — none is slipped in behind the release.
func TestPlannerBackAfterTheReleaseJudgesTheTicksItMissedAlike(t *testing.T) {
	t.Parallel()
	e := newPlannerEnv(t)
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Minute).Add(-time.Hour)
	start := t0.Add(-10 * time.Minute)
	e.create("outage-release-first", schedulespec.Spec{Interval: every(1, "MINUTES"), StartAt: &start}, event,
		api.SchedulePolicies{CatchupWindow: schedulespec.Duration(3 * time.Minute)}, start)
	_, err := e.st.Pool.Exec(ctx, `INSERT INTO worker_liveness (worker_id, started_at, beat_at) VALUES
		('before', $1, $2), ('after', $3, $4)`, start.Add(-time.Hour), t0.Add(-9*time.Minute-30*time.Second), t0.Add(-4*time.Minute-30*time.Second), t0)
	require.NoError(t, err)
	// The releasers first: a release up to t0 with nothing armed yet; a consumer reads to the end.
	_, err = e.st.ReleaseDueAsOf(ctx, &t0, nil)
	require.NoError(t, err)
	cursor, err := e.st.FeedEndNow(ctx)
	require.NoError(t, err)
	// Then the planner.
	_, err = e.acts.PlanRound(ctx, t0)
	require.NoError(t, err)

	got := map[time.Duration]string{}
	var fired []int64
	for _, r := range e.runs("outage-release-first") {
		got[r.ScheduledAt.Sub(t0)] = string(r.Status) + "/" + string(r.Trigger)
	}
	require.Equal(t, map[time.Duration]string{
		-9 * time.Minute: "MISSED/scheduled", -8 * time.Minute: "MISSED/scheduled", -7 * time.Minute: "MISSED/scheduled",
		-6 * time.Minute: "MISSED/scheduled", -5 * time.Minute: "MISSED/scheduled",
		-4 * time.Minute: "SUCCEEDED/scheduled", -3 * time.Minute: "SUCCEEDED/scheduled", -2 * time.Minute: "SUCCEEDED/scheduled",
		-1 * time.Minute: "SUCCEEDED/scheduled", 0: "SUCCEEDED/scheduled",
	}, got, "judged as a release after the planner judges them")
	row := e.row("outage-release-first")
	require.Equal(t, int64(5), row.MissedCount)
	require.Equal(t, int64(5), row.FiredCount)
	rows, err := e.st.Pool.Query(ctx, `SELECT e.id FROM event_store e JOIN schedule_runs r ON r.id = e.schedule_run_id
		WHERE r.schedule_id = $1 AND r.scheduled_at <= $2 ORDER BY e.id`, row.ID, t0)
	require.NoError(t, err)
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		fired = append(fired, id)
	}
	require.NoError(t, rows.Err())
	require.Len(t, fired, 5, "a MISSED fire has no event (the ticks after t0 are armed ahead, not yet released)")
	var read []int64
	require.Eventually(t, func() bool {
		page, err := e.st.ReadFeed(ctx, cursor, "", 100)
		if err != nil {
			return false
		}
		for _, ev := range page.Events {
			read = append(read, ev.ID)
		}
		cursor = page.Next
		return len(read) >= len(fired)
	}, 20*time.Second, 20*time.Millisecond)
	require.Equal(t, fired, read, "the consumer that read to the end before the planner armed them reads every fired tick")
}

// A schedule whose fire needs its workflow at the tick (skip_if_successful reads the runs up
// to it) is not armed: its workflow is woken WakeLead before the fire, and woken again a
// minute later if it did not take the schedule over meanwhile.
func TestPlannerWakesTheWorkflowOfAFireToDecideAtItsTick(t *testing.T) {
	t.Parallel()
	e := newPlannerEnv(t)
	t0 := time.Now().UTC().Truncate(time.Hour).Add(2 * time.Hour)
	e.create("decide-at-tick", schedulespec.Spec{Cron: "0 * * * *"}, event, api.SchedulePolicies{SkipIfSuccessful: true}, t0.Add(-30*time.Minute))
	row := e.row("decide-at-tick")
	require.Equal(t, scheduleplan.Wake, *row.PlanAction)
	require.Equal(t, t0.Add(-scheduleplan.WakeLead), row.PlanAt.UTC())

	e.at(t0.Add(-scheduleplan.WakeLead - time.Second))
	require.Empty(t, e.wakes.wakes(), "not before its time")
	e.at(t0.Add(-scheduleplan.WakeLead))
	require.Equal(t, []string{"decide-at-tick"}, e.wakes.wakes())
	require.Zero(t, e.armed("decide-at-tick"), "nothing armed")
	row = e.row("decide-at-tick")
	require.Equal(t, t0.Add(-scheduleplan.WakeLead+time.Minute), row.PlanAt.UTC(), "looked at again in a minute, unless its workflow takes it")
}

// A workflow action's fire of a schedule at rest, with nothing of it running, is armed by
// the planner: its run committed RUNNING and hidden, its target started with a start delay
// ending at the tick. The planner looks again at the next tick; the run is watched by the
// run watchers (TestRunWatcherRecordsTheOutcomeOfARunAtRest), not by a workflow woken for it.
func TestPlannerArmsAWorkflowFireWithAStartDelay(t *testing.T) {
	t.Parallel()
	e := newPlannerEnv(t)
	tc := testenv.TemporalClient(t)
	e.acts.Temporal = tc
	queue := fmt.Sprintf("planner-targets-%d", time.Now().UnixNano())
	t0 := time.Now().UTC().Truncate(time.Minute).Add(2 * time.Minute) // the hourly tick is ahead of the server's clock
	name := fmt.Sprintf("hourly-report-%d", time.Now().UnixNano())
	e.create(name, schedulespec.Spec{Cron: fmt.Sprintf("%d * * * *", t0.Minute())},
		domain.Action{Kind: domain.ActionWorkflow, WorkflowType: "Report", TaskQueue: queue}, api.SchedulePolicies{}, t0.Add(-time.Hour+time.Second))

	res := e.at(t0.Add(-scheduleplan.ArmLead))
	require.Equal(t, 1, res.Armed, "armed alone, ArmLead before its tick")
	var wfID string
	var status string
	var armed bool
	require.NoError(t, e.st.Pool.QueryRow(context.Background(), "SELECT workflow_id, status, armed FROM schedule_runs WHERE schedule_id = $1",
		e.row(name).ID).Scan(&wfID, &status, &armed))
	require.Equal(t, domain.RunWorkflowID(name, domain.TickKey(e.row(name).ID, t0)), wfID)
	require.Equal(t, "RUNNING", status)
	require.True(t, armed, "hidden until its release")
	d, err := tc.DescribeWorkflowExecution(context.Background(), wfID, "")
	require.NoError(t, err, "its target was started")
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, d.GetWorkflowExecutionInfo().GetStatus())
	require.NotNil(t, d.GetWorkflowExecutionInfo().GetExecutionTime())
	require.WithinDuration(t, t0, d.GetWorkflowExecutionInfo().GetExecutionTime().AsTime(), time.Second, "with a start delay ending at its tick")

	row := e.row(name)
	require.Equal(t, scheduleplan.Arm, *row.PlanAction)
	require.Equal(t, t0.Add(time.Hour-scheduleplan.ArmLead), row.PlanAt.UTC(), "the planner looks again for the next tick")
	require.Empty(t, e.wakes.wakes(), "no workflow woken: the run watchers watch the run")
	_ = tc.TerminateWorkflow(context.Background(), wfID, "", "test over")
}

// Under a policy but allow_all, a schedule whose run of the last fire still runs when its
// next fire comes up is not armed: its workflow is woken to decide the fire at its tick.
func TestPlannerWakesTheWorkflowWhenARunIsInFlight(t *testing.T) {
	t.Parallel()
	e := newPlannerEnv(t)
	t0 := time.Now().UTC().Truncate(time.Minute).Add(time.Hour)
	name := "busy-report"
	row := e.create(name, schedulespec.Spec{Cron: "* * * * *"}, domain.Action{Kind: domain.ActionWorkflow, WorkflowType: "Report", TaskQueue: "q"},
		api.SchedulePolicies{Overlap: domain.OverlapSkip}, t0.Add(-30*time.Second))
	// A run of the tick before still runs.
	_, err := e.st.Pool.Exec(context.Background(), `INSERT INTO schedule_runs (schedule_id, scheduled_at, fired_at, trigger, status, idempotency_key, workflow_id)
		VALUES ($1, $2, $2, 'scheduled', 'RUNNING', 'x', 'schedule/busy-report/run/x')`, row.ID, t0.Add(-time.Minute))
	require.NoError(t, err)
	res := e.at(t0.Add(-scheduleplan.ArmLead))
	require.Zero(t, res.Armed)
	require.Equal(t, []string{name}, e.wakes.wakes(), "woken to decide the fire under skip")
}

// The handover back to the planner: a rest asked for by a run that has ended completes (the
// schedule is at rest again); one asked for by a run still open does not (it took a command
// after asking), and is looked at again later.
func TestPlannerCompletesARestOnlyOnceItsRunHasEnded(t *testing.T) {
	t.Parallel()
	e := newPlannerEnv(t)
	tc := testenv.TemporalClient(t)
	e.acts.Temporal = tc
	ctx := context.Background()
	suffix := time.Now().UnixNano()
	queue := fmt.Sprintf("unpolled-%d", suffix)
	owned := func(name string, end bool) string {
		e.create(name, schedulespec.Spec{Cron: "0 0 1 1 *"}, event, api.SchedulePolicies{}, time.Now().UTC())
		run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "schedule/" + name, TaskQueue: queue}, "ScheduleWorkflow")
		require.NoError(t, err)
		if end {
			require.NoError(t, tc.TerminateWorkflow(ctx, run.GetID(), run.GetRunID(), "rested"))
		}
		_, err = e.st.Pool.Exec(ctx, "UPDATE schedules SET owner = $1, rest_requested_at = now() - interval '2 seconds' WHERE name = $2", run.GetRunID(), name)
		require.NoError(t, err)
		return run.GetRunID()
	}
	ended := fmt.Sprintf("rested-%d", suffix)
	open := fmt.Sprintf("still-open-%d", suffix)
	owned(ended, true)
	openRun := owned(open, false)

	res := e.at(time.Now().UTC())
	require.GreaterOrEqual(t, res.Rested, 1)
	require.Nil(t, e.row(ended).Owner, "at rest: the planner's")
	row := e.row(open)
	require.NotNil(t, row.Owner)
	require.Equal(t, openRun, *row.Owner, "still its run's")
	require.NotNil(t, row.OwnerCheckedAt)
	_ = tc.TerminateWorkflow(ctx, "schedule/"+open, openRun, "test over")
}

// A schedule of the version before the planner is taken over: its old workflow terminated,
// its watermark the tick before its next fire, and its workflow woken to take it up.
func TestPlannerTakesOverASchedulesOfTheReleaseBefore(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	tc := testenv.TemporalClient(t)
	queue := fmt.Sprintf("legacy-%d", time.Now().UnixNano())
	s := &starter.Starter{Client: tc, TaskQueue: queue}
	acts := &activities.ScheduleActivities{Store: st, Temporal: tc, Schedules: s}
	ctx := context.Background()
	name := fmt.Sprintf("legacy-%d", time.Now().UnixNano())
	next := time.Now().UTC().Truncate(time.Hour).Add(time.Hour)
	row, err := st.CreateSchedule(ctx, store.NewSchedule{Name: name, Spec: json.RawMessage(`{"cron":"0 * * * *","timezone":"UTC"}`),
		Action: json.RawMessage(`{"kind":"event","topic":"t","type":"x"}`), Overlap: "skip", NextRunAt: &next})
	require.NoError(t, err)
	_, err = st.Pool.Exec(ctx, "UPDATE schedules SET owner = 'legacy' WHERE id = $1", row.ID)
	require.NoError(t, err)
	old, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "schedule/" + name, TaskQueue: queue + "-old"}, "ScheduleWorkflow")
	require.NoError(t, err)

	res, err := acts.PlanRound(ctx, time.Now().UTC())
	require.NoError(t, err)
	require.GreaterOrEqual(t, res.Adopted, 1)
	_, err = acts.PlanRound(ctx, time.Now().UTC().Add(time.Second)) // the round after wakes it
	require.NoError(t, err)
	d, err := tc.DescribeWorkflowExecution(ctx, old.GetID(), old.GetRunID())
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, d.GetWorkflowExecutionInfo().GetStatus(), "the old workflow was stopped")
	got, err := st.GetSchedule(ctx, name)
	require.NoError(t, err)
	require.NotNil(t, got.Watermark)
	require.Equal(t, next.Add(-time.Microsecond), got.Watermark.UTC(), "the tick before its next fire")
	woken, err := tc.DescribeWorkflowExecution(ctx, "schedule/"+name, "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, woken.GetWorkflowExecutionInfo().GetStatus(), "its workflow was woken")
	require.Equal(t, queue, woken.GetWorkflowExecutionInfo().GetTaskQueue())
	_ = tc.TerminateWorkflow(ctx, "schedule/"+name, "", "test over")
}
