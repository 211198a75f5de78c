package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
)

// The inbox (docs/schedules.md "How a schedule's workflow decides"): the schedule's loop is
// the one place a fire is decided. An update or a signal is judged at its door by the
// command rules (schedule_commands.go) and put in the inbox; a watch that saw its run end
// puts the end there. The loop takes what arrived in the order it arrived, each after the
// ticks that came due before it, and decides it alone: no handler decides anything
// concurrently with the loop, so every decision sees every run the decisions before it
// started, and the overlap policies and the cap hold for fires decided at one instant (a
// tick and two triggers) as for fires decided apart. An update waits for the loop to
// decide its command and answers with what the loop did.
//
// This is the new branch of scheduleOneWriterChange; a run pinned before it serves its
// commands as schedule_legacy.go says.

// arrival is something the loop has to take: a command, or the end of a run.
type arrival struct {
	// at is when it arrived, on the workflow's clock: the ticks due by then come first.
	at time.Time
	// command is the command's name ("" for a run's end): a door counts what of its kind
	// waits in the inbox (queued).
	command string
	// decide decides a command with the loop's context and leaves its answer where its door
	// reads it (nil for a run's end).
	decide func(ctx workflow.Context) error
	// ended is a run whose watch saw its target close, and how it ended.
	ended *runEnd
	// done: the loop has taken it; err is the command's answer when it failed.
	done bool
	err  error
}

// runEnd is a run whose target closed, and how (Temporal's word: see activities.AwaitRunWorkflow).
type runEnd struct {
	run     RunningRun
	outcome activities.RunOutcome
}

// arrive puts a in the inbox, dated now; the loop, waiting or not, takes it next.
func (w *scheduleWorkflow) arrive(ctx workflow.Context, a *arrival) {
	a.at = workflow.Now(ctx)
	w.inbox = append(w.inbox, a)
}

// queued is how many commands named command wait in the inbox, not yet taken by the loop.
// A door judges a command against what waits as well as what the loop holds: ten backfills
// asked at one instant are ten pending backfills before the loop has taken the first.
func (w *scheduleWorkflow) queued(command string) int {
	n := 0
	for _, a := range w.inbox {
		if a.command == command && !a.done {
			n++
		}
	}
	return n
}

// askLoop puts a command in the inbox and waits until the loop has decided it, so that an
// update answers its caller with the true outcome (the run a trigger recorded, whether a
// pause changed anything).
func (w *scheduleWorkflow) askLoop(ctx workflow.Context, command string, decide func(ctx workflow.Context) error) error {
	a := &arrival{command: command, decide: decide}
	w.arrive(ctx, a)
	if err := workflow.Await(ctx, func() bool { return a.done }); err != nil {
		return err
	}
	return a.err
}

// takeInbox takes what arrived, oldest first: the ticks due by the time each arrived are
// decided before it (a tick and a command of one instant: the tick first), and once it is
// taken, the ticks waiting in the buffer that may start now do (a run's end frees a place).
// It reports more when it stopped early — a backlog of due ticks, or this workflow task's
// budget spent — and the loop comes back after it has committed what it did.
func (w *scheduleWorkflow) takeInbox(ctx workflow.Context) (more bool, err error) {
	for len(w.inbox) > 0 {
		a := w.inbox[0]
		if !w.carry.Paused {
			if more, err := w.processDue(ctx, a.at); err != nil || more {
				return more, err
			}
		}
		w.inbox = w.inbox[1:]
		if !w.tookArrival {
			w.tookArrival = true
			branchTaken(ctx, scheduleOneWriterChange)
		}
		if a.ended != nil {
			w.finish(ctx, *a.ended)
		} else {
			a.err = a.decide(ctx)
		}
		a.done = true
		if err := w.drainBuffer(ctx); err != nil {
			return false, err
		}
		if w.work.spent() {
			return true, nil
		}
	}
	return false, nil
}

// finish records a run's end as its target's and frees its place. A record that fails
// (after the local activity's retries) is logged: the row stays RUNNING, and the next run
// of the schedule's workflow, taking the schedule over from its row, watches it again.
func (w *scheduleWorkflow) finish(ctx workflow.Context, e runEnd) {
	if err := workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.FinishRun, activities.FinishedRun{
		RunID: e.run.RunID, Status: e.outcome.Status, Error: e.outcome.Error,
	}).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("record a run's end", "run", e.run.RunID, "error", err)
	}
	w.forgetRun(e.run.RunID)
	if e.outcome.Status == domain.RunSucceeded {
		w.succeeded(e.run.ScheduledAt)
	}
}
