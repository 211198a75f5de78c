package activities

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/activity"

	"github.com/tickgate/tickgate/store"
)

// ScheduleStarter is the part of the starter the reconciler needs.
type ScheduleStarter interface {
	StartSchedule(ctx context.Context, id int64, name, summary string) error
	StopSchedule(ctx context.Context, name string) error
}

// ReconcileActivities compare schedule rows with running schedule workflows.
type ReconcileActivities struct {
	Store   *store.Store
	Starter interface {
		ScheduleStarter
		ListRunningScheduleNames(ctx context.Context) ([]string, error)
	}
}

// ReconcileResult counts one round's work.
type ReconcileResult struct {
	Schedules int
	Started   int
	Stopped   int
}

// ReconcileSchedules starts a workflow for every row (a no-op where one runs) and stops
// schedule workflows whose row is gone.
func (r *ReconcileActivities) ReconcileSchedules(ctx context.Context) (ReconcileResult, error) {
	var res ReconcileResult
	rows, err := r.Store.Q.ListAllScheduleNames(ctx)
	if err != nil {
		return res, fmt.Errorf("list schedules: %w", err)
	}
	res.Schedules = len(rows)
	running, err := r.Starter.ListRunningScheduleNames(ctx)
	if err != nil {
		return res, err
	}
	isRunning := make(map[string]bool, len(running))
	for _, n := range running {
		isRunning[n] = true
	}
	exists := make(map[string]bool, len(rows))
	for i, row := range rows {
		exists[row.Name] = true
		if isRunning[row.Name] {
			continue
		}
		if err := r.Starter.StartSchedule(ctx, row.ID, row.Name, ""); err != nil {
			return res, err
		}
		res.Started++
		activity.RecordHeartbeat(ctx, i)
	}
	for _, n := range running {
		if !exists[n] {
			if err := r.Starter.StopSchedule(ctx, n); err != nil {
				return res, err
			}
			res.Stopped++
		}
	}
	return res, nil
}
