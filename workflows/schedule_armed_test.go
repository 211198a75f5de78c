package workflows_test

import (
	"context"
	"encoding/json"
	"time"

	"github.com/stretchr/testify/mock"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// armedRow is what the database holds of a tick's run, armed or not, whatever the API shows.
type armedRow struct {
	exists, armed    bool
	visibleAt        *time.Time
	events, unplaced int // events of the schedule; outbox messages without a feed position
	firedCount       int64
	nextRunAt        *time.Time
}

// future runs the test clock a day ahead of the database's: a retraction keeps the armed
// fires whose visible time has come by the database's clock (now()), so the ticks of these
// tests must lie ahead of it.
func (s *ScheduleWorkflowSuite) future() {
	s.t0 = time.Now().UTC().Add(24 * time.Hour).Truncate(time.Hour)
	s.env.SetStartTime(s.t0)
}

func (s *ScheduleWorkflowSuite) armedState(name string, tick time.Time) armedRow {
	ctx := context.Background()
	var r armedRow
	row, err := s.store.GetSchedule(ctx, name)
	s.Require().NoError(err)
	r.firedCount, r.nextRunAt = row.FiredCount, row.NextRunAt
	err = s.store.Pool.QueryRow(ctx, `SELECT armed, visible_at FROM schedule_runs WHERE schedule_id = $1 AND scheduled_at = $2`,
		row.ID, tick).Scan(&r.armed, &r.visibleAt)
	r.exists = err == nil
	s.Require().NoError(s.store.Pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE o.tx_id IS NULL)
		FROM event_store e JOIN outbox_messages o ON o.event_id = e.id WHERE e.aggregate_id = $1`, name).Scan(&r.events, &r.unplaced))
	return r
}

// An event schedule commits its fire 10–30 s before the tick (a lone schedule's span is
// 20 s), hidden: no run in the lists, no count, next_run_at still on the tick, an outbox
// message without a feed position. The release at the tick makes it true.
func (s *ScheduleWorkflowSuite) TestEventScheduleArmsItsFireAheadOfTheTick() {
	s.future()
	in := s.minuteTicks("armed", nil)
	tick := s.t0.Add(minute)
	var atArm armedRow
	s.env.RegisterDelayedCallback(func() { atArm = s.armedState("armed", tick) }, 51*time.Second)
	s.stopAt(55 * time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.True(atArm.exists && atArm.armed, "the tick is armed 9 s ahead at the latest: %+v", atArm)
	s.Require().NotNil(atArm.visibleAt)
	s.Equal(tick, atArm.visibleAt.UTC())
	s.Equal(1, atArm.events)
	s.Equal(1, atArm.unplaced, "its outbox message has no feed position yet")
	s.Zero(atArm.firedCount, "not counted before its time")
	s.Require().NotNil(atArm.nextRunAt)
	s.Equal(tick, atArm.nextRunAt.UTC(), "the armed tick is still the next fire")
	s.Empty(s.runs("armed"), "no run listed before the tick (released as of 55 s: nothing)")

	// The releaser at the tick.
	_, err := s.store.ReleaseDueAsOf(context.Background(), &tick, nil)
	s.Require().NoError(err)
	after := s.armedState("armed", tick)
	s.False(after.armed)
	s.Zero(after.unplaced)
	s.Equal(int64(1), after.firedCount)
	s.Require().NotNil(after.nextRunAt)
	s.Equal(s.t0.Add(2*minute), after.nextRunAt.UTC(), "the release moves next_run_at past the tick")
}

// A pause before the tick retracts the armed fire in its own transaction: nothing of it is
// left, and the paused time is not caught up. A pause lifted before the tick fires it.
func (s *ScheduleWorkflowSuite) TestPauseBeforeTheTickRetractsTheArmedFire() {
	s.future()
	in := s.minuteTicks("armed-pause", nil)
	var paused armedRow
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.SchedulePause, workflows.PauseRequest{Note: "hold"}, func(r any, err error) { s.NoError(err) })
	}, 40*time.Second)
	s.env.RegisterDelayedCallback(func() { paused = s.armedState("armed-pause", s.t0.Add(minute)) }, 41*time.Second)
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.ScheduleResume, nil, func(r any, err error) { s.NoError(err) })
	}, 70*time.Second)
	s.stopAt(2*minute + 10*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.False(paused.exists, "the armed run is gone")
	s.Zero(paused.events, "with its event and outbox message")
	s.Equal(map[time.Duration]string{2 * minute: "SUCCEEDED"}, s.outcomes("armed-pause"), "1m came while paused: not caught up")
}

func (s *ScheduleWorkflowSuite) TestPauseAndResumeBeforeTheTickStillFiresIt() {
	s.future()
	in := s.minuteTicks("armed-blip", nil)
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.SchedulePause, workflows.PauseRequest{}, func(r any, err error) { s.NoError(err) })
	}, 40*time.Second)
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.ScheduleResume, nil, func(r any, err error) { s.NoError(err) })
	}, 45*time.Second)
	s.stopAt(minute + 10*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	s.Equal(map[time.Duration]string{minute: "SUCCEEDED"}, s.outcomes("armed-blip"), "the retracted tick's watermark was given back")
}

// A reschedule before the tick retracts the armed fire; the tick it replaces is recorded
// SKIPPED with the reason, as for any replaced tick.
func (s *ScheduleWorkflowSuite) TestRescheduleBeforeTheTickRetractsTheArmedFire() {
	s.future()
	in := s.minuteTicks("armed-resched", nil)
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.ScheduleReschedule, workflows.RescheduleRequest{NextRunAt: s.t0.Add(150 * time.Second)},
			func(r any, err error) { s.NoError(err) })
	}, 40*time.Second)
	s.stopAt(2*minute + 40*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	s.Equal(map[time.Duration]string{
		1 * minute: "SKIPPED", 2 * minute: "SKIPPED", 150 * time.Second: "SUCCEEDED",
	}, s.outcomes("armed-resched"))
	var events int
	s.Require().NoError(s.store.Pool.QueryRow(context.Background(), `SELECT count(*) FROM event_store e
		JOIN schedule_runs r ON r.id = e.schedule_run_id WHERE e.aggregate_id = 'armed-resched' AND r.scheduled_at = $1`,
		s.t0.Add(minute)).Scan(&events))
	s.Zero(events, "the retracted fire's event is gone; its tick is recorded SKIPPED")
}

// An update before the tick retracts the armed fire when the workflow reloads the
// definition (in its own transaction); the new spec decides the next tick.
func (s *ScheduleWorkflowSuite) TestUpdateBeforeTheTickRetractsTheArmedFire() {
	s.future()
	in := s.minuteTicks("armed-update", nil)
	s.env.RegisterDelayedCallback(func() {
		start := s.t0
		spec, _ := json.Marshal(schedulespec.Spec{Interval: every(2, "MINUTES"), StartAt: &start})
		_, err := s.store.UpdateSchedule(context.Background(), store.ScheduleChange{
			Name: "armed-update", Spec: spec, Action: json.RawMessage(`{"kind":"event","topic":"billing","type":"invoice.due"}`), Overlap: "skip",
		})
		s.Require().NoError(err)
		s.env.SignalWorkflow(workflows.ScheduleRefresh, nil)
	}, 40*time.Second)
	s.stopAt(2*minute + 10*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	s.Equal(map[time.Duration]string{2 * minute: "SUCCEEDED"}, s.outcomes("armed-update"))
	s.False(s.armedState("armed-update", s.t0.Add(minute)).exists, "the 1m fire was retracted")
}

// An update whose refresh never reaches the workflow retracts nothing: the armed fire
// stands under the definition the workflow has, as a fire at the tick would, and no tick is
// lost.
func (s *ScheduleWorkflowSuite) TestUpdateWithoutARefreshLeavesTheArmedFire() {
	s.future()
	in := s.minuteTicks("armed-no-refresh", nil)
	s.env.RegisterDelayedCallback(func() {
		start := s.t0
		spec, _ := json.Marshal(schedulespec.Spec{Interval: every(2, "MINUTES"), StartAt: &start})
		_, err := s.store.UpdateSchedule(context.Background(), store.ScheduleChange{
			Name: "armed-no-refresh", Spec: spec, Action: json.RawMessage(`{"kind":"event","topic":"billing","type":"invoice.due"}`), Overlap: "skip",
		})
		s.Require().NoError(err)
	}, 40*time.Second)
	s.stopAt(minute + 10*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	s.Equal(map[time.Duration]string{minute: "SUCCEEDED"}, s.outcomes("armed-no-refresh"))
	s.True(s.armedState("armed-no-refresh", s.t0.Add(minute)).exists, "the 1m fire stands")
}

// A workflow action under allow_all is armed: its run is committed 30–50 s ahead, hidden
// (RUNNING, visible at the tick), and its target started with a start delay that ends at
// the tick, so that Temporal starts it on time whatever the worker does then. Released at
// the tick, the run shows as fired at its tick.
func (s *ScheduleWorkflowSuite) TestWorkflowActionIsArmedWithAStartDelay() {
	s.future()
	in := s.minuteTicks("armed-start", withOverlap("allow_all"))
	targets := s.mockTargets(time.Second)
	tick := s.t0.Add(minute)
	var before armedRow
	s.env.RegisterDelayedCallback(func() { before = s.armedState("armed-start", tick) }, 55*time.Second)
	var afterTheTick []store.ScheduleRun
	s.env.RegisterDelayedCallback(func() { afterTheTick = s.runs("armed-start") }, minute+5*time.Second)
	s.stopAt(minute + 40*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.True(before.exists && before.armed, "armed before its tick: %+v", before)
	s.Equal(tick, before.visibleAt.UTC())
	s.Zero(before.firedCount, "not counted before its time")
	id := "schedule/armed-start/run/" + tick.Format(time.RFC3339)
	s.Equal(id, targets.started[0], "(2m's is armed too by 1m40)")
	s.Equal(tick, targets.startAt[id], "the target was started with a delay ending at the tick")
	// Its outcome is watched from the schedule's first round after the tick (the arming of
	// the next one, 10–30 s after it), not from its arming: at 1m05 it still shows RUNNING.
	s.Require().Len(afterTheTick, 1)
	s.Equal(domain.RunRunning, afterTheTick[0].Status)
	runs := s.runs("armed-start")
	s.Require().Len(runs, 1)
	s.Equal(domain.RunSucceeded, runs[0].Status, "recorded once its watch began")
	s.Equal(tick, runs[0].FiredAt.UTC(), "its target started at its tick")
	s.Equal(id, runs[0].WorkflowID)
}

// Under any policy but allow_all a workflow tick is armed only when its decision cannot
// change before it: nothing running, nothing waiting. Runs last 90 s under skip: 1m is
// armed (nothing ran); 2m is not (1m still runs when 2m would be armed) and is SKIPPED at
// its tick; 3m is armed once 1m ends at 2m30.
func (s *ScheduleWorkflowSuite) TestOtherPoliciesArmOnlyWhenNothingRuns() {
	s.future()
	in := s.minuteTicks("armed-skip", withOverlap("skip"))
	targets := s.mockTargets(90 * time.Second)
	s.stopAt(3*minute + 10*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.Equal(map[time.Duration]string{1 * minute: "SUCCEEDED", 2 * minute: "SKIPPED", 3 * minute: "RUNNING"}, s.outcomes("armed-skip"))
	one, three := "schedule/armed-skip/run/"+s.t0.Add(minute).Format(time.RFC3339), "schedule/armed-skip/run/"+s.t0.Add(3*minute).Format(time.RFC3339)
	s.Equal([]string{one, three}, targets.started)
	s.Equal(s.t0.Add(minute), targets.startAt[one])
	s.Equal(s.t0.Add(3*minute), targets.startAt[three], "armed after 1m ended, still ahead of its tick")
}

// A pause before the tick stops the delayed start first, then retracts the fire in its
// transaction: the row stays as the record of the retraction (SKIPPED, retracted_at, not a
// run), and no target runs. A resume before the tick fires the tick after all, under a
// workflow id of its own (the stopped one cannot start again).
func (s *ScheduleWorkflowSuite) TestPauseBeforeTheTickStopsTheDelayedStart() {
	s.future()
	in := s.minuteTicks("armed-start-pause", withOverlap("allow_all"))
	targets := s.mockTargets(time.Second)
	tick := s.t0.Add(minute)
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.SchedulePause, workflows.PauseRequest{Note: "hold"}, func(r any, err error) { s.NoError(err) })
	}, 40*time.Second)
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.ScheduleResume, nil, func(r any, err error) { s.NoError(err) })
	}, 45*time.Second)
	s.stopAt(minute + 40*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	first := "schedule/armed-start-pause/run/" + tick.Format(time.RFC3339)
	s.Equal("terminate", targets.stopped[first], "the delayed start was stopped")
	var status, reason, key string
	var retracted *time.Time
	s.Require().NoError(s.store.Pool.QueryRow(context.Background(), `SELECT status, reason, idempotency_key, retracted_at
		FROM schedule_runs WHERE workflow_id = $1`, first).Scan(&status, &reason, &key, &retracted))
	s.Equal("SKIPPED", status)
	s.NotNil(retracted)
	s.Equal("retracted before its tick: the schedule was paused; its delayed start was stopped and never ran", reason)
	runs := s.runs("armed-start-pause")
	s.Require().Len(runs, 1, "the retraction is not a run; the tick fired once")
	s.Equal(domain.RunSucceeded, runs[0].Status)
	s.Equal(first+"~2", runs[0].WorkflowID)
	s.Equal([]string{first, first + "~2"}, targets.started[:2], "(2m's is armed too by 1m40)")
}

// Under skip, a trigger before the armed tick would start a run the tick's decision did not
// count on: the armed fire is retracted first (its start stopped), and the tick is decided
// at its time — SKIPPED, since the triggered run still runs.
func (s *ScheduleWorkflowSuite) TestTriggerBeforeTheArmedTickRetractsItUnderSkip() {
	s.future()
	in := s.minuteTicks("armed-trigger", withOverlap("skip"))
	targets := s.mockTargets(100 * time.Second)
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.ScheduleTrigger, workflows.TriggerRequest{RequestID: "early"}, func(r any, err error) { s.NoError(err) })
	}, 45*time.Second)
	s.stopAt(minute + 10*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	armed := "schedule/armed-trigger/run/" + s.t0.Add(minute).Format(time.RFC3339)
	s.Equal("terminate", targets.stopped[armed])
	s.Equal(map[time.Duration]string{45 * time.Second: "RUNNING/manual", minute: "SKIPPED"}, s.outcomes("armed-trigger"))
}

// armings counts the windows an every-second schedule arms, and checks each was armed
// before its first fire.
func (s *ScheduleWorkflowSuite) armings() *int {
	n := new(int)
	s.env.OnActivity(s.acts.ArmWindow, mock.Anything, mock.Anything).Return(func(ctx context.Context, r activities.ArmWindowRequest) (activities.ArmedWindow, error) {
		*n++
		s.True(r.First.After(s.env.Now()), "window from %s armed at %s: before its first tick", r.First, s.env.Now())
		return s.acts.ArmWindow(ctx, r)
	})
	return n
}

// An every-second event schedule arms its ticks in windows: a few arming transactions for
// two minutes of ticks, each tick's fire committed ahead and made true once by the release,
// none lost (S2) or doubled (S1); next_run_at follows the releases.
func (s *ScheduleWorkflowSuite) TestEveryTickOfAFastScheduleIsArmedInWindowsOnce() {
	start := s.t0
	in := s.createSchedule("every-second", schedulespec.Spec{Interval: every(1, "SECONDS"), StartAt: &start}, s.t0, nil)
	windows := s.armings()
	var nextAt61 *time.Time
	for sec := 1; sec <= 120; sec++ { // the releaser, every second
		s.env.RegisterDelayedCallback(s.release, time.Duration(sec)*time.Second+100*time.Millisecond)
	}
	s.env.RegisterDelayedCallback(func() {
		row, err := s.store.GetSchedule(context.Background(), "every-second")
		s.Require().NoError(err)
		nextAt61 = row.NextRunAt
	}, 61*time.Second+200*time.Millisecond)
	s.stopAt(120*time.Second + 500*time.Millisecond)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	runs := s.runs("every-second")
	s.Require().Len(runs, 120)
	for i, r := range runs {
		s.Equal(s.t0.Add(time.Duration(i+1)*time.Second), r.ScheduledAt.UTC(), "tick %d once, in order", i+1)
		s.Equal(domain.RunSucceeded, r.Status)
	}
	s.LessOrEqual(*windows, 120/10, "ticks armed in windows, not one by one")
	s.GreaterOrEqual(*windows, 120/30)
	s.Require().NotNil(nextAt61)
	s.Equal(s.t0.Add(62*time.Second), nextAt61.UTC(), "next_run_at is the first fire not yet released")
	row, err := s.store.GetSchedule(context.Background(), "every-second")
	s.Require().NoError(err)
	s.Equal(int64(120), row.FiredCount)
}

// A pause retracts every armed fire of the windows not yet due, in its own transaction; the
// paused time is not caught up, and the resumed schedule arms windows again.
func (s *ScheduleWorkflowSuite) TestPauseRetractsTheArmedWindows() {
	s.future()
	start := s.t0
	in := s.createSchedule("window-pause", schedulespec.Spec{Interval: every(1, "SECONDS"), StartAt: &start}, s.t0, nil)
	var pendingAtPause int
	s.env.RegisterDelayedCallback(func() {
		s.release()
		s.Require().NoError(s.store.Pool.QueryRow(context.Background(),
			`SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND armed`, in.ScheduleID).Scan(&pendingAtPause))
		s.update(workflows.SchedulePause, workflows.PauseRequest{}, func(r any, err error) { s.NoError(err) })
	}, 30*time.Second+500*time.Millisecond)
	var afterPause armedRow
	s.env.RegisterDelayedCallback(func() { afterPause = s.armedState("window-pause", s.t0.Add(31*time.Second)) }, 31*time.Second)
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.ScheduleResume, nil, func(r any, err error) { s.NoError(err) })
	}, 60*time.Second+500*time.Millisecond)
	s.stopAt(70*time.Second + 500*time.Millisecond)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.Positive(pendingAtPause, "fires after 30 s were armed when the pause came")
	s.False(afterPause.exists, "the pause retracted them")
	s.Zero(afterPause.unplaced, "with their events and outbox messages")
	var got []time.Duration
	for _, r := range s.runs("window-pause") {
		got = append(got, r.ScheduledAt.Sub(s.t0))
	}
	var want []time.Duration
	for sec := 1; sec <= 70; sec++ {
		if sec <= 30 || sec > 60 {
			want = append(want, time.Duration(sec)*time.Second)
		}
	}
	s.Equal(want, got, "1–30 s before the pause, 61–70 s after the resume, nothing of the paused time")
}

// A reschedule that reaches a new schedule while it loads, 10 s before its first tick,
// wins over the window the loop was about to arm for that tick: the loop decided to arm
// before the reschedule took the mirror lock, and finds it taken after. The replaced tick
// is recorded SKIPPED, the rescheduled one fires, and next_run_at is the reschedule's.
// (Without the check under the lock the window was armed anyway: the replaced tick fired
// and next_run_at went back to it — seen in TestScheduleRescheduleAndBackfillThroughTheAPI.)
func (s *ScheduleWorkflowSuite) TestRescheduleWhileTheFirstWindowIsDecidedWins() {
	s.future()
	created := s.t0.Add(50 * time.Second) // the first tick, t0 + 1m, is 10 s ahead
	s.env.SetStartTime(created)
	start := s.t0
	in := s.createSchedule("resched-first", schedulespec.Spec{Interval: every(1, "MINUTES"), StartAt: &start}, created, nil)
	at := s.t0.Add(75 * time.Second)
	// The load takes 2 s and the reschedule's mirror write 3 s: the reschedule holds the
	// mirror lock from 1 s to 4 s, while the loop, loaded at 2 s, decides to arm the first
	// tick's window and waits for the lock.
	s.env.OnActivity(s.acts.LoadSchedule, mock.Anything, mock.Anything).After(2 * time.Second).Return(s.acts.LoadSchedule)
	s.env.OnActivity(s.acts.MirrorNextRun, mock.Anything, mock.Anything).After(3 * time.Second).Return(s.acts.MirrorNextRun)
	var nextAfter *time.Time
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.ScheduleReschedule, workflows.RescheduleRequest{NextRunAt: at}, func(r any, err error) {
			s.Require().NoError(err)
			row, err := s.store.GetSchedule(context.Background(), "resched-first")
			s.Require().NoError(err)
			nextAfter = row.NextRunAt
		})
	}, time.Second)
	s.stopAt(40 * time.Second) // t0 + 90 s
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.Require().NotNil(nextAfter)
	s.Equal(at, nextAfter.UTC(), "next_run_at is the reschedule's")
	s.Equal(map[time.Duration]string{minute: "SKIPPED", 75 * time.Second: "SUCCEEDED"}, s.outcomes("resched-first"))
}

// The arming of a tick many schedules share is spread over a span that grows with them
// (n / armRate): 5,000 schedules due at the same second as this one make its windows reach
// 100 s beyond their 10 s lead instead of 20 s, so that their armings come about 50 a second
// rather than 250 — from its first window on, counted when the workflow loads. A schedule
// whose next fire is not known at its load (none here) starts from the least span, 20 s.
func (s *ScheduleWorkflowSuite) TestTheArmingSpanGrowsWithTheSchedulesDueTogether() {
	for _, c := range []struct {
		name      string
		knownNext bool
		first     time.Duration
	}{{"crowded", true, 110 * time.Second}, {"crowded-unknown", false, 30 * time.Second}} {
		s.Run(c.name, func() { s.armingSpanOfACrowd(c.name, c.knownNext, c.first) })
	}
}

func (s *ScheduleWorkflowSuite) armingSpanOfACrowd(name string, knownNext bool, first time.Duration) {
	s.SetupTest()
	s.future()
	in := s.minuteTicks(name, nil)
	ctx := context.Background()
	if knownNext { // as the API writes it at creation
		_, err := s.store.Pool.Exec(ctx, "UPDATE schedules SET next_run_at = $1 WHERE id = $2", s.t0.Add(minute), in.ScheduleID)
		s.Require().NoError(err)
	}
	_, err := s.store.Pool.Exec(ctx, `INSERT INTO schedules (name, spec, action, next_run_at)
		SELECT 'crowd-' || i, '{"cron": "* * * * *"}', '{"kind": "event", "topic": "t", "type": "x"}', $1
		FROM generate_series(1, 4999) i`, s.t0.Add(minute))
	s.Require().NoError(err)
	var reaches []time.Duration
	s.env.OnActivity(s.acts.ArmWindow, mock.Anything, mock.Anything).Return(func(ctx context.Context, r activities.ArmWindowRequest) (activities.ArmedWindow, error) {
		reaches = append(reaches, r.Until.Sub(s.env.Now()))
		return s.acts.ArmWindow(ctx, r)
	})
	s.stopAt(5 * minute)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.Require().GreaterOrEqual(len(reaches), 2)
	s.Equal(first, reaches[0], "the first window")
	// The crowd stays on 1m (rows only), so later counts find fewer, and the span shrinks by
	// a sixteenth per window.
	s.Equal(110*time.Second, reaches[1], "5,000 due together: lead 10 s + 5,000 / 50 s")
	const lead = 10 * time.Second
	for i := 2; i < len(reaches); i++ {
		s.Less(reaches[i], reaches[i-1])
		span := reaches[i-1] - lead
		s.GreaterOrEqual(reaches[i], lead+span-span/16-time.Second, "window %d shrinks by a sixteenth at most", i)
	}
	s.Len(s.runs(name), 5, "every tick up to 5m fired, once")
}
