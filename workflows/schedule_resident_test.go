package workflows_test

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/internal/scheduleplan"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// Resident schedules (TICKGATE_SCHEDULES_RESIDENT, workflows/schedule_resident.go): the
// schedule's workflow stays open at rest while the planner arms its fires and the releasers
// release them. The planner and the releaser are played here by the test, on the workflow's
// clock (plannerEvery).

// timerLog records every durable timer a workflow starts: when it ends and its summary.
type timerLog struct {
	interceptor.WorkerInterceptorBase
	mu     sync.Mutex
	timers []loggedTimer
}

type loggedTimer struct {
	at      time.Time
	summary string
}

func (l *timerLog) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &timerInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, log: l}
}

type timerInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	log *timerLog
}

func (i *timerInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&timerOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}, log: i.log})
}

type timerOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	log *timerLog
}

func (o *timerOutbound) NewTimerWithOptions(ctx workflow.Context, d time.Duration, opts workflow.TimerOptions) workflow.Future {
	if !workflow.IsReplaying(ctx) {
		o.log.mu.Lock()
		o.log.timers = append(o.log.timers, loggedTimer{at: workflow.Now(ctx).Add(d), summary: opts.Summary})
		o.log.mu.Unlock()
	}
	return o.Next.NewTimerWithOptions(ctx, d, opts)
}

// last is the summary of the newest timer started.
func (l *timerLog) last() loggedTimer {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.timers) == 0 {
		return loggedTimer{}
	}
	return l.timers[len(l.timers)-1]
}

// summaries lists every summary logged, in order.
func (l *timerLog) summaries() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, len(l.timers))
	for i, t := range l.timers {
		out[i] = t.summary
	}
	return out
}

// signalWakes is the planner's starter in these tests: a wake is the signal to the open run.
type signalWakes struct {
	s     *ScheduleWorkflowSuite
	wakes int
}

func (w *signalWakes) WakeSchedule(context.Context, int64, string) error {
	w.wakes++
	w.s.env.SignalWorkflow(workflows.ScheduleWake, nil)
	return nil
}

func (w *signalWakes) StopSchedule(context.Context, string, string) error { return nil }

// resident makes the workers keep schedules resident, logs the workflow's timers, and counts
// the ticks the workflow itself records (RecordTick: a fire it decided).
func (s *ScheduleWorkflowSuite) resident() (*timerLog, *int) {
	s.future()
	s.acts.Resident = true
	timers := &timerLog{}
	s.env.SetWorkerOptions(workflowWorkerOptions(timers))
	var mu sync.Mutex
	decided := 0
	s.env.OnActivity(s.acts.RecordTick, mock.Anything, mock.Anything).Return(func(ctx context.Context, r activities.TickRecord) (activities.RunRecord, error) {
		mu.Lock()
		decided++
		mu.Unlock()
		return s.acts.RecordTick(ctx, r)
	})
	return timers, &decided
}

// plannerEvery plays a worker's planner and releaser every step of the workflow's clock
// until `until`: a planner round at the clock's now, then every armed fire due released.
func (s *ScheduleWorkflowSuite) plannerEvery(step, until time.Duration, starter activities.ScheduleStarter) {
	planner := &activities.ScheduleActivities{Store: s.store, Schedules: starter}
	for at := time.Second; at <= until; at += step {
		s.env.RegisterDelayedCallback(func() {
			_, err := planner.PlanRound(context.Background(), s.env.Now())
			s.NoError(err)
			s.release()
		}, at)
	}
}

// owner is the schedule row's owner ("" at rest: the planner's) and plan action.
func (s *ScheduleWorkflowSuite) ownerAndPlan(name string) (owner, plan string) {
	row, err := s.store.GetSchedule(context.Background(), name)
	s.Require().NoError(err)
	if row.Owner != nil {
		owner = *row.Owner
	}
	if row.PlanAction != nil {
		plan = *row.PlanAction
	}
	return owner, plan
}

