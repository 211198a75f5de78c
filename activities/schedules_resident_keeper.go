package activities

import (
	"context"
	"fmt"
	"github.com/tickgate/tickgate/domain"
	"log/slog"
	"strings"
	"time"

	"go.temporal.io/api/workflowservice/v1"
)

// The resident keeper (TICKGATE_SCHEDULES_RESIDENT). A new schedule's workflow is woken by
// its creation; the keeper gives one to every other schedule at rest that has none: those
// created before the setting was turned on, and those whose workflow was terminated by hand.
// Every worker process runs one, at its start and every residentKeepEvery after. Several
// keepers do no harm: the wake is a plan in the schedule's row, set once.
const (
	// residentKeepEvery is how often a keeper compares the schedules at rest with the open
	// workflows.
	residentKeepEvery = 10 * time.Minute
	// residentKeepSettle leaves alone the schedules created this recently: their creation
	// wakes them, and the visibility of a workflow just opened may lag.
	residentKeepSettle = time.Minute
	// scheduleWorkflowType is workflows.ScheduleWorkflowType (activities cannot import workflows).
	scheduleWorkflowType = "ScheduleWorkflow"
)

// ResidentKeeper wakes the schedules at rest that have no workflow open.
type ResidentKeeper struct {
	Acts   *ScheduleActivities
	Logger *slog.Logger
}

// Run keeps until ctx ends.
func (k *ResidentKeeper) Run(ctx context.Context) {
	logger := k.Logger
	if logger == nil {
		logger = slog.Default()
	}
	for {
		n, err := k.Keep(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			logger.Warn("resident schedules: wake those without a workflow", "error", err)
		case n > 0:
			logger.Info("resident schedules: woke those without a workflow", "schedules", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(residentKeepEvery):
		}
	}
}

// Keep wakes, once, the schedules at rest whose workflow is not open on the task queue; it
// answers how many.
func (k *ResidentKeeper) Keep(ctx context.Context) (int64, error) {
	settled := time.Now().Add(-residentKeepSettle)
	open, err := k.openSchedules(ctx)
	if err != nil {
		return 0, err
	}
	return k.Acts.Store.WakeSchedulesWithoutWorkflow(ctx, open, settled)
}

// openSchedules lists the names of the schedules whose workflow is open on the task queue,
// from Temporal's visibility.
func (k *ResidentKeeper) openSchedules(ctx context.Context) ([]string, error) {
	query := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running' AND TaskQueue = '%s'", scheduleWorkflowType, k.Acts.TaskQueue)
	var names []string
	var token []byte
	for {
		resp, err := k.Acts.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, PageSize: 1000, NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("list the open schedule workflows: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			if name, ok := strings.CutPrefix(e.GetExecution().GetWorkflowId(), domain.ScheduleWorkflowID("")); ok {
				names = append(names, name)
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return names, nil
		}
	}
}
