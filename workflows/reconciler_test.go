package workflows_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/workflows"
)

func TestReconcilerRunsEveryMinuteAndContinuesAsNew(t *testing.T) {
	t.Parallel()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(testLogger())
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.ScheduleReconcilerWorkflow, workflow.RegisterOptions{Name: workflows.ScheduleReconcilerType})
	acts := &activities.ReconcileActivities{}
	env.RegisterActivity(acts)
	rounds := 0
	var at []time.Time
	env.OnActivity(acts.ReconcileSchedules, mock.Anything).Return(func(context.Context) (activities.ReconcileResult, error) {
		rounds++
		if rounds == 2 {
			return activities.ReconcileResult{}, errors.New("postgres restarting") // retried, and the loop goes on
		}
		at = append(at, env.Now())
		return activities.ReconcileResult{Schedules: 3, Started: 1}, nil
	})
	env.ExecuteWorkflow(workflows.ScheduleReconcilerType)
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(env.GetWorkflowError(), &can), "%v", env.GetWorkflowError())
	require.Len(t, at, 100, "100 rounds, then continue-as-new")
	require.Equal(t, 101, rounds, "the failed attempt was retried")
	for i := 2; i < len(at); i++ {
		require.Equal(t, time.Minute, at[i].Sub(at[i-1]).Round(time.Second), "round %d", i)
	}
}
