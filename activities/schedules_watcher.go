package activities

import (
	"context"
	"errors"
	"log/slog"
	"regexp"
	"time"

	"go.temporal.io/api/serviceerror"

	"github.com/tickgate/tickgate/store"
)

// Run watching. A workflow action's run of a schedule at rest — started by the planner with
// a start delay — has no schedule workflow to wait for it: a run watcher does. Every worker
// process runs one; each leases the runs it watches (schedule_runs.watched_until), so a
// worker that dies lets its leases run out and another takes the watches over.
const (
	// watchLease is how long a watcher holds a run; it waits for the run's close a little
	// less, then lets the lease go and leases it again on a later round.
	watchLease = time.Minute
	// watchPoll is how often a watcher looks for runs to lease.
	watchPoll = time.Second
	// watchBatch is the most runs leased in one round.
	watchBatch = 500
	// maxWatched is the most runs one watcher waits for at once.
	maxWatched = 5000
	// watchSettle is how long after its fire time a run is first watched: a burst's watches
	// (long polls on Temporal) do not compete with its targets' beginning.
	watchSettle = 3 * time.Second
)

// RunWatcher records the outcome of the runs in flight of schedules at rest.
type RunWatcher struct {
	Acts   *ScheduleActivities
	Logger *slog.Logger
}

// Run watches until ctx ends.
func (w *RunWatcher) Run(ctx context.Context) {
	logger := w.Logger
	if logger == nil {
		logger = slog.Default()
	}
	slots := make(chan struct{}, maxWatched)
	for {
		free := cap(slots) - len(slots)
		if free > 0 {
			runs, err := w.Acts.Store.ClaimRunsToWatch(ctx, time.Now().Add(watchLease), watchSettle, min(free, watchBatch))
			if err != nil && ctx.Err() == nil {
				logger.Warn("lease runs to watch", "error", err)
			}
			for _, r := range runs {
				slots <- struct{}{}
				go func() {
					defer func() { <-slots }()
					w.watch(ctx, r, logger)
				}()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(watchPoll):
		}
	}
}

// watch waits for the run's target to close, for a little less than its lease, and
// records its outcome; a target still running is left for a later lease.
func (w *RunWatcher) watch(ctx context.Context, r store.RunToWatch, logger *slog.Logger) {
	wctx, cancel := context.WithTimeout(ctx, watchLease-5*time.Second)
	defer cancel()
	err := w.Acts.Temporal.GetWorkflow(wctx, r.WorkflowID, "").Get(wctx, nil)
	if wctx.Err() != nil {
		return // still running (or shutting down): watched again on a later lease
	}
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) && redriven.MatchString(r.WorkflowID) {
		// A redrive: store.RedriveRun committed it for a watcher to start. Started, it is
		// watched on this lease (an operator waits for its outcome).
		logger.Info("starting a redrive", "workflow_id", r.WorkflowID)
		if err := w.startLate(ctx, r); err != nil {
			if ctx.Err() == nil {
				logger.Warn("start a redrive", "workflow_id", r.WorkflowID, "error", err)
			}
			return
		}
		err = w.Acts.Temporal.GetWorkflow(wctx, r.WorkflowID, "").Get(wctx, nil)
		if wctx.Err() != nil {
			return
		}
	}
	if errors.As(err, &notFound) {
		// The planner committed the run but its target's start was lost (it died in
		// between): start it now, late, and watch it on a later lease. The start reuses the
		// run's workflow id, so a target that ran is never started again.
		logger.Warn("a run's target was not started; starting it late", "workflow_id", r.WorkflowID)
		if err := w.startLate(ctx, r); err != nil && ctx.Err() == nil {
			logger.Warn("start a run's target late", "workflow_id", r.WorkflowID, "error", err)
		}
		return
	}
	if !targetAnswered(err) {
		// The wait failed, not the target (Temporal unreachable or slow): only its word that
		// the target closed ends the run; it is watched again on a later lease.
		logger.Warn("wait for a run's target", "workflow_id", r.WorkflowID, "error", err)
		return
	}
	out := outcomeOf(err)
	if err := w.Acts.Store.FinishRun(ctx, r.ID, out.Status, out.Error); err != nil && ctx.Err() == nil {
		logger.Warn("record a watched run's outcome", "run", r.ID, "error", err)
	}
}

// startLate starts a run's target that was never started, with its schedule's action.
func (w *RunWatcher) startLate(ctx context.Context, r store.RunToWatch) error {
	row, err := w.Acts.Store.GetScheduleByID(ctx, r.ScheduleID)
	if err != nil {
		return err
	}
	def, err := DefinitionFromRow(row)
	if err != nil {
		return err
	}
	start := RunStart(def.Name, def.Action, def.Retry)
	start.WorkflowID, start.RunID = r.WorkflowID, r.ID
	_, err = w.Acts.StartRunWorkflow(ctx, start)
	return err
}

// redriven matches the workflow id of a redrive's series (store.RedriveWorkflowID).
var redriven = regexp.MustCompile(`~redrive-\d+$`)
