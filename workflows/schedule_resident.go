package workflows

import (
	"fmt"
	"hash/fnv"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
)

// Resident workflows (docs/schedules.md "Resident workflows"). With
// TICKGATE_SCHEDULES_RESIDENT the workers keep a schedule's workflow open between fires: when
// the run rests, it hands the schedule to the planner as any run does — the same state and
// plan, the handover completed in the rest's own transaction (activities.Rested.InPlace) —
// and stays open at rest instead of ending. At rest it decides nothing and writes nothing:
// the planner arms the fires and the releasers release them, exactly as for a schedule
// whose workflow ended. It sleeps on a durable timer whose summary names the next fire,
// answers describe from its last look at the row, and takes plain signals and updates: what
// reaches it (a command, the planner's wake) makes it take the schedule over again from its
// row (begin: TakeOwnership adopts the fires the planner armed meanwhile, so none is decided
// twice), and the loop decides it as in any run. It continues as new at rest after
// residentLooksPerRun looks, so its history stays small.

// scheduleResidentChange: from version 1 a run whose worker keeps schedules resident stays
// open when it rests. A run pinned before it ends when it rests, as its code did.
const scheduleResidentChange = "schedule-resident"

// ScheduleWake is the signal by which the planner wakes a resident schedule's workflow at
// rest to decide a fire at its tick (signal-with-start: a schedule with no open workflow
// gets one). A run that holds its schedule ignores it.
const ScheduleWake = "wake"

// The pace of a resident run at rest.
const (
	// residentLooksPerRun is how many looks (and loop rounds) a resident run makes before it
	// continues as new at rest: a look is about six history events.
	residentLooksPerRun = 24
	// residentLookEvery is the least time between two looks: a schedule firing every second
	// is looked at once a minute, not at every fire.
	residentLookEvery = time.Minute
	// residentIdleLook is when a run with no fire ahead (paused, or its spec ended) looks
	// again, unless something reaches it first.
	residentIdleLook = 24 * time.Hour
	// residentLookSpread bounds how long after a fire a run looks again (lookSpread).
	residentLookSpread = 30 * time.Second
)

// mayStayOpen reports whether the run takes scheduleResidentChange's new branch (pinned at
// the run's start, pinChanges).
func mayStayOpen(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, scheduleResidentChange, workflow.DefaultVersion, 1) >= 1
}

// stayAtRest keeps the run open while its schedule is at rest, from the first look its rest
// answered (nil: look first). It returns end when the run is to end (the workers no longer
// keep schedules resident, or a one-time schedule completed); otherwise, once a command or a
// wake has reached the run, the run is ready to take the schedule over again (begin). A
// deleted schedule ends the run through ErrScheduleGone; the run continues as new at rest
// after residentLooksPerRun looks.
func (w *scheduleWorkflow) stayAtRest(ctx workflow.Context, look *activities.RestLook) (end bool, err error) {
	if !w.tookResident {
		w.tookResident = true
		branchTaken(ctx, scheduleResidentChange)
	}
	defer func() { w.resting = nil }()
	for {
		if look == nil {
			if w.reachedAtRest(ctx) { // no look needed: the row is read again as the run takes it over
				w.prepareRetake()
				return false, nil
			}
			var l activities.RestLook
			if err := workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.LookAtRest, activities.RestLookRequest{
				ScheduleID: w.in.ScheduleID, At: workflow.Now(ctx),
			}).Get(ctx, &l); err != nil {
				return false, err
			}
			look = &l
		}
		w.resting = look
		if w.reachedAtRest(ctx) {
			w.prepareRetake()
			return false, nil
		}
		if !look.Resident || look.Completed {
			return true, nil
		}
		if w.events >= w.restLimit() || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			return false, w.continueAsNewAtRest(ctx)
		}
		w.events++
		if err := w.sleepAtRest(ctx, *look); err != nil {
			return false, err
		}
		look = nil
	}
}

// reachedAtRest reports whether something reached the run at rest: a command (in the inbox,
// unread, or an update's handler mid-way) or the planner's wake.
func (w *scheduleWorkflow) reachedAtRest(ctx workflow.Context) bool {
	if len(w.inbox) > 0 || w.wakeAsked || !workflow.AllHandlersFinished(ctx) || workflow.GetSignalChannel(ctx, ScheduleWake).Len() > 0 {
		return true
	}
	for _, name := range commandNames {
		if workflow.GetSignalChannel(ctx, name).Len() > 0 {
			return true
		}
	}
	return false
}

