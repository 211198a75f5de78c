package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/telemetry"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// The traces of docs/tracing.md, recorded by the whole stack (real PostgreSQL, the real
// Temporal dev server, a worker and the API in this process) into the SDK's in-memory
// exporter: each unit of work is one trace whose spans parent as the page says.

// tracedStack starts a stack with tracing on, its spans going to the returned exporter.
func tracedStack(t *testing.T) (*teststack.Stack, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithIDGenerator(telemetry.IDGenerator()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	st := teststack.Start(t, teststack.Options{Telemetry: telemetry.With(tp), Configure: func(c *config.Config) {
		c.TaskQueue = fmt.Sprintf("tq-%s-%d", t.Name(), time.Now().UnixNano())
	}})
	return st, exp
}

// spansOf are the ended spans of one trace, by name (a name seen twice keeps both).
func spansOf(exp *tracetest.InMemoryExporter, id trace.TraceID) map[string][]tracetest.SpanStub {
	out := map[string][]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		if s.SpanContext.TraceID() == id {
			out[s.Name] = append(out[s.Name], s)
		}
	}
	return out
}

// one is the single span of that name in spans, failing otherwise.
func one(t *testing.T, spans map[string][]tracetest.SpanStub, name string) tracetest.SpanStub {
	t.Helper()
	require.Len(t, spans[name], 1, "spans named %s", name)
	return spans[name][0]
}

// childrenOf are the spans whose parent is parent.
func childrenOf(spans map[string][]tracetest.SpanStub, parent tracetest.SpanStub) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, ss := range spans {
		for _, s := range ss {
			if s.Parent.SpanID() == parent.SpanContext.SpanID() {
				out = append(out, s)
			}
		}
	}
	return out
}

func requireChild(t *testing.T, child, parent tracetest.SpanStub) {
	t.Helper()
	require.Equal(t, parent.SpanContext.SpanID(), child.Parent.SpanID(), "%s is a child of %s", child.Name, parent.Name)
}

func attr(s tracetest.SpanStub, key string) string {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value.String()
		}
	}
	return ""
}

// releasedRun waits for a run of the schedule that was armed and released, and returns it.
func releasedRun(t *testing.T, st *teststack.Stack, name string) store.ScheduleRun {
	t.Helper()
	ctx := context.Background()
	var run store.ScheduleRun
	require.Eventually(t, func() bool {
		s, err := st.Store.GetSchedule(ctx, name)
		if err != nil {
			return false
		}
		runs, err := st.Store.ListRuns(ctx, s.ID, 0, 100)
		require.NoError(t, err)
		for _, r := range runs {
			if r.Trigger == domain.TriggerScheduled && r.VisibleAt != nil && r.FiredAt != nil {
				run = r
				return true
			}
		}
		return false
	}, 90*time.Second, 100*time.Millisecond, "a released fire of %s", name)
	return run
}

