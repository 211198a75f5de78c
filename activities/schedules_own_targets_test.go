package activities_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/workflows"
)

// A workflow action's target is judged again when its run starts: a schedule stored before
// the rule (or under another TICKGATE_WORKFLOW_TASK_QUEUES) that names one of tickgate's
// workflows or task queues starts nothing, and its run fails saying which field.
func TestARunNeverStartsTickgatesOwnWorkflows(t *testing.T) {
	t.Parallel()
	tc := testenv.TemporalClient(t)
	ctx := context.Background()
	queue := fmt.Sprintf("targets-%d", time.Now().UnixNano())
	acts := &activities.ScheduleActivities{Store: testenv.Store(t), Temporal: tc, TaskQueue: queue,
		Targets: workflows.OwnTargets(queue, []string{"reports"})}
	for _, c := range []struct {
		field string
		start activities.StartRun
	}{
		{"action.workflow_type", activities.StartRun{WorkflowType: workflows.HTTPDeliveryWorkflowType, TaskQueue: "reports"}},
		{"action.task_queue", activities.StartRun{WorkflowType: "Report", TaskQueue: queue}},
		{"action.task_queue", activities.StartRun{WorkflowType: "Report", TaskQueue: "elsewhere"}},
	} {
		start := c.start
		start.Schedule, start.WorkflowID = "s", fmt.Sprintf("%s/run/%d", queue, time.Now().UnixNano())
		_, err := acts.StartRunWorkflow(ctx, start)
		var app *temporal.ApplicationError
		require.True(t, errors.As(err, &app), "%v", err)
		require.True(t, app.NonRetryable())
		require.Contains(t, app.Message(), c.field+": ")
		_, err = tc.DescribeWorkflowExecution(ctx, start.WorkflowID, "")
		var notFound *serviceerror.NotFound
		require.True(t, errors.As(err, &notFound), "nothing was started on %s", start.TaskQueue)
	}
}
