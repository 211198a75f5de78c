package workflows_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/workflows"
)

// TestScheduleHistoriesReplay replays histories recorded on a real dev server (`make dev`,
// then `temporal workflow show --output json`): a change to ScheduleWorkflow or the
// reconciler that is not deterministic against them fails here, before it reaches running
// workflows. Recorded: ticks every second, a pause, a manual trigger by update and one by
// signal, a resume.
func TestScheduleHistoriesReplay(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/schedule*.json")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 2)
	for _, f := range files {
		r := worker.NewWorkflowReplayer()
		r.RegisterWorkflowWithOptions(workflows.ScheduleWorkflow, workflow.RegisterOptions{Name: workflows.ScheduleWorkflowType})
		r.RegisterWorkflowWithOptions(workflows.ScheduleReconcilerWorkflow, workflow.RegisterOptions{Name: workflows.ScheduleReconcilerType})
		require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, f), f)
	}
}