// TestAFireIsOneTraceFromTickToCommit: the schedules are at rest, so the planner arms their
// fires ahead and the worker's releaser releases them at their time; a workflow action's
// target is started by the planner with a start delay. Each fire is one trace, recorded on
// its run: the tick (root, linked to the planner's own trace) → its arming → its release →
// the commit that made it visible; for the workflow action also the target's start and its
// first workflow task, under the tick. The run's answer names the trace.
func TestAFireIsOneTraceFromTickToCommit(t *testing.T) {
	t.Parallel()
	st, exp := tracedStack(t)
	queue := "traced-targets-" + fmt.Sprint(time.Now().UnixNano())
	w := sdkworker.New(st.Temporal, queue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(func(workflow.Context) error { return nil }, workflow.RegisterOptions{Name: "TracedTarget"})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	st.CreateSchedule(t, map[string]any{
		"name": "traced-event", "spec": map[string]any{"interval": "15s"},
		"action": map[string]any{"kind": "event", "topic": "billing", "type": "invoice.due"},
	})
	st.CreateSchedule(t, map[string]any{
		"name": "traced-workflow", "spec": map[string]any{"interval": "15s"},
		"action": map[string]any{"kind": "workflow", "workflow_type": "TracedTarget", "task_queue": queue},
	})

	t.Run("event", func(t *testing.T) {
		run := releasedRun(t, st, "traced-event")
		require.NotNil(t, run.TraceContext, "the armed run carries its fire's span context")
		tid := telemetry.SpanContextOf(*run.TraceContext).TraceID()
		var spans map[string][]tracetest.SpanStub
		require.Eventually(t, func() bool {
			spans = spansOf(exp, tid)
			return len(spans[activities.SpanCommit]) > 0
		}, 30*time.Second, 50*time.Millisecond, "the release is drawn into the fire's trace")

		tick := one(t, spans, activities.SpanTick)
		require.False(t, tick.Parent.IsValid(), "the tick is the root of its trace")
		require.Equal(t, "traced-event", attr(tick, "tickgate.schedule.name"))
		require.Equal(t, run.ScheduledAt.UTC().Format(time.RFC3339Nano), attr(tick, "tickgate.tick"))
		require.Equal(t, "scheduled", attr(tick, "tickgate.trigger"))
		require.Len(t, tick.Links, 1, "linked to the planner's trace")
		require.NotEqual(t, tid, tick.Links[0].SpanContext.TraceID())
		require.Equal(t, *run.TraceContext, telemetry.Traceparent(trace.ContextWithSpanContext(context.Background(), tick.SpanContext)),
			"the run carries the tick's span context")

		arm := one(t, spans, activities.SpanArm)
		requireChild(t, arm, tick)
		release := one(t, spans, activities.SpanRelease)
		requireChild(t, release, tick)
		require.Equal(t, fmt.Sprint(run.ID), attr(release, "tickgate.run.id"))
		require.Equal(t, "SUCCEEDED", attr(release, "tickgate.run.status"))
		commit := one(t, spans, activities.SpanCommit)
		requireChild(t, commit, release)
		require.False(t, release.StartTime.Before(arm.EndTime), "released after it was armed")

		// The run's answer names its trace (the dashboard links it to the viewer).
		var sched api.ScheduleView
		st.GetSchedule(t, "traced-event", &sched)
		found := false
		for _, r := range sched.RecentRuns {
			if r.ID == run.ID {
				require.Equal(t, tid.String(), r.TraceID)
				found = true
			}
		}
		require.True(t, found, "run %d among the recent runs", run.ID)
	})

	t.Run("workflow", func(t *testing.T) {
		run := releasedRun(t, st, "traced-workflow")
		require.NotNil(t, run.TraceContext)
		tid := telemetry.SpanContextOf(*run.TraceContext).TraceID()
		var spans map[string][]tracetest.SpanStub
		require.Eventually(t, func() bool {
			spans = spansOf(exp, tid)
			return len(spans["RunWorkflow:TracedTarget"]) > 0 && len(spans[activities.SpanCommit]) > 0
		}, 60*time.Second, 50*time.Millisecond, "the target's first workflow task and the release join the fire's trace")
		tick := one(t, spans, activities.SpanTick)
		require.False(t, tick.Parent.IsValid())
		require.Equal(t, run.WorkflowID, attr(tick, "tickgate.run.workflow_id"))
		require.Equal(t, "traced-workflow", attr(tick, "tickgate.schedule.name"))
		require.Equal(t, fmt.Sprint(run.ID), attr(tick, "tickgate.run.id"), "armed alone, the tick names its run")
		requireChild(t, one(t, spans, activities.SpanArm), tick)
		release := one(t, spans, activities.SpanRelease)
		requireChild(t, release, tick)
		requireChild(t, one(t, spans, activities.SpanCommit), release)
		start := one(t, spans, "StartWorkflow:TracedTarget")
		requireChild(t, start, tick)
		requireChild(t, one(t, spans, "RunWorkflow:TracedTarget"), start)
	})
}

// TestATraceparentSentToTheAPIReachesTheWorkflowItStarts: a request carrying a W3C
// traceparent is a span of the caller's trace, and so is the work it causes. A create writes
// the schedule's row (its statements are the request's children) and starts no workflow: the
// schedule is at rest. A manual trigger reaches further: the update-with-start that wakes the
// schedule's workflow, the handler's activities, the fire and the target's start and first
// workflow task are all in the caller's trace.
func TestATraceparentSentToTheAPIReachesTheWorkflowItStarts(t *testing.T) {
	t.Parallel()
	st, exp := tracedStack(t)
	queue := "traced-targets-" + fmt.Sprint(time.Now().UnixNano())
	w := sdkworker.New(st.Temporal, queue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(func(workflow.Context) error { return nil }, workflow.RegisterOptions{Name: "TracedTarget"})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	caller := telemetry.SpanContextOf(traceparent)
	traced := st.As(st.AdminToken)
	traced.Headers["traceparent"] = traceparent
	traced.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{
		"name": "from-a-traced-caller", "spec": map[string]any{"cron": "0 0 1 1 *"},
		"action": map[string]any{"kind": "workflow", "workflow_type": "TracedTarget", "task_queue": queue},
	}, http.StatusCreated, nil)
	var spans map[string][]tracetest.SpanStub
	require.Eventually(t, func() bool {
		spans = spansOf(exp, caller.TraceID())
		return len(spans["POST /api/v1/schedules"]) > 0
	}, 30*time.Second, 50*time.Millisecond, "the create is in the caller's trace")
	server := one(t, spans, "POST /api/v1/schedules")
	require.Equal(t, caller.SpanID(), server.Parent.SpanID(), "the request continues the caller's span")
	require.NotEmpty(t, childrenOf(spans, server), "the create's statements are the request's children")
	require.Empty(t, spans["StartWorkflow:"+workflows.ScheduleWorkflowType], "a schedule at rest has no workflow to start")

	var trig api.TriggerView
	traced.JSON(t, http.MethodPost, "/api/v1/schedules/from-a-traced-caller/trigger", nil, http.StatusOK, &trig)
	require.Eventually(t, func() bool {
		spans = spansOf(exp, caller.TraceID())
		return len(spans["RunWorkflow:TracedTarget"]) > 0
	}, 30*time.Second, 50*time.Millisecond, "the target the trigger started is in the caller's trace")
	trigger := one(t, spans, "POST /api/v1/schedules/:name/trigger")
	require.Equal(t, caller.SpanID(), trigger.Parent.SpanID())
	wake := one(t, spans, "UpdateWithStartWorkflow:"+workflows.ScheduleTrigger)
	requireChild(t, wake, trigger)
	handled := false
	for name, ss := range spans {
		for _, s := range ss {
			if strings.HasPrefix(name, "RunActivity:") && attr(s, "temporalWorkflowID") == workflows.ScheduleWorkflowID("from-a-traced-caller") {
				handled = true
			}
		}
	}
	require.True(t, handled, "the schedule workflow's activities are in the caller's trace")
	tick := one(t, spans, activities.SpanTick)
	require.Equal(t, "manual", attr(tick, "tickgate.trigger"))
	require.Equal(t, fmt.Sprint(trig.Run.ID), attr(tick, "tickgate.run.id"))
	requireChild(t, one(t, spans, activities.SpanCommit), tick)
	targetStart := one(t, spans, "StartWorkflow:TracedTarget")
	requireChild(t, targetStart, tick)
	requireChild(t, one(t, spans, "RunWorkflow:TracedTarget"), targetStart)
}

// TestADeviceExecutionIsOneTrace: a PC of one slot and two devices; the first execution is
// claimed by the agent, its result frees the slot, which is refilled with the second. The
// first execution's trace: the execution (root, recorded by its claim) → its claim, its
// result → the refill, naming the execution it created; each step links to the agent
// request that carried it.
func TestADeviceExecutionIsOneTrace(t *testing.T) {
	t.Parallel()
	st, exp := tracedStack(t)
	st.CreatePC(t, "traced-rack", 1)
	for _, serial := range []string{"traced-a", "traced-b"} {
		st.CreateDevice(t, "traced-rack", serial)
	}
	st.CreateTask(t, map[string]any{"payload": map[string]any{"cmd": "flash"}}, nil)
	var claim struct {
		Items []api.DeviceExecutionDTO `json:"items"`
	}
	require.Eventually(t, func() bool {
		st.Claim(t, "traced-rack", 5, &claim)
		return len(claim.Items) == 1
	}, 30*time.Second, 50*time.Millisecond)
	cmd := claim.Items[0]
	var res api.ResultView
	st.AgentResult(t, cmd.ID, map[string]any{"status": "succeeded", "attempt": cmd.Attempt, "claim_next": true}, &res)
	require.NotNil(t, res.Next, "the freed slot was refilled and handed out")

	scope, err := st.Store.InstallID(context.Background())
	require.NoError(t, err)
	require.NotEmpty(t, scope)
	work := telemetry.WorkContext(scope, "task_device", cmd.ID)
	tid := work.TraceID()
	var spans map[string][]tracetest.SpanStub
	require.Eventually(t, func() bool {
		spans = spansOf(exp, tid)
		return len(spans["device.refill"]) > 0
	}, 10*time.Second, 20*time.Millisecond)
	root := one(t, spans, "device.execution")
	require.False(t, root.Parent.IsValid(), "the execution is the root of its trace")
	require.Equal(t, work.SpanID(), root.SpanContext.SpanID())
	require.Equal(t, fmt.Sprint(cmd.ID), attr(root, "tickgate.task_device.id"))
	claimSpan := one(t, spans, "device.claim")
	requireChild(t, claimSpan, root)
	require.Equal(t, "traced-rack", attr(claimSpan, "tickgate.pc"))
	require.Len(t, claimSpan.Links, 1, "linked to the claim request")
	result := one(t, spans, "device.result")
	requireChild(t, result, root)
	require.Equal(t, "succeeded", attr(result, "tickgate.task_device.status"))
	refill := one(t, spans, "device.refill")
	requireChild(t, refill, result)
	require.Equal(t, fmt.Sprintf("[%d]", res.Next.ID), attr(refill, "tickgate.refilled"))

	// The next execution, handed out by the result (claim_next), has a trace of its own.
	next := spansOf(exp, telemetry.WorkContext(scope, "task_device", res.Next.ID).TraceID())
	requireChild(t, one(t, next, "device.claim"), one(t, next, "device.execution"))
	require.Equal(t, "claim_next", attr(one(t, next, "device.claim"), "tickgate.claim.via"))
}

// TestARolloutTaskRunIsOneTrace: a task run's trace holds its promotion, its claim, its
// executor's attempt and the write of its result, all under the task run.
func TestARolloutTaskRunIsOneTrace(t *testing.T) {
	t.Parallel()
	st, exp := tracedStack(t)
	var created api.RolloutView
	st.CreateRollout(t, map[string]any{"name": "traced-rollout", "parallel_limit": 1, "tasks": []map[string]any{
		{"database": "orders", "type": "DDL", "version": "7", "executor": "noop"},
	}}, &created)
	var finish tracetest.SpanStub
	require.Eventually(t, func() bool {
		for _, s := range exp.GetSpans() {
			if s.Name == activities.SpanFinish {
				finish = s
				return true
			}
		}
		return false
	}, 60*time.Second, 50*time.Millisecond, "the task run's result is written")
	spans := spansOf(exp, finish.SpanContext.TraceID())
	run := one(t, spans, activities.SpanTaskRun)
	require.False(t, run.Parent.IsValid(), "the task run is the root of its trace")
	require.Equal(t, fmt.Sprint(created.ID), attr(run, "tickgate.rollout.id"))
	require.Equal(t, "orders", attr(run, "tickgate.task_run.database"))
	require.Equal(t, "7", attr(run, "tickgate.task_run.version"))
	requireChild(t, one(t, spans, activities.SpanPromote), run)
	requireChild(t, one(t, spans, activities.SpanClaim), run)
	execute := one(t, spans, activities.SpanExecute)
	requireChild(t, execute, run)
	require.Equal(t, "1", attr(execute, "tickgate.executor.attempt"))
	requireChild(t, finish, run)
	require.Equal(t, "DONE", attr(finish, "tickgate.task_run.status"))
}

// TestTracingOffWritesNothing: with tracing off (no OTLP endpoint: the default), a fire's
// run carries no span context and its answer no trace id.
func TestTracingOffWritesNothing(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	st.CreateSchedule(t, map[string]any{
		"name": "untraced", "spec": map[string]any{"interval": "15s"},
		"action": map[string]any{"kind": "event", "topic": "t", "type": "x"},
	})
	run := releasedRun(t, st, "untraced")
	require.Nil(t, run.TraceContext, "nothing written for tracing")
	var n int
	require.NoError(t, st.Store.Pool.QueryRow(context.Background(), "SELECT count(*) FROM schedule_runs WHERE trace_context IS NOT NULL").Scan(&n))
	require.Zero(t, n)
	var sched api.ScheduleView
	st.GetSchedule(t, "untraced", &sched)
	require.NotEmpty(t, sched.RecentRuns)
	for _, r := range sched.RecentRuns {
		require.Empty(t, r.TraceID)
	}
	raw, err := st.Client(t).GetScheduleWithResponse(t.Context(), "untraced")
	require.NoError(t, err)
	require.False(t, strings.Contains(string(raw.Body), "trace_id"), "no trace_id in the answer")
}