// prepareRetake readies the run to take its schedule over again from its row (begin):
// everything of its runtime state comes from the row, as for a run started afresh — woken
// by the planner (no linger after the fire it decides) or by a command.
func (w *scheduleWorkflow) prepareRetake() {
	keep := w.carry.ContinueAsNewAfter
	w.in.Carry, w.in.AtRest, w.in.Woken = nil, false, w.wakeAsked && len(w.inbox) == 0
	w.carry = ScheduleCarry{ContinueAsNewAfter: keep}
	w.wakeAsked, w.mirrored, w.work = false, nil, workSpan{}
}

// restLimit is how many looks and loop rounds a resident run makes before it continues as
// new at rest.
func (w *scheduleWorkflow) restLimit() int {
	if n := w.carry.ContinueAsNewAfter; n > 0 {
		return n
	}
	return residentLooksPerRun
}

// sleepAtRest waits on a durable timer whose summary names the next fire, until a little
// after it (lookSpread) — or, with no fire ahead, a day — or until something reaches the run.
func (w *scheduleWorkflow) sleepAtRest(ctx workflow.Context, look activities.RestLook) error {
	now := workflow.Now(ctx)
	lookAt, summary := restTimer(now, w.in.Name, look)
	workflow.SetCurrentDetails(ctx, restDetails(look))
	w.work = workSpan{}
	tctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	timer := workflow.NewTimerWithOptions(tctx, lookAt.Sub(now), workflow.TimerOptions{Summary: summary})
	return workflow.Await(ctx, func() bool { return timer.IsReady() || len(w.inbox) > 0 || w.wakeAsked })
}

// restTimer is when a run at rest looks again, and its timer's summary.
func restTimer(now time.Time, name string, look activities.RestLook) (time.Time, string) {
	switch {
	case look.NextFire != nil:
		at := look.NextFire.Add(lookSpread(name))
		if earliest := now.Add(residentLookEvery); at.Before(earliest) {
			at = earliest
		}
		how := "(at rest: the planner arms it)"
		if look.Decided {
			how = "(at rest: the planner wakes this workflow to decide it)"
		}
		return at, "next fire at " + look.NextFire.UTC().Format(time.RFC3339) + " " + how
	case look.Paused:
		return now.Add(residentIdleLook), "paused: no fire until a resume"
	case look.OneTime:
		return now.Add(residentLookEvery), "its one tick is behind it: it completes once its run has ended"
	}
	return now.Add(residentIdleLook), "no fire ahead: its spec has ended"
}

// restDetails is what the Temporal UI shows of a run at rest.
func restDetails(look activities.RestLook) string {
	switch {
	case look.Paused:
		return fmt.Sprintf("at rest · **paused** %s", look.Note)
	case look.NextFire == nil:
		return "at rest · no fire ahead"
	}
	return fmt.Sprintf("at rest · next fire at %s · the planner arms the fires; a command or a wake takes the schedule over",
		look.NextFire.UTC().Format(time.RFC3339))
}

// lookSpread is how long after a fire a run at rest looks again: 2 to 32 s by the schedule's
// name, so that the runs of thousands of schedules sharing a tick do not all wake with the
// release of their fires.
func lookSpread(name string) time.Duration {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return 2*time.Second + time.Duration(h.Sum32()%uint32(residentLookSpread/time.Millisecond))*time.Millisecond
}

// describeAtRest answers describe at rest, from the last look.
func (w *scheduleWorkflow) describeAtRest(look activities.RestLook) ScheduleDescription {
	return ScheduleDescription{
		Name: w.in.Name, Paused: look.Paused, Note: look.Note, Watermark: look.Watermark, NextFireAt: look.NextTick,
		Running: []RunningRun{}, Version: look.Version, AtRest: true,
	}
}

// continueAsNewAtRest hands the run over to a fresh one at rest; nothing of the schedule's
// runtime state is the run's at rest (the row holds it), so nothing is carried.
func (w *scheduleWorkflow) continueAsNewAtRest(ctx workflow.Context) error {
	in := ScheduleInput{ScheduleID: w.in.ScheduleID, Name: w.in.Name, AtRest: true}
	if n := w.carry.ContinueAsNewAfter; n > 0 {
		in.Carry = &ScheduleCarry{ContinueAsNewAfter: n}
	}
	return workflow.NewContinueAsNewError(ctx, ScheduleWorkflowType, in)
}