// A resident event schedule: its workflow, woken once, rests in place and stays open across
// five fires the planner arms and the releaser releases — one run and one event each,
// none decided by the workflow. At rest it sleeps on a timer whose summary names the next
// fire, looks again a little after each one, and answers describe with the next fire.
func (s *ScheduleWorkflowSuite) TestResidentScheduleStaysOpenAcrossFiresThePlannerArms() {
	timers, decided := s.resident()
	in := s.minuteTicks("resident", nil)
	in.Woken = true
	s.plannerEvery(30*time.Second, 5*minute+30*time.Second, nil)
	var atRest []workflows.ScheduleDescription
	var timerAt []loggedTimer
	var owners []string
	for _, at := range []time.Duration{30 * time.Second, 90 * time.Second, 4*minute + 45*time.Second} {
		s.env.RegisterDelayedCallback(func() {
			s.False(s.env.IsWorkflowCompleted(), "open at %s", at)
			atRest = append(atRest, s.describe())
			timerAt = append(timerAt, timers.last())
			owner, _ := s.ownerAndPlan("resident")
			owners = append(owners, owner)
		}, at)
	}
	s.stopAt(5*minute + 40*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.Equal(map[time.Duration]string{1 * minute: "SUCCEEDED", 2 * minute: "SUCCEEDED", 3 * minute: "SUCCEEDED",
		4 * minute: "SUCCEEDED", 5 * minute: "SUCCEEDED"}, s.outcomes("resident"), "every tick fired once")
	s.Equal(0, *decided, "the planner armed every fire; the workflow at rest decided none")
	var events, runs, keys int
	s.Require().NoError(s.store.Pool.QueryRow(context.Background(), `SELECT count(DISTINCT e.id), count(DISTINCT r.id), count(DISTINCT r.idempotency_key)
		FROM schedule_runs r JOIN event_store e ON e.schedule_run_id = r.id JOIN schedules s ON s.id = r.schedule_id
		WHERE s.name = 'resident' AND r.scheduled_at <= $1`, s.t0.Add(5*minute)).Scan(&events, &runs, &keys))
	s.Equal(5, events, "one event per tick")
	s.Equal(5, runs)
	s.Equal(5, keys)

	s.Equal([]string{"", "", ""}, owners, "at rest the schedule is the planner's")
	for i, want := range []time.Duration{1 * minute, 2 * minute, 5 * minute} {
		d := atRest[i]
		s.True(d.AtRest, "describe says at rest (%d)", i)
		s.Require().NotNil(d.NextFireAt, "describe names the next fire (%d)", i)
		s.Equal(s.t0.Add(want), d.NextFireAt.UTC(), "describe's next fire (%d)", i)
		s.Equal("next fire at "+s.t0.Add(want).Format(time.RFC3339)+" (at rest: the planner arms it)", timerAt[i].summary,
			"the timer at rest names the next fire (%d)", i)
		s.True(timerAt[i].at.After(s.t0.Add(want)), "and looks again after it (%d)", i)
		s.False(timerAt[i].at.After(s.t0.Add(want+35*time.Second)), "a little after it (%d)", i)
	}
	s.Contains(timers.summaries(), "next fire at "+s.t0.Add(3*minute).Format(time.RFC3339)+" (at rest: the planner arms it)")
}

// Plain signals reach a resident run at its timer — no signal-with-start needed, since the
// run is open. A trigger takes the schedule over from its row (adopting the fires the planner
// armed meanwhile, which stay armed and fire once), fires the manual run, and the run rests
// in place again; a pause then retracts the armed fires and rests the paused schedule, its
// timer saying so. Every tick before the pause fires exactly once.
func (s *ScheduleWorkflowSuite) TestResidentScheduleTakesPlainSignalsAtItsTimer() {
	timers, decided := s.resident()
	in := s.minuteTicks("resident-signals", nil)
	in.Woken = true
	s.plannerEvery(20*time.Second, 7*minute, nil)
	// 1m50: the planner has armed 2m and 3m; the trigger takes them over.
	s.env.RegisterDelayedCallback(func() {
		s.True(s.describe().AtRest)
		s.env.SignalWorkflow(workflows.ScheduleTrigger, workflows.TriggerRequest{RequestID: "svc-1"})
	}, 110*time.Second)
	var awake workflows.ScheduleDescription
	var awakeOwner string
	s.env.RegisterDelayedCallback(func() {
		awake = s.describe()
		awakeOwner, _ = s.ownerAndPlan("resident-signals")
	}, 115*time.Second)
	var restedAgain workflows.ScheduleDescription
	var restedOwner, restedPlan string
	s.env.RegisterDelayedCallback(func() { // after its linger
		restedAgain = s.describe()
		restedOwner, restedPlan = s.ownerAndPlan("resident-signals")
	}, 3*minute+30*time.Second)
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(workflows.SchedulePause, workflows.PauseRequest{Note: "by billing"})
	}, 4*minute+10*time.Second)
	var paused workflows.ScheduleDescription
	var pausedTimer loggedTimer
	s.env.RegisterDelayedCallback(func() {
		paused = s.describe()
		pausedTimer = timers.last()
	}, 6*minute+30*time.Second)
	s.stopAt(7*minute + 10*time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.False(awake.AtRest, "the signal made it take the schedule over")
	s.NotEmpty(awakeOwner, "as the row's owner")
	s.True(restedAgain.AtRest, "it rested in place again after its linger")
	s.Empty(restedOwner)
	s.Equal(scheduleplan.Arm, restedPlan, "and the planner arms its fires again")
	s.Equal(map[time.Duration]string{
		1 * minute: "SUCCEEDED", 110 * time.Second: "SUCCEEDED/manual", 2 * minute: "SUCCEEDED", 3 * minute: "SUCCEEDED",
		4 * minute: "SUCCEEDED",
	}, s.outcomes("resident-signals"), "each tick once, the trigger once; nothing after the pause")
	// The workflow recorded the manual run only: the armed ticks it adopted fired as armed,
	// and none after the takeover was due before it rested.
	s.Equal(1, *decided)
	var dup int
	s.Require().NoError(s.store.Pool.QueryRow(context.Background(), `SELECT count(*) FROM (SELECT scheduled_at FROM schedule_runs r
		JOIN schedules s ON s.id = r.schedule_id WHERE s.name = 'resident-signals' AND r.retracted_at IS NULL
		GROUP BY scheduled_at, trigger HAVING count(*) > 1) d`).Scan(&dup))
	s.Zero(dup, "no tick has two runs")
	s.True(paused.AtRest)
	s.True(paused.Paused)
	s.Equal("by billing", paused.Note)
	s.Nil(paused.NextFireAt)
	s.Equal("paused: no fire until a resume", pausedTimer.summary)
	row, err := s.store.GetSchedule(context.Background(), "resident-signals")
	s.Require().NoError(err)
	s.True(row.Paused)
	s.Nil(row.Owner, "paused and at rest: the planner's")
}

