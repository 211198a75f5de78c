package worker_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/worker"
	"github.com/tickgate/tickgate/workflows"
)

// A worker registers exactly workflows.Registrations: the list a schedule's workflow action
// is judged against (workflows.OwnTargets) is what the worker runs, so a workflow type
// registered some other way would fail here instead of being startable by any schedule.
func TestTheWorkerRegistersExactlyTheListedWorkflows(t *testing.T) {
	t.Parallel()
	r, err := worker.NewReplayer()
	require.NoError(t, err)
	require.Equal(t, workflows.TypeNames(), r.Types)
	require.Contains(t, r.Types, workflows.HTTPDeliveryWorkflowType)
	require.Contains(t, r.Types, workflows.SchedulePlannerType)
	require.Contains(t, r.Types, "DispatcherWorkflow")
}
