package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/teststack"
)

type runsPage struct {
	Items      []api.RunView `json:"items"`
	NextCursor string        `json:"next_cursor"`
}

type eventsPage struct {
	Items      []api.EventView `json:"items"`
	NextCursor string          `json:"next_cursor"`
}

func listRuns(t *testing.T, st *teststack.Stack, name string) []api.RunView {
	t.Helper()
	var page runsPage
	st.JSON(t, http.MethodGet, "/api/v1/schedules/"+name+"/runs?limit=500", nil, http.StatusOK, &page)
	return page.Items
}

// TestScheduleEndToEnd drives a schedule through the HTTP API against a real Temporal dev
// server and PostgreSQL: it fires every second with its outbox events, stops while paused,
// fires again after resume, and a trigger records a manual run.
func TestScheduleEndToEnd(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	ctx := context.Background()

	var created api.ScheduleView
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{
		"name":   "heartbeat",
		"spec":   map[string]any{"interval": "1s"},
		"action": map[string]any{"kind": "event", "topic": "pings", "type": "ping", "data": map[string]any{"from": "e2e"}},
	}, http.StatusCreated, &created)
	require.Equal(t, "heartbeat", created.Name)
	require.Equal(t, "schedule/heartbeat", created.WorkflowID)
	require.NotNil(t, created.NextRunAt)

	// A new schedule is at rest: no workflow of its own, the planner arms its fires.
	_, err := st.Temporal.DescribeWorkflowExecution(ctx, "schedule/heartbeat", "")
	var notFound *serviceerror.NotFound
	require.ErrorAs(t, err, &notFound, "creating a schedule starts no workflow")

	require.Eventually(t, func() bool { return len(listRuns(t, st, "heartbeat")) >= 3 }, 20*time.Second, 100*time.Millisecond)
	var feed eventsPage
	require.Eventually(t, func() bool {
		st.JSON(t, http.MethodGet, "/api/v1/events?topic=pings", nil, http.StatusOK, &feed)
		return len(feed.Items) >= 3
	}, 10*time.Second, 100*time.Millisecond)
	for _, e := range feed.Items {
		require.Equal(t, "heartbeat", e.AggregateID)
		require.Equal(t, "ping", e.Type)
		require.JSONEq(t, `{"from":"e2e"}`, string(e.Data))
	}
	// The runs are in SQL too, one per tick, each a second apart on the anchored grid.
	var runs, distinctTicks int
	require.NoError(t, st.Store.Pool.QueryRow(ctx,
		"SELECT count(*), count(DISTINCT scheduled_at) FROM schedule_runs WHERE trigger = 'scheduled'").Scan(&runs, &distinctTicks))
	require.Equal(t, runs, distinctTicks)

	var paused api.ScheduleView
	st.JSON(t, http.MethodPost, "/api/v1/schedules/heartbeat/pause", map[string]any{"note": "deploy"}, http.StatusOK, &paused)
	require.True(t, paused.Paused)
	require.Equal(t, "deploy", paused.Note)
	require.Nil(t, paused.NextRunAt)
	atPause := len(listRuns(t, st, "heartbeat"))
	require.Never(t, func() bool { return len(listRuns(t, st, "heartbeat")) > atPause }, 3*time.Second, 200*time.Millisecond,
		"a paused schedule fires nothing")

	var resumed api.ScheduleView
	st.JSON(t, http.MethodPost, "/api/v1/schedules/heartbeat/resume", nil, http.StatusOK, &resumed)
	require.False(t, resumed.Paused)
	require.Eventually(t, func() bool { return len(listRuns(t, st, "heartbeat")) >= atPause+2 }, 20*time.Second, 100*time.Millisecond)

	var trig api.TriggerView
	st.JSON(t, http.MethodPost, "/api/v1/schedules/heartbeat/trigger", nil, http.StatusOK, &trig)
	require.NotNil(t, trig.Run)
	require.Equal(t, domain.TriggerManual, trig.Run.Trigger)
	require.Equal(t, domain.RunSucceeded, trig.Run.Status)

	var got api.ScheduleView
	st.JSON(t, http.MethodGet, "/api/v1/schedules/heartbeat", nil, http.StatusOK, &got)
	require.Len(t, got.NextFireTimes, 10)
	require.NotEmpty(t, got.RecentRuns)
	require.GreaterOrEqual(t, got.Counters.Fired, int64(atPause+3))

	st.JSON(t, http.MethodDelete, "/api/v1/schedules/heartbeat", nil, http.StatusNoContent, nil)
	st.JSON(t, http.MethodGet, "/api/v1/schedules/heartbeat", nil, http.StatusNotFound, nil)
	require.Eventually(t, func() bool {
		d, err := st.Temporal.DescribeWorkflowExecution(ctx, "schedule/heartbeat", "")
		return err == nil && d.WorkflowExecutionInfo.Status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	}, 10*time.Second, 100*time.Millisecond)
}

