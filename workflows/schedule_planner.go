package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
)

// SchedulePlannerType is the registered name of the schedule planner workflow.
const SchedulePlannerType = "SchedulePlannerWorkflow"

// SchedulePlannerID is the id of planner n of a task queue's stack
// (domain.SchedulePlannerWorkflowID).
func SchedulePlannerID(taskQueue string, n int) string {
	return domain.SchedulePlannerWorkflowID(taskQueue, n)
}

// PlannerInput starts a planner.
type PlannerInput struct {
	Index int
}

// plannerRunsPerHistory bounds one planner run's history before it continues as new.
const plannerRunsPerHistory = 100

// SchedulePlannerWorkflow keeps one planner running: a long-lived activity (PlanSchedules)
// that arms the fires of schedules at rest and wakes their workflows, heartbeating so that a
// worker's death hands it to another worker within PlannerHeartbeatTimeout. Several
// planners share the schedules through the rows' locks; none has a schedule of its own, so a
// planner that is down delays nothing another one can do.
func SchedulePlannerWorkflow(ctx workflow.Context, in PlannerInput) error {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 24 * time.Hour,
		HeartbeatTimeout:    activities.PlannerHeartbeatTimeout,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 10 * time.Second},
		Summary:             "arm the fires of schedules at rest, wake the schedules whose fire needs their workflow",
	})
	logger := workflow.GetLogger(ctx)
	for i := 0; i < plannerRunsPerHistory; i++ {
		if err := workflow.ExecuteActivity(actx, scheduleActs.PlanSchedules, activities.PlannerRun{Index: in.Index}).Get(ctx, nil); err != nil {
			logger.Warn("schedule planner stopped; starting it again", "planner", in.Index, "error", err)
			if err := workflow.Sleep(ctx, time.Second); err != nil {
				return err
			}
		}
		if workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			break
		}
	}
	return workflow.NewContinueAsNewError(ctx, SchedulePlannerType, in)
}
