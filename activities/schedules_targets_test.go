package activities_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/internal/testing/testenv"
)

// A run's end is what its target did: only Temporal's word that the target closed ends a
// run. A wait that fails under load — a poll cut by its deadline, a server unavailable —
// says nothing of the target; it once ended the run FAILED ("context deadline exceeded")
// while the target still waited to start.

// failingWaits is a Temporal client whose first waits for a target fail as they do under
// load, before any wait reaches the server; the rest are the real client's.
type failingWaits struct {
	client.Client
	mu     sync.Mutex
	errs   []error       // the failures still to inject, in order
	failed chan struct{} // one send per injected failure
}

func (f *failingWaits) GetWorkflow(ctx context.Context, workflowID, runID string) client.WorkflowRun {
	return failingRun{WorkflowRun: f.Client.GetWorkflow(ctx, workflowID, runID), f: f}
}

type failingRun struct {
	client.WorkflowRun
	f *failingWaits
}

func (r failingRun) Get(ctx context.Context, valuePtr any) error {
	r.f.mu.Lock()
	if len(r.f.errs) > 0 {
		err := r.f.errs[0]
		r.f.errs = r.f.errs[1:]
		r.f.mu.Unlock()
		r.f.failed <- struct{}{}
		return err
	}
	r.f.mu.Unlock()
	return r.WorkflowRun.Get(ctx, valuePtr)
}

// underLoad are the errors a wait failed with on a loaded server.
func underLoad() []error {
	return []error{
		serviceerror.NewDeadlineExceeded("context deadline exceeded"),
		fmt.Errorf("get history: %w", context.DeadlineExceeded),
		serviceerror.NewUnavailable("connection refused"),
	}
}

// heldTarget runs until it is signalled "finish", then ends as the signal says: "" succeeds,
// anything else fails with that message.
func heldTarget(ctx workflow.Context) error {
	var outcome string
	workflow.GetSignalChannel(ctx, "finish").Receive(ctx, &outcome)
	if outcome != "" {
		return temporal.NewNonRetryableApplicationError(outcome, "TargetFailed", nil)
	}
	return nil
}

// startHeldTargets runs a worker for heldTarget on a queue of its own.
func startHeldTargets(t *testing.T, tc client.Client) string {
	queue := fmt.Sprintf("held-%d", time.Now().UnixNano())
	w := sdkworker.New(tc, queue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(heldTarget, workflow.RegisterOptions{Name: "Held"})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return queue
}

// The schedule workflow's wait (AwaitRunWorkflow): a wait that fails is an error, which the
// activity's retry policy retries — never an outcome — and the wait after it returns how
// the target really ended.
func TestAwaitRunWorkflowFailsAWaitThatFailedAndReturnsOnlyTheTargetsEnd(t *testing.T) {
	t.Parallel()
	tc := testenv.TemporalClient(t)
	ctx := context.Background()
	queue := startHeldTargets(t, tc)
	id := fmt.Sprintf("held-await-%d", time.Now().UnixNano())
	_, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, "Held")
	require.NoError(t, err)

	injected := underLoad()
	flaky := &failingWaits{Client: tc, errs: append([]error(nil), injected...), failed: make(chan struct{}, len(injected))}
	acts := &activities.ScheduleActivities{Temporal: flaky}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	for _, want := range injected {
		_, err := env.ExecuteActivity(acts.AwaitRunWorkflow, id)
		require.Error(t, err, "a wait that failed is no outcome")
		require.Contains(t, err.Error(), want.Error())
		<-flaky.failed
	}

	require.NoError(t, tc.SignalWorkflow(ctx, id, "", "finish", "the report could not be built"))
	v, err := env.ExecuteActivity(acts.AwaitRunWorkflow, id)
	require.NoError(t, err)
	var out activities.RunOutcome
	require.NoError(t, v.Get(&out))
	require.Equal(t, domain.RunFailed, out.Status, "the target's own end")
	require.Contains(t, out.Error, "the report could not be built")
}