// A fire the planner cannot arm (skip_if_successful reads the runs up to its tick) is
// decided by the schedule's workflow at its tick: the planner wakes the resident run at rest
// with the wake signal, the run takes the schedule over, decides the tick, and rests in place
// again. The tick fires once.
func (s *ScheduleWorkflowSuite) TestResidentScheduleWokenByThePlannerDecidesItsFire() {
	timers, decided := s.resident()
	start := s.t0
	in := s.createSchedule("resident-woken", schedulespec.Spec{Interval: every(10, "MINUTES"), StartAt: &start}, s.t0, func(p *store.NewSchedule) {
		p.SkipIfSuccessful = true
	})
	in.Woken = true
	wakes := &signalWakes{s: s}
	s.plannerEvery(15*time.Second, 25*minute, wakes)
	var between workflows.ScheduleDescription
	var betweenTimer loggedTimer
	s.env.RegisterDelayedCallback(func() { between, betweenTimer = s.describe(), timers.last() }, 12*minute)
	s.stopAt(25 * time.Minute)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.Equal(map[time.Duration]string{10 * minute: "SUCCEEDED", 20 * minute: "SUCCEEDED"}, s.outcomes("resident-woken"))
	s.Equal(2, *decided, "the workflow decided both ticks, woken before each")
	s.GreaterOrEqual(wakes.wakes, 2)
	s.True(between.AtRest, "and rested in place between them")
	s.Require().NotNil(between.NextFireAt)
	s.Equal(s.t0.Add(20*minute), between.NextFireAt.UTC())
	s.Equal("next fire at "+s.t0.Add(20*minute).Format(time.RFC3339)+" (at rest: the planner wakes this workflow to decide it)",
		betweenTimer.summary)
}

