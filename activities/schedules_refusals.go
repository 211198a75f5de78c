package activities

import (
	"context"
	"time"

	"github.com/tickgate/tickgate/metrics"
	"github.com/tickgate/tickgate/store"
)

// RefusedCommand is a command signal a schedule's workflow refused by the command rules.
type RefusedCommand struct {
	ScheduleID int64
	Command    string
	Door       string
	Field      string
	Reason     string
	Payload    string
	RefusedAt  time.Time
}

// RecordRefusal records a refused command signal where the schedule's view lists it, and
// counts it (tickgate_schedule_signals_refused_total). A schedule deleted meanwhile has no
// view left: nothing is recorded.
func (a *ScheduleActivities) RecordRefusal(ctx context.Context, r RefusedCommand) error {
	err := a.Store.RecordScheduleRefusal(ctx, store.NewScheduleRefusal{
		ScheduleID: r.ScheduleID, Command: r.Command, Door: r.Door, Field: r.Field, Reason: r.Reason,
		Payload: r.Payload, RefusedAt: r.RefusedAt,
	})
	if err != nil {
		return gone(err, r.ScheduleID)
	}
	metrics.ScheduleCommandsRefused.WithLabelValues(r.Command).Inc()
	return nil
}