// The run watcher of schedules at rest: a wait that fails leaves the run RUNNING and is
// tried again within the lease, and the run ends as its target did.
func TestRunWatcherKeepsARunRunningThroughFailedWaits(t *testing.T) {
	t.Parallel()
	e := newPlannerEnv(t)
	tc := testenv.TemporalClient(t)
	ctx := context.Background()
	queue := startHeldTargets(t, tc)
	name := fmt.Sprintf("held-%d", time.Now().UnixNano())
	row := e.create(name, schedulespec.Spec{Cron: "0 0 1 1 *"}, domain.Action{Kind: domain.ActionWorkflow, WorkflowType: "Held", TaskQueue: queue},
		api.SchedulePolicies{}, time.Now().UTC())
	id := domain.RunWorkflowID(name, "held")
	_, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, "Held")
	require.NoError(t, err)
	// Fired long enough ago to be watched at once (past watchSettle).
	tick := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)
	_, err = e.st.Pool.Exec(ctx, `INSERT INTO schedule_runs (schedule_id, scheduled_at, fired_at, trigger, status, idempotency_key, workflow_id)
		VALUES ($1, $2, $2, 'scheduled', 'RUNNING', $3, $3)`, row.ID, tick, id)
	require.NoError(t, err)

	injected := underLoad()
	flaky := &failingWaits{Client: tc, errs: injected, failed: make(chan struct{}, len(injected))}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go (&activities.RunWatcher{Acts: &activities.ScheduleActivities{Store: e.st, Temporal: flaky}}).Run(wctx)
	run := func() (status, runErr string) {
		require.NoError(t, e.st.Pool.QueryRow(ctx, "SELECT status, error FROM schedule_runs WHERE workflow_id = $1", id).Scan(&status, &runErr))
		return status, runErr
	}
	for n := range injected {
		select {
		case <-flaky.failed:
		case <-time.After(20 * time.Second):
			status, runErr := run()
			t.Fatalf("the watcher did not wait again after %d failed waits; the run reads %s (%s)", n, status, runErr)
		}
	}
	// Every failure injected, and the wait after them under way: the run is as it was.
	require.Eventually(t, func() bool {
		d, err := tc.DescribeWorkflowExecution(ctx, id, "")
		return err == nil && d.GetWorkflowExecutionInfo().GetCloseTime() == nil
	}, 10*time.Second, 50*time.Millisecond)
	status, runErr := run()
	require.Equal(t, "RUNNING", status, "a failed wait is not the run's end")
	require.Empty(t, runErr)

	require.NoError(t, tc.SignalWorkflow(ctx, id, "", "finish", ""))
	require.Eventually(t, func() bool { s, _ := run(); return s == "SUCCEEDED" }, 30*time.Second, 100*time.Millisecond,
		"the run ends as its target did")
	got := e.row(name)
	require.NotNil(t, got.LastSuccessAt)
	require.Equal(t, tick, got.LastSuccessAt.UTC())
}

// What a wait answered, read: only Temporal's word that the target closed is an end. (How a
// real target's failure and success read is proven against the server above.)
func TestOnlyTemporalsWordThatTheTargetClosedEndsARun(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		err    error
		closed bool
		status domain.RunStatus
	}{
		{"completed", nil, true, domain.RunSucceeded},
		{"closed otherwise", &temporal.WorkflowExecutionError{}, true, domain.RunFailed},
		{"not found", serviceerror.NewNotFound("workflow not found"), true, domain.RunFailed},
		{"deadline exceeded", serviceerror.NewDeadlineExceeded("context deadline exceeded"), false, ""},
		{"context deadline", fmt.Errorf("poll: %w", context.DeadlineExceeded), false, ""},
		{"unavailable", serviceerror.NewUnavailable("connection refused"), false, ""},
		{"resource exhausted", serviceerror.NewResourceExhausted(0, "busy"), false, ""},
		{"a timeout of the wait itself", temporal.NewTimeoutError(0, nil), false, ""},
		{"anything else", errors.New("transport is closing"), false, ""},
	} {
		out, closed := activities.TargetEnd(c.err)
		require.Equal(t, c.closed, closed, c.name)
		require.Equal(t, c.status, out.Status, c.name)
	}
}
