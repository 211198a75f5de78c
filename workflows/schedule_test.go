package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"github.com/stretchr/testify/suite"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// The schedule workflow runs in the time-skipping test environment against its real
// activities and a real PostgreSQL: hours of ticks take milliseconds, and what is asserted
// is what was committed.
type ScheduleWorkflowSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env   *testsuite.TestWorkflowEnvironment
	store *store.Store
	acts  *activities.ScheduleActivities
	t0    time.Time
	// updates numbers update ids (the test environment dedups updates by id).
	updates int
}

func TestScheduleWorkflow(t *testing.T) {
	t.Parallel()
	suite.Run(t, new(ScheduleWorkflowSuite))
}

func (s *ScheduleWorkflowSuite) SetupTest() {
	s.store = testenv.Store(s.T())
	s.acts = &activities.ScheduleActivities{Store: s.store}
	s.SetLogger(testLogger())
	s.env = s.NewTestWorkflowEnvironment()
	s.env.RegisterWorkflowWithOptions(workflows.ScheduleWorkflow, workflow.RegisterOptions{Name: workflows.ScheduleWorkflowType})
	s.env.RegisterActivity(s.acts)
	s.t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s.env.SetStartTime(s.t0)
}

// createSchedule inserts a schedule row created at createdAt (the workflow counts ticks
// from its creation).
func (s *ScheduleWorkflowSuite) createSchedule(name string, spec schedulespec.Spec, createdAt time.Time, mutate func(*store.NewSchedule)) workflows.ScheduleInput {
	compiled, err := schedulespec.Normalize(spec, createdAt)
	s.Require().NoError(err)
	specJSON, _ := json.Marshal(compiled.Spec)
	p := store.NewSchedule{Name: name, Spec: specJSON, Action: json.RawMessage(`{"kind":"event","topic":"billing","type":"invoice.due","data":{"k":1}}`), Overlap: "skip"}
	if mutate != nil {
		mutate(&p)
	}
	row, err := s.store.CreateSchedule(context.Background(), p)
	s.Require().NoError(err)
	_, err = s.store.Pool.Exec(context.Background(), "UPDATE schedules SET created_at = $1 WHERE id = $2", createdAt, row.ID)
	s.Require().NoError(err)
	return workflows.ScheduleInput{ScheduleID: row.ID, Name: name}
}

func every(n int64, unit string) *schedulespec.Interval {
	return &schedulespec.Interval{Every: n, Unit: unit}
}

// release does what a worker's releaser, running all along, has done by the test clock's
// now: every armed fire visible by then is released at its visible time, earliest first.
func (s *ScheduleWorkflowSuite) release() {
	now := s.env.Now()
	for {
		var due *time.Time
		s.Require().NoError(s.store.Pool.QueryRow(context.Background(),
			"SELECT min(visible_at) FROM schedule_runs WHERE armed AND visible_at <= $1", now).Scan(&due))
		if due == nil {
			return
		}
		_, err := s.store.ReleaseDueAsOf(context.Background(), due, nil)
		s.Require().NoError(err)
	}
}

func (s *ScheduleWorkflowSuite) runs(name string) []store.ScheduleRun {
	s.release()
	row, err := s.store.GetSchedule(context.Background(), name)
	s.Require().NoError(err)
	runs, err := s.store.ListRuns(context.Background(), row.ID, 0, 10000)
	s.Require().NoError(err)
	// oldest first
	for i, j := 0, len(runs)-1; i < j; i, j = i+1, j-1 {
		runs[i], runs[j] = runs[j], runs[i]
	}
	return runs
}

func (s *ScheduleWorkflowSuite) stopAt(d time.Duration) {
	s.env.RegisterDelayedCallback(s.env.CancelWorkflow, d)
}

func (s *ScheduleWorkflowSuite) update(name string, arg any, check func(result any, err error)) {
	cb := &testsuite.TestUpdateCallback{
		OnReject:   func(err error) { s.Fail("update rejected", "%s: %v", name, err) },
		OnAccept:   func() {},
		OnComplete: check,
	}
	s.updates++
	id := fmt.Sprintf("update-%d", s.updates)
	if arg == nil {
		s.env.UpdateWorkflow(name, id, cb)
		return
	}
	s.env.UpdateWorkflow(name, id, cb, arg)
}