// A resident run continues as new at rest after its looks, carrying nothing (the row holds
// the schedule's state): the continued run, at rest from its start, takes a trigger and
// fires it once.
func (s *ScheduleWorkflowSuite) TestResidentScheduleContinuesAsNewAtRest() {
	s.resident()
	in := s.minuteTicks("resident-can", nil)
	in.Woken = true
	in.Carry = &workflows.ScheduleCarry{ContinueAsNewAfter: 3}
	s.plannerEvery(30*time.Second, 10*minute, nil)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	s.True(s.env.IsWorkflowCompleted())
	var can *workflow.ContinueAsNewError
	s.Require().ErrorAs(s.env.GetWorkflowError(), &can, "it continued as new")
	var next workflows.ScheduleInput
	s.Require().NoError(converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	s.True(next.AtRest, "at rest")
	s.Nil(next.Carry.Running)
	owner, _ := s.ownerAndPlan("resident-can")
	s.Empty(owner, "the schedule stayed the planner's")
	firedBefore := len(s.runs("resident-can"))
	s.Positive(firedBefore)

	now := s.env.Now()
	s.freshEnv(now)
	timers := &timerLog{}
	s.env.SetWorkerOptions(workflowWorkerOptions(timers))
	s.env.RegisterDelayedCallback(func() {
		s.True(s.describe().AtRest, "the continued run starts at rest")
		s.env.SignalWorkflow(workflows.ScheduleTrigger, workflows.TriggerRequest{RequestID: "after-can"})
	}, 5*time.Second)
	s.stopAt(20 * time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, next)
	var manual int
	s.Require().NoError(s.store.Pool.QueryRow(context.Background(), `SELECT count(*) FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id
		WHERE s.name = 'resident-can' AND r.trigger = 'manual'`).Scan(&manual))
	s.Equal(1, manual)
	s.True(strings.HasPrefix(timers.summaries()[0], "next fire at "), "its first timer names the next fire: %v", timers.summaries())
}

// Turning resident schedules off ends a resident run at its next look: the schedule stays at
// rest, the planner's. A deleted schedule ends it too.
func (s *ScheduleWorkflowSuite) TestResidentRunEndsWhenResidencyIsOffOrTheScheduleIsGone() {
	s.resident()
	in := s.minuteTicks("resident-off", nil)
	in.Woken = true
	s.plannerEvery(30*time.Second, 3*minute, nil)
	s.env.RegisterDelayedCallback(func() { s.acts.Resident = false }, 30*time.Second)
	s.stopAt(10 * minute)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	s.True(s.env.IsWorkflowCompleted())
	s.NoError(s.env.GetWorkflowError())
	s.Less(s.env.Now().Sub(s.t0), 2*minute, "it ended at its look after the first fire")
	owner, plan := s.ownerAndPlan("resident-off")
	s.Empty(owner)
	s.Equal(scheduleplan.Arm, plan)

	s.freshEnv(s.t0)
	s.acts.Resident = true
	in = s.minuteTicks("resident-gone", nil)
	in.Woken = true
	s.env.RegisterDelayedCallback(func() {
		_, _, err := s.store.DeleteSchedule(context.Background(), "resident-gone")
		s.NoError(err)
	}, 30*time.Second)
	s.stopAt(10 * minute)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	s.True(s.env.IsWorkflowCompleted())
	s.NoError(s.env.GetWorkflowError(), "a deleted schedule ends its run")
}

// A run pinned before schedule-resident ends when it rests, resident workers or not: it asks
// to rest, and the planner completes the rest once the run has ended.
func (s *ScheduleWorkflowSuite) TestRunPinnedBeforeResidencyEndsWhenItRests() {
	s.resident()
	s.env.OnGetVersion("schedule-resident", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	in := s.minuteTicks("resident-old", nil)
	in.Woken = true
	s.stopAt(10 * minute)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	s.True(s.env.IsWorkflowCompleted())
	s.NoError(s.env.GetWorkflowError())
	row, err := s.store.GetSchedule(context.Background(), "resident-old")
	s.Require().NoError(err)
	s.NotNil(row.Owner, "the rest is a request: the planner completes it once the run has ended")
	s.NotNil(row.RestRequestedAt)
}

// workflowWorkerOptions are the test worker's options with the timer log as an interceptor.
func workflowWorkerOptions(l *timerLog) worker.Options {
	return worker.Options{Interceptors: []interceptor.WorkerInterceptor{l}}
}