// TestScheduleBadInputIsRejectedAndCreatesNothing checks each invalid create: 400
// problem+json naming the field, and no row written.
func TestScheduleBadInputIsRejectedAndCreatesNothing(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	event := map[string]any{"kind": "event", "topic": "t", "type": "x"}
	cases := map[string]struct {
		body  any
		field string
	}{
		"unparseable cron":   {map[string]any{"name": "a", "spec": map[string]any{"cron": "not a cron"}, "action": event}, "spec.cron"},
		"unknown time zone":  {map[string]any{"name": "a", "spec": map[string]any{"cron": "* * * * *", "timezone": "Mars/Base"}, "action": event}, "spec.timezone"},
		"negative interval":  {map[string]any{"name": "a", "spec": map[string]any{"interval": map[string]any{"every": -1, "unit": "SECONDS"}}, "action": event}, "spec.interval.every"},
		"zero interval":      {map[string]any{"name": "a", "spec": map[string]any{"interval": "0s"}, "action": event}, "spec.interval"},
		"bad name":           {map[string]any{"name": "no spaces", "spec": map[string]any{"cron": "* * * * *"}, "action": event}, "name"},
		"unknown overlap":    {map[string]any{"name": "a", "spec": map[string]any{"cron": "* * * * *"}, "action": event, "policies": map[string]any{"overlap": "sometimes"}}, "policies.overlap"},
		"unknown field":      {map[string]any{"name": "a", "spec": map[string]any{"cron": "* * * * *"}, "action": event, "colour": "red"}, "colour"},
		"wrong type":         {map[string]any{"name": 7, "spec": map[string]any{"cron": "* * * * *"}, "action": event}, "name"},
		"unknown kind":       {map[string]any{"name": "a", "spec": map[string]any{"cron": "* * * * *"}, "action": map[string]any{"kind": "email"}}, "action.kind"},
		"workflow w/o queue": {map[string]any{"name": "a", "spec": map[string]any{"cron": "* * * * *"}, "action": map[string]any{"kind": "workflow", "workflow_type": "W"}}, "action.task_queue"},
	}
	for name, tc := range cases {
		status, body := st.Do(t, http.MethodPost, "/api/v1/schedules", tc.body)
		require.Equal(t, http.StatusBadRequest, status, "%s: %s", name, body)
		var p api.Problem
		require.NoError(t, json.Unmarshal(body, &p), name)
		require.Equal(t, tc.field, p.Field, "%s: %s", name, body)
		require.Equal(t, 400, p.Status)
	}
	status, body := st.Do(t, http.MethodPost, "/api/v1/schedules", `{"name": "a", "spec": {`)
	require.Equal(t, http.StatusBadRequest, status, "%s", body)
	var n int
	require.NoError(t, st.Store.Pool.QueryRow(context.Background(), "SELECT count(*) FROM schedules").Scan(&n))
	require.Zero(t, n, "bad input created nothing")

	ok := map[string]any{"name": "dup", "spec": map[string]any{"cron": "0 3 * * *", "timezone": "Europe/Berlin"}, "action": event}
	st.JSON(t, http.MethodPost, "/api/v1/schedules", ok, http.StatusCreated, nil)
	status, body = st.Do(t, http.MethodPost, "/api/v1/schedules", ok)
	require.Equal(t, http.StatusConflict, status, "%s", body)
	var p api.Problem
	require.NoError(t, json.Unmarshal(body, &p))
	require.Equal(t, "name", p.Field)
	st.JSON(t, http.MethodGet, "/api/v1/schedules/nope", nil, http.StatusNotFound, nil)
	st.JSON(t, http.MethodPost, "/api/v1/schedules/nope/pause", nil, http.StatusNotFound, nil)
	st.JSON(t, http.MethodGet, "/api/v1/events?after=-1", nil, http.StatusBadRequest, nil)
}

// TestEventFeedNextCursorWorksAsCursorAndAfter pages the outbox feed with next_cursor sent
// back either way.
func TestEventFeedNextCursorWorksAsCursorAndAfter(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{
		"name": "feed", "spec": map[string]any{"cron": "0 0 1 1 *"},
		"action": map[string]any{"kind": "event", "topic": "paged", "type": "x"},
	}, http.StatusCreated, nil)
	for i := 0; i < 3; i++ {
		st.JSON(t, http.MethodPost, "/api/v1/schedules/feed/trigger", nil, http.StatusOK, nil)
	}
	// The triggers are asynchronous: wait until all three fires have their outbox rows, so
	// the second page is compared against a settled feed rather than racing the last fire.
	require.Eventually(t, func() bool {
		var all eventsPage
		st.JSON(t, http.MethodGet, "/api/v1/events?topic=paged&limit=10", nil, http.StatusOK, &all)
		return len(all.Items) == 3
	}, 10*time.Second, 100*time.Millisecond)
	var first eventsPage
	st.JSON(t, http.MethodGet, "/api/v1/events?topic=paged&limit=2", nil, http.StatusOK, &first)
	require.Len(t, first.Items, 2)
	require.NotEmpty(t, first.NextCursor)
	for _, param := range []string{"cursor", "after"} {
		var next eventsPage
		st.JSON(t, http.MethodGet, "/api/v1/events?topic=paged&limit=2&"+param+"="+first.NextCursor, nil, http.StatusOK, &next)
		require.Len(t, next.Items, 1, param)
		require.Greater(t, next.Items[0].ID, first.Items[1].ID, param)
	}
}
