package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/workflows"
)

// residentStack is a stack whose workers keep schedules resident
// (TICKGATE_SCHEDULES_RESIDENT=true), as `make dev` runs with the variable set.
func residentStack(t *testing.T) *teststack.Stack {
	t.Helper()
	return teststack.Start(t, teststack.Options{Configure: func(c *config.Config) { c.SchedulesResident = true }})
}

// openScheduleWorkflows counts the schedule workflows open on the stack's task queue, as the
// Temporal UI lists them (TickgateKind = "schedule").
func openScheduleWorkflows(t *testing.T, st *teststack.Stack) int64 {
	t.Helper()
	resp, err := st.Temporal.CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{
		Query: fmt.Sprintf(`TickgateKind = %q AND TaskQueue = %q AND ExecutionStatus = "Running"`, workflows.KindSchedule, st.Config.TaskQueue),
	})
	require.NoError(t, err)
	return resp.GetCount()
}

// describeSchedule asks a schedule's open workflow the describe query.
func describeSchedule(t *testing.T, st *teststack.Stack, name string) workflows.ScheduleDescription {
	t.Helper()
	v, err := st.Temporal.QueryWorkflow(context.Background(), workflows.ScheduleWorkflowID(name), "", workflows.ScheduleDescribe)
	require.NoError(t, err, "describe %s", name)
	var d workflows.ScheduleDescription
	require.NoError(t, v.Get(&d))
	return d
}

// With TICKGATE_SCHEDULES_RESIDENT=true, N schedules created through the bulk API each get a
// workflow, open in Temporal between their fires (listed by TickgateKind = "schedule"), each
// at rest with the planner arming its fires: every tick fires exactly once, and each run
// stays the same open run across them. A plain signal (no signal-with-start) reaches one at
// rest; DELETE ends one's workflow.
func TestResidentSchedulesStayOpenAndFireEachTickOnce(t *testing.T) {
	t.Parallel()
	st := residentStack(t)
	ctx := context.Background()
	const n = 40
	names := make([]string, n)
	items := make([]map[string]any, n)
	for i := range names {
		names[i] = fmt.Sprintf("resident-e2e-%02d", i)
		items[i] = map[string]any{"name": names[i], "spec": map[string]any{"interval": "10s"},
			"action": map[string]any{"kind": "event", "topic": "resident-e2e", "type": "tick"}}
	}
	t.Cleanup(func() {
		for _, name := range names {
			_ = st.Temporal.TerminateWorkflow(context.Background(), workflows.ScheduleWorkflowID(name), "", "test over")
		}
	})
	st.JSON(t, http.MethodPost, "/api/v1/schedules/bulk", map[string]any{"items": items}, http.StatusCreated, nil)

	// Every one gets its workflow, which takes the schedule and rests it in place: open, the
	// row the planner's.
	require.Eventually(t, func() bool { return openScheduleWorkflows(t, st) == n }, time.Minute, 200*time.Millisecond,
		"all %d schedule workflows open in Temporal", n)
	require.Eventually(t, func() bool {
		var owned int
		require.NoError(t, st.Store.Pool.QueryRow(ctx, `SELECT count(*) FROM schedules WHERE name LIKE 'resident-e2e-%' AND owner IS NOT NULL`).Scan(&owned))
		return owned == 0
	}, time.Minute, 200*time.Millisecond, "every schedule rested: the planner's")
	runIDs := map[string]string{}
	for _, name := range names {
		d := describeSchedule(t, st, name)
		require.True(t, d.AtRest, "%s: describe says at rest", name)
		require.NotNil(t, d.NextFireAt, "%s: and names the next fire", name)
		desc, err := st.Temporal.DescribeWorkflowExecution(ctx, workflows.ScheduleWorkflowID(name), "")
		require.NoError(t, err)
		runIDs[name] = desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	}

	// Ticks every 10 s, armed by the planner and released: three each at least.
	require.Eventually(t, func() bool {
		var least int
		require.NoError(t, st.Store.Pool.QueryRow(ctx, `SELECT COALESCE(min(c), 0) FROM (SELECT count(*) AS c FROM schedules s
			LEFT JOIN schedule_runs r ON r.schedule_id = s.id AND run_shown(r.armed, r.visible_at)
			WHERE s.name LIKE 'resident-e2e-%' GROUP BY s.id) x`).Scan(&least))
		return least >= 3
	}, 2*time.Minute, 500*time.Millisecond, "every schedule fired three ticks")

	// Exactly once: per schedule, one run and one event per tick, the ticks 10 s apart with
	// none missing between the first and the last shown.
	rows, err := st.Store.Pool.Query(ctx, `SELECT s.name, count(r.id), count(DISTINCT r.scheduled_at), count(e.id),
			extract(epoch FROM max(r.scheduled_at) - min(r.scheduled_at))::bigint, count(*) FILTER (WHERE r.status <> 'SUCCEEDED' OR r.trigger <> 'scheduled')
		FROM schedules s JOIN schedule_runs r ON r.schedule_id = s.id AND run_shown(r.armed, r.visible_at)
		LEFT JOIN event_store e ON e.schedule_run_id = r.id
		WHERE s.name LIKE 'resident-e2e-%' GROUP BY s.name`)
	require.NoError(t, err)
	seen := 0
	for rows.Next() {
		var name string
		var runs, ticks, events, span, other int
		require.NoError(t, rows.Scan(&name, &runs, &ticks, &events, &span, &other))
		require.Equal(t, ticks, runs, "%s: one run per tick", name)
		require.Equal(t, runs, events, "%s: one event per run", name)
		require.Equal(t, span/10+1, ticks, "%s: no tick missing between the first and the last", name)
		require.Zero(t, other, "%s: every run a scheduled tick that succeeded", name)
		seen++
	}
	require.NoError(t, rows.Err())
	require.Equal(t, n, seen)

	// The same runs stayed open across those fires.
	require.Equal(t, int64(n), openScheduleWorkflows(t, st))
	for _, name := range names {
		desc, err := st.Temporal.DescribeWorkflowExecution(ctx, workflows.ScheduleWorkflowID(name), "")
		require.NoError(t, err)
		info := desc.GetWorkflowExecutionInfo()
		require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, info.GetStatus(), name)
		require.Equal(t, runIDs[name], info.GetExecution().GetRunId(), "%s: the run that rested is the one open", name)
	}

	// A plain signal reaches a run at rest: the schedule is paused.
	require.NoError(t, st.Temporal.SignalWorkflow(ctx, workflows.ScheduleWorkflowID(names[0]), "", workflows.SchedulePause,
		workflows.PauseRequest{Note: "plain signal", Identity: "billing-service"}))
	require.Eventually(t, func() bool {
		row, err := st.Store.GetSchedule(ctx, names[0])
		require.NoError(t, err)
		return row.Paused && row.PauseNote == "plain signal"
	}, 30*time.Second, 100*time.Millisecond, "the plain signal paused it")

	// Deleting a schedule ends its workflow.
	st.JSON(t, http.MethodDelete, "/api/v1/schedules/"+names[1], nil, http.StatusNoContent, nil)
	desc, err := st.Temporal.DescribeWorkflowExecution(ctx, workflows.ScheduleWorkflowID(names[1]), "")
	require.NoError(t, err)
	require.NotEqual(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, desc.GetWorkflowExecutionInfo().GetStatus(), "deleted: its workflow ended")
	require.Eventually(t, func() bool { return openScheduleWorkflows(t, st) == n-1 }, 30*time.Second, 200*time.Millisecond)
}
