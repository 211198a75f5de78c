package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
)

// scheduleOneWriterChange: from version 1 a schedule's loop is the one place that decides
// a fire (schedule_inbox.go). Update and signal handlers judge a command and put it in the
// loop's inbox, a watch reports its run's end there, and the loop takes both, in order,
// with the ticks as they come due.
const scheduleOneWriterChange = "schedule-one-writer"

// concurrentHandlers is how a run pinned before scheduleOneWriterChange served commands,
// kept only so that such a run, and the histories recorded from one, replay as they ran:
// each update and signal handler decided its command itself, concurrently with the loop
// (a trigger started its run from its handler while the loop fired a tick), and a watch
// recorded its run's end from its own coroutine. This state held that together, and none
// of it exists in a run of the new branch (w.legacy is nil there):
//
//   - mirror serialised the Postgres writes of the handlers and the loop, so that next_run_at
//     and the other mirrored fields landed in the order of the states they copied;
//   - starting counted the fires decided to start whose run was not in carry.Running yet,
//     so that a fire decided meanwhile in another handler counted them against the cap (it
//     did not help skip or the buffer policies: a tick and a trigger decided in one workflow
//     task could both start);
//   - dirty told the loop that a handler changed something it must look at;
//   - reload asked the loop to take a new definition (a refresh's handler only asked);
//   - handlers counted the signal handlers mid-way, for continue-as-new and rest to wait.
//
// It goes with the change (docs/production.md "Retiring a workflow change"): the schedule's
// workflow continues as new and rests, and each new run pins the new branch.
type concurrentHandlers struct {
	mirror   workflow.Mutex
	starting int
	dirty    bool
	reload   bool
	handlers handlerCount
}

// legacyHandlers is the concurrentHandlers of a run pinned before scheduleOneWriterChange,
// nil for a run of its new branch (the version is pinned at the run's start, pinChanges).
func legacyHandlers(ctx workflow.Context) *concurrentHandlers {
	if workflow.GetVersion(ctx, scheduleOneWriterChange, workflow.DefaultVersion, 1) >= 1 {
		return nil
	}
	return &concurrentHandlers{mirror: workflow.NewMutex(ctx)}
}

// lockMirror serialises a Postgres write with the other handlers' in a run pinned before
// scheduleOneWriterChange; in a run of the new branch only the loop writes, and it is a
// no-op. Call the returned unlock when the write is done.
func (w *scheduleWorkflow) lockMirror(ctx workflow.Context) (unlock func(), err error) {
	if w.legacy == nil {
		return func() {}, nil
	}
	if err := w.legacy.mirror.Lock(ctx); err != nil {
		return nil, err
	}
	return w.legacy.mirror.Unlock, nil
}

// handlerChanged tells the loop of a run pinned before scheduleOneWriterChange that a
// handler changed something it must look at. The new branch's loop runs every command
// itself, so there is nothing to tell it.
func (w *scheduleWorkflow) handlerChanged() {
	if w.legacy != nil {
		w.legacy.dirty = true
	}
}

// changedMeanwhile reports whether a handler of a run pinned before
// scheduleOneWriterChange changed the state since the loop last looked.
func (w *scheduleWorkflow) changedMeanwhile() bool {
	return w.legacy != nil && w.legacy.dirty
}

// startingElsewhere counts, in a run pinned before scheduleOneWriterChange, the fires other
// handlers decided to start whose run is not in carry.Running yet (0 in the new branch: one
// fire is decided at a time, and its run is in carry.Running before the next).
func (w *scheduleWorkflow) startingElsewhere() int {
	if w.legacy == nil {
		return 0
	}
	return w.legacy.starting
}

// reloadIfAsked, in a run pinned before scheduleOneWriterChange, takes the new definition a
// refresh asked for: the ticks already due are handled under the old one first. (The new
// branch's loop reloads when it takes the refresh, after the ticks due before it came.)
func (w *scheduleWorkflow) reloadIfAsked(ctx workflow.Context) error {
	if w.legacy == nil || !w.legacy.reload {
		return nil
	}
	w.legacy.reload = false
	if !w.carry.Paused {
		if _, err := w.processDue(ctx, workflow.Now(ctx)); err != nil {
			return err
		}
	}
	return w.reloadDefinition(ctx)
}

// legacyBusy reports whether a run pinned before scheduleOneWriterChange has a handler
// mid-way or a change the loop has not looked at.
func (w *scheduleWorkflow) legacyBusy() bool {
	return w.legacy != nil && (w.legacy.dirty || w.legacy.reload || w.legacy.handlers > 0)
}

// watchEndedLegacy is how a run pinned before scheduleOneWriterChange took a run's end: in
// the watch's own coroutine, a failed wait recorded as the run's failure.
func (w *scheduleWorkflow) watchEndedLegacy(ctx workflow.Context, r RunningRun, out activities.RunOutcome, err error) {
	if err != nil {
		out = activities.RunOutcome{Status: domain.RunFailed, Error: err.Error()}
	}
	_ = workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.FinishRun, activities.FinishedRun{
		RunID: r.RunID, Status: out.Status, Error: out.Error,
	}).Get(ctx, nil)
	w.forgetRun(r.RunID)
	if out.Status == domain.RunSucceeded {
		w.succeeded(r.ScheduledAt)
	}
	w.legacy.dirty = true
}
