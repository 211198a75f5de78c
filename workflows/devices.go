package workflows

import (
	"errors"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
)

// The device engine's workflows (docs/devices.md): the dispatcher (dispatcher.go), a
// workflow per PC keeping its slots full (pc.go) and a timer per PC (pc_timer.go). The
// timers of earlier versions are in *_legacy.go.

// Signal names of the device engine. Other services may send them (docs/devices.md).
const (
	// SignalDispatcherCheck asks the dispatcher to re-check the active task now.
	SignalDispatcherCheck = "check"
	// SignalNudgePC asks a PC workflow to fill its free slots now (its name, "refill", is in
	// histories and stays).
	SignalNudgePC = "refill"
	// SignalPCRefill is SignalNudgePC's name before "refill" meant only filling slots.
	//
	// Deprecated: use SignalNudgePC (the signal's name, "refill", is the same).
	SignalPCRefill = SignalNudgePC
)

// The device engine's workflow ids, for other services' Go code: the ids are domain's
// (domain/workflow_ids.go).

// DefaultTaskQueue is the task queue whose workflow ids carry no scope
// (domain.DefaultTaskQueue).
const DefaultTaskQueue = domain.DefaultTaskQueue

// DeviceScope is the prefix of the device engine's workflow ids for a task queue
// (domain.DeviceScope).
func DeviceScope(taskQueue string) string { return domain.DeviceScope(taskQueue) }

// DispatcherWorkflowID is the singleton dispatcher's id (domain.DispatcherWorkflowID).
func DispatcherWorkflowID(scope string) string { return domain.DispatcherWorkflowID(scope) }

// PCWorkflowID is the id of the workflow keeping a PC's slots full (domain.PCWorkflowID).
func PCWorkflowID(scope, pc string) string { return domain.PCWorkflowID(scope, pc) }

// PCTimerWorkflowID is the id of PC pc's timer (domain.PCTimerWorkflowID).
func PCTimerWorkflowID(scope, pc string) string { return domain.PCTimerWorkflowID(scope, pc) }

var deviceActs *activities.DeviceActivities

func deviceActivityCtx(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 200 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 10 * time.Second,
			NonRetryableErrorTypes: []string{activities.ErrDeviceGone},
		},
	})
}

func isDeviceGone(err error) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == activities.ErrDeviceGone
}

// nudgeDispatcher asks the dispatcher to re-check the active task; a dispatcher that is
// not running is started by the next API call or worker, and its safety poll re-checks.
func nudgeDispatcher(ctx workflow.Context, dispatcherID string) {
	if dispatcherID == "" {
		return
	}
	err := workflow.SignalExternalWorkflow(ctx, dispatcherID, "", SignalDispatcherCheck, nil).Get(ctx, nil)
	if err != nil && !strings.Contains(err.Error(), "not found") {
		workflow.GetLogger(ctx).Warn("nudge dispatcher", "error", err)
	}
}