func (s *ScheduleWorkflowSuite) TestTicksFireInOrderOncePerTick() {
	start := s.t0
	in := s.createSchedule("ticks", schedulespec.Spec{Interval: every(10, "SECONDS"), StartAt: &start}, s.t0, nil)
	s.stopAt(55 * time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	runs := s.runs("ticks")
	s.Require().Len(runs, 5)
	for i, r := range runs {
		s.Equal(s.t0.Add(time.Duration(i+1)*10*time.Second), r.ScheduledAt.UTC(), "tick %d", i)
		s.Equal(domain.TriggerScheduled, r.Trigger)
		s.Equal(domain.RunSucceeded, r.Status)
	}
	// Ticks of the next window may be armed already: only released fires are in the feed.
	var events, outbox int
	s.Require().NoError(s.store.Pool.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM event_store e JOIN schedule_runs r ON r.id = e.schedule_run_id WHERE e.topic='billing' AND e.type='invoice.due' AND NOT r.armed),
		(SELECT count(*) FROM outbox_messages WHERE tx_id IS NOT NULL)`).Scan(&events, &outbox))
	s.Equal(5, events)
	s.Equal(5, outbox)
	row, err := s.store.GetSchedule(context.Background(), "ticks")
	s.Require().NoError(err)
	s.Equal(int64(5), row.FiredCount)
	s.Equal(s.t0.Add(60*time.Second), row.NextRunAt.UTC(), "next_run_at mirrors the next tick")
}

func (s *ScheduleWorkflowSuite) TestIntervalTicksStayAnchoredAtStartAt() {
	start := s.t0.Add(7 * time.Second)
	in := s.createSchedule("anchored", schedulespec.Spec{Interval: every(1, "MINUTES"), StartAt: &start}, s.t0, func(p *store.NewSchedule) {
		workflowAction(p)
		p.Overlap = domain.OverlapAllowAll
	})
	s.mockTargets(time.Second)
	// A slow fire activity must not push later ticks: tick n is start_at + n·interval.
	s.env.OnActivity(s.acts.RecordTick, mock.Anything, mock.Anything).After(3 * time.Second).Return(s.acts.RecordTick)
	s.stopAt(4 * time.Minute)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	runs := s.runs("anchored")
	s.Require().Len(runs, 4)
	for i, r := range runs {
		s.Equal(start.Add(time.Duration(i)*time.Minute), r.ScheduledAt.UTC())
	}
}

func (s *ScheduleWorkflowSuite) TestPausedScheduleFiresNothingAndResumeDoesNotCatchUp() {
	s.future()
	start := s.t0
	in := s.createSchedule("pausing", schedulespec.Spec{Interval: every(10, "SECONDS"), StartAt: &start}, s.t0, nil)
	s.env.RegisterDelayedCallback(func() {
		s.release() // the releaser has made 10s and 20s true; the pause retracts the window's rest
		s.update(workflows.SchedulePause, workflows.PauseRequest{Note: "maintenance"}, func(r any, err error) { s.NoError(err) })
	}, 25*time.Second)
	s.env.RegisterDelayedCallback(func() {
		row, err := s.store.GetSchedule(context.Background(), "pausing")
		s.NoError(err)
		s.True(row.Paused, "pause is mirrored in Postgres")
		s.Equal("maintenance", row.PauseNote)
		s.Nil(row.NextRunAt)
		s.update(workflows.ScheduleResume, nil, func(r any, err error) { s.NoError(err) })
	}, 65*time.Second)
	s.stopAt(85 * time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	var got []time.Duration
	for _, r := range s.runs("pausing") {
		got = append(got, r.ScheduledAt.Sub(s.t0))
	}
	// 10s, 20s before the pause; nothing while paused (30s-60s are neither fired nor
	// recorded); 70s and 80s after the resume at 65s.
	s.Equal([]time.Duration{10 * time.Second, 20 * time.Second, 70 * time.Second, 80 * time.Second}, got)
	row, err := s.store.GetSchedule(context.Background(), "pausing")
	s.Require().NoError(err)
	s.False(row.Paused)
}

func (s *ScheduleWorkflowSuite) TestTriggerFiresNowAndIsIdempotentPerRequest() {
	in := s.createSchedule("manual", schedulespec.Spec{Cron: "0 0 * * *"}, s.t0, nil)
	var first, second workflows.TriggerResult
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.ScheduleTrigger, workflows.TriggerRequest{RequestID: "req-1"}, func(r any, err error) {
			s.Require().NoError(err)
			first = r.(workflows.TriggerResult)
		})
	}, 15*time.Second)
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.ScheduleTrigger, workflows.TriggerRequest{RequestID: "req-1"}, func(r any, err error) {
			s.Require().NoError(err)
			second = r.(workflows.TriggerResult)
		})
	}, 16*time.Second)
	s.stopAt(time.Minute)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	runs := s.runs("manual")
	s.Require().Len(runs, 1, "the same trigger request sent twice records one run")
	s.Equal(domain.TriggerManual, runs[0].Trigger)
	s.Equal(s.t0.Add(15*time.Second), runs[0].ScheduledAt.UTC())
	s.Equal(runs[0].ID, first.RunID)
	s.Equal(first.RunID, second.RunID)
}

func (s *ScheduleWorkflowSuite) TestTriggerSignalFromAnotherServiceFires() {
	in := s.createSchedule("signalled", schedulespec.Spec{Cron: "0 0 * * *"}, s.t0, nil)
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(workflows.ScheduleTrigger, workflows.TriggerRequest{RequestID: "svc-1"})
	}, 5*time.Second)
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(workflows.SchedulePause, workflows.PauseRequest{Note: "by billing"})
	}, 6*time.Second)
	s.stopAt(10 * time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	s.Require().Len(s.runs("signalled"), 1)
	row, err := s.store.GetSchedule(context.Background(), "signalled")
	s.Require().NoError(err)
	s.True(row.Paused)
	s.Equal("by billing", row.PauseNote)
}

// loseFirstAnswers makes the first attempt of activity act for each key commit and then
// "lose" its answer, so it is retried; it returns the attempts per key, counted as they
// happen (read them after the workflow ends).
func loseFirstAnswers[Req any, Res any, K comparable](env *testsuite.TestWorkflowEnvironment, act func(context.Context, Req) (Res, error), key func(Req) K) map[K]int {
	var mu sync.Mutex
	attempts := map[K]int{}
	env.OnActivity(act, mock.Anything, mock.Anything).Return(func(ctx context.Context, r Req) (Res, error) {
		res, err := act(ctx, r)
		mu.Lock()
		defer mu.Unlock()
		attempts[key(r)]++
		if err == nil && attempts[key(r)] == 1 {
			var lost Res
			return lost, errors.New("connection reset after commit")
		}
		return res, err
	})
	return attempts
}

// loseFirstRecordAnswers loses every tick's first RecordTick answer (per idempotency key).
func (s *ScheduleWorkflowSuite) loseFirstRecordAnswers() map[string]int {
	return loseFirstAnswers(s.env, s.acts.RecordTick, func(r activities.TickRecord) string { return r.IdempotencyKey })
}

// A fire whose transaction commits but whose answer is lost (the local activity's first
// attempt fails after its commit) is retried and finds its rows: no tick gets a second run
// or event.
func (s *ScheduleWorkflowSuite) TestRetriedFireAfterCommitDoesNotDuplicateTheRun() {
	// The test environment dates a local activity retry's deadline by its mock clock
	// compared with the wall clock, so this test runs its mock clock from now.
	s.t0 = time.Now().UTC().Truncate(time.Second)
	s.env.SetStartTime(s.t0)
	start := s.t0
	in := s.createSchedule("retried", schedulespec.Spec{Interval: every(10, "SECONDS"), StartAt: &start}, s.t0, nil)
	records := s.loseFirstRecordAnswers()
	s.stopAt(35 * time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	runs := s.runs("retried")
	s.Require().Len(runs, 3)
	s.Len(records, 3, "each tick's fire was recorded through the mock")
	for _, n := range records {
		s.Equal(2, n, "each tick's fire was retried once")
	}
	var rows, ticks, events, eventRuns int
	s.Require().NoError(s.store.Pool.QueryRow(context.Background(), `SELECT count(*), count(DISTINCT r.scheduled_at), count(e.id), count(DISTINCT e.schedule_run_id)
		FROM schedule_runs r LEFT JOIN event_store e ON e.schedule_run_id = r.id WHERE r.schedule_id = $1`, in.ScheduleID).Scan(&rows, &ticks, &events, &eventRuns))
	s.Equal(3, rows)
	s.Equal(rows, ticks, "one run per tick")
	s.Equal(rows, events, "one event per run despite the retries")
	s.Equal(rows, eventRuns)
	row, err := s.store.GetSchedule(context.Background(), "retried")
	s.Require().NoError(err)
	s.Equal(int64(3), row.FiredCount)
}

func (s *ScheduleWorkflowSuite) TestOutageLongerThanCatchupWindowRecordsMissedTicks() {
	start := s.t0.Add(-10 * time.Minute)
	// The schedule existed for 10 minutes with no workflow running (an outage); the catch-up
	// window is 3 minutes.
	in := s.createSchedule("outage", schedulespec.Spec{Interval: every(1, "MINUTES"), StartAt: &start}, start, func(p *store.NewSchedule) {
		p.CatchupWindowMs = (3 * time.Minute).Milliseconds()
	})
	s.stopAt(90 * time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	byStatus := map[string][]time.Duration{}
	for _, r := range s.runs("outage") {
		key := string(r.Status) + "/" + string(r.Trigger)
		byStatus[key] = append(byStatus[key], r.ScheduledAt.Sub(s.t0))
		if r.Status == domain.RunMissed {
			// No worker recorded itself alive at all: the outage runs from the oldest late tick.
			s.Equal("missed: no tickgate worker was running from 2026-03-01T11:51:00Z to 2026-03-01T12:00:00Z, "+
				"and the tick is older than the catch-up window (3m)", r.Reason)
		}
	}
	// Ticks -9m..-4m are older than the window: MISSED, one row each with a reason.
	s.Equal([]time.Duration{-9 * time.Minute, -8 * time.Minute, -7 * time.Minute, -6 * time.Minute, -5 * time.Minute, -4 * time.Minute},
		byStatus["MISSED/scheduled"])
	// -3m..-1m are inside the window: run late, in order, as catch-up.
	s.Equal([]time.Duration{-3 * time.Minute, -2 * time.Minute, -time.Minute}, byStatus["SUCCEEDED/catchup"])
	// 0 is on time, and +1m fires live.
	s.Equal([]time.Duration{0, time.Minute}, byStatus["SUCCEEDED/scheduled"])
	row, err := s.store.GetSchedule(context.Background(), "outage")
	s.Require().NoError(err)
	s.Equal(int64(6), row.MissedCount)
	s.Equal(int64(5), row.FiredCount)
}

func (s *ScheduleWorkflowSuite) TestDeletedScheduleEndsItsWorkflow() {
	start := s.t0
	in := s.createSchedule("deleted", schedulespec.Spec{Interval: every(10, "SECONDS"), StartAt: &start}, s.t0, nil)
	s.env.RegisterDelayedCallback(func() {
		_, _, err := s.store.DeleteSchedule(context.Background(), "deleted")
		s.NoError(err)
	}, 15*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	s.True(s.env.IsWorkflowCompleted())
	s.NoError(s.env.GetWorkflowError())
}

func TestScheduleDescriptionsSurviveJSON(t *testing.T) {
	t.Parallel()
	next := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b, err := json.Marshal(workflows.ScheduleDescription{Name: "x", NextFireAt: &next})
	require.NoError(t, err)
	require.Contains(t, string(b), `"next_fire_at":"2026-01-01T00:00:00Z"`)
}
