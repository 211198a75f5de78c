package activities_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
)

// waitingClient is a Temporal client whose wait on any workflow answers err.
type waitingClient struct {
	client.Client
	err error
}

func (c waitingClient) GetWorkflow(_ context.Context, id, runID string) client.WorkflowRun {
	return waitedRun{id: id, err: c.err}
}

type waitedRun struct {
	id  string
	err error
}

func (r waitedRun) GetID() string                  { return r.id }
func (r waitedRun) GetFirstExecutionRunID() string { return "" }
func (r waitedRun) GetRunID() string               { return "" }
func (r waitedRun) Get(context.Context, any) error { return r.err }
func (r waitedRun) GetWithOptions(context.Context, any, client.WorkflowRunGetOptions) error {
	return r.err
}

// closedWith is the error Temporal's client answers for a workflow that closed with err
// (a *temporal.WorkflowExecutionError around it), made by running one.
func closedWith(t *testing.T, err error) error {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.ExecuteWorkflow(func(workflow.Context) error { return err })
	closed := env.GetWorkflowError()
	var wee *temporal.WorkflowExecutionError
	require.ErrorAs(t, closed, &wee)
	return closed
}

// A run ends only on Temporal's word that its target closed. A wait that failed — the
// long poll timed out or Temporal was unreachable, as under the chaos run's partition from
// Temporal, where such a wait ended an http run FAILED whose delivery then succeeded — is
// an error of the activity, retried, and the run stays RUNNING.
func TestAwaitRunEndsTheRunOnlyOnTheTargetsClose(t *testing.T) {
	await := func(err error) (activities.RunOutcome, error) {
		var s testsuite.WorkflowTestSuite
		env := s.NewTestActivityEnvironment()
		acts := &activities.ScheduleActivities{Temporal: waitingClient{err: err}}
		env.RegisterActivity(acts)
		val, err := env.ExecuteActivity(acts.AwaitRunWorkflow, "schedule/s/run/2026-11-28T01:31:52Z")
		if err != nil {
			return activities.RunOutcome{}, err
		}
		var out activities.RunOutcome
		require.NoError(t, val.Get(&out))
		return out, nil
	}
	for name, waitErr := range map[string]error{
		"deadline exceeded": serviceerror.NewDeadlineExceeded("context deadline exceeded"),
		"unavailable":       serviceerror.NewUnavailable("connection refused"),
		"cancelled call":    serviceerror.NewCanceled("context canceled"),
		"plain deadline":    context.DeadlineExceeded,
	} {
		_, err := await(waitErr)
		require.Error(t, err, "%s: the wait failed, the run does not end", name)
	}
	for name, tc := range map[string]struct {
		err  error
		want domain.RunStatus
	}{
		"completed": {nil, domain.RunSucceeded},
		"failed":    {closedWith(t, temporal.NewApplicationError("boom", "X")), domain.RunFailed},
		"canceled":  {closedWith(t, temporal.NewCanceledError()), domain.RunCanceled},
		"not found": {serviceerror.NewNotFound("no such workflow"), domain.RunFailed},
	} {
		out, err := await(tc.err)
		require.NoError(t, err, name)
		require.Equal(t, tc.want, out.Status, name)
	}
}

// The run watcher (runs of schedules at rest) ends a run by the same rule: only a closed
// target, or none at all, is an answer; a failed wait leaves the run for a later lease.
func TestOnlyTemporalsWordOnTheTargetEndsARun(t *testing.T) {
	require.True(t, activities.TargetAnswered(nil))
	require.True(t, activities.TargetAnswered(closedWith(t, temporal.NewApplicationError("boom", "X"))))
	require.True(t, activities.TargetAnswered(serviceerror.NewNotFound("no such workflow")))
	require.False(t, activities.TargetAnswered(serviceerror.NewDeadlineExceeded("context deadline exceeded")))
	require.False(t, activities.TargetAnswered(serviceerror.NewUnavailable("connection refused")))
	require.False(t, activities.TargetAnswered(context.DeadlineExceeded))
}
