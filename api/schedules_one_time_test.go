package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/internal/scheduleplan"
	"github.com/tickgate/tickgate/internal/testing/teststack"
)

// TestOneTimeSchedulesThroughTheAPI: spec {at} makes a one-time schedule, created like any
// (a row and its plan, no workflow): its page shows its one fire, its state and what it does
// once completed. at goes alone; one in the past is taken only within the catch-up window
// (at least 10 s), and then fires at once; after_completion is a one-time schedule's only.
// Each refusal is a 400 naming the field, and creates nothing.
func TestOneTimeSchedulesThroughTheAPI(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	event := map[string]any{"kind": "event", "topic": "reminders", "type": "due"}
	now := time.Now().UTC()
	at := now.Add(48 * time.Hour).Truncate(time.Second)

	for _, bad := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"name": "x", "spec": map[string]any{"at": at, "cron": "@daily"}, "action": event}, "spec.at"},
		{map[string]any{"name": "x", "spec": map[string]any{"at": at, "start_at": at}, "action": event}, "spec.start_at"},
		{map[string]any{"name": "x", "spec": map[string]any{"at": "next tuesday"}, "action": event}, "spec.at"},
		{map[string]any{"name": "x", "spec": map[string]any{"at": now.Add(-time.Minute)}, "action": event}, "spec.at"},
		{map[string]any{"name": "x", "spec": map[string]any{"cron": "@daily"}, "action": event, "after_completion": "delete"}, "after_completion"},
		{map[string]any{"name": "x", "spec": map[string]any{"at": at}, "action": event, "after_completion": "archive"}, "after_completion"},
	} {
		problem(t, st, http.MethodPost, "/api/v1/schedules", bad.body, http.StatusBadRequest, bad.field)
	}
	require.Zero(t, scheduleCount(t, st), "the refusals created nothing")

	var v api.ScheduleView
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{
		"name": "remind-ada", "spec": map[string]any{"at": at.Format(time.RFC3339)}, "action": event, "after_completion": "delete",
	}, http.StatusCreated, &v)
	require.Equal(t, api.StateActive, v.State)
	require.Equal(t, "delete", v.AfterCompletion)
	require.Nil(t, v.CompletedAt)
	require.Equal(t, at, v.NextRunAt.UTC())
	st.JSON(t, http.MethodGet, "/api/v1/schedules/remind-ada", nil, http.StatusOK, &v)
	require.Equal(t, []time.Time{at}, v.NextFireTimes, "its one fire")
	row, err := st.Store.GetSchedule(context.Background(), "remind-ada")
	require.NoError(t, err)
	require.Equal(t, at.Add(-scheduleplan.ArmLead), row.PlanAt.UTC(), "at rest, armed by the planner as a cron schedule is")
	require.Nil(t, row.Owner)

	var preview api.PreviewView
	st.JSON(t, http.MethodPost, "/api/v1/schedules/preview", map[string]any{"spec": map[string]any{"at": at}, "action": event}, http.StatusOK, &preview)
	require.Equal(t, []time.Time{at}, preview.NextFireTimes)
	require.Equal(t, "once, at "+at.Format(time.RFC3339), preview.Description)

	// A moment in the past (a client clock behind, a slow request): taken, and it fires at once.
	recent := now.Add(-5 * time.Second).Truncate(time.Millisecond)
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{"name": "just-now", "spec": map[string]any{"at": recent}, "action": event},
		http.StatusCreated, &v)
	require.Equal(t, recent, v.NextRunAt.UTC(), "its tick is still ahead of it")
	row, err = st.Store.GetSchedule(context.Background(), "just-now")
	require.NoError(t, err)
	require.False(t, row.PlanAt.After(time.Now()), "armed at once")
	// Older, inside a catch-up window the schedule gives.
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{"name": "within-window", "spec": map[string]any{"at": now.Add(-2 * time.Minute)},
		"action": event, "policies": map[string]any{"catchup_window": "5m"}}, http.StatusCreated, nil)

	// PATCH: a one-time schedule keeps what it does once completed; a spec that is not
	// one-time any more drops it.
	st.JSON(t, http.MethodPatch, "/api/v1/schedules/remind-ada", map[string]any{"after_completion": "keep"}, http.StatusOK, &v)
	require.Equal(t, "keep", v.AfterCompletion)
	problem(t, st, http.MethodPatch, "/api/v1/schedules/remind-ada", map[string]any{"spec": map[string]any{"at": now.Add(-time.Hour)}},
		http.StatusBadRequest, "spec.at")
	var cron api.ScheduleView
	st.JSON(t, http.MethodPatch, "/api/v1/schedules/remind-ada", map[string]any{"spec": map[string]any{"cron": "@daily"}}, http.StatusOK, &cron)
	require.Empty(t, cron.AfterCompletion)
	row, err = st.Store.GetSchedule(context.Background(), "remind-ada")
	require.NoError(t, err)
	require.Equal(t, "keep", row.AfterCompletion)

	var page struct {
		Items []api.ScheduleView `json:"items"`
	}
	// The two created in the past fire at once, and complete; the other stays active.
	if !assert.Eventually(t, func() bool {
		st.JSON(t, http.MethodGet, "/api/v1/schedules?state=completed", nil, http.StatusOK, &page)
		return len(page.Items) == 2
	}, 30*time.Second, 100*time.Millisecond) {
		t.Fatal(dumpSchedules(t, st))
	}
	require.Equal(t, []string{"just-now", "within-window"}, []string{page.Items[0].Name, page.Items[1].Name})
	require.Equal(t, api.StateCompleted, page.Items[0].State)
	require.NotNil(t, page.Items[0].CompletedAt)
	st.JSON(t, http.MethodGet, "/api/v1/schedules?state=active", nil, http.StatusOK, &page)
	require.Len(t, page.Items, 1)
	// An update of something else leaves its at alone, however old it is now.
	st.JSON(t, http.MethodPatch, "/api/v1/schedules/within-window", map[string]any{"policies": map[string]any{"catchup_window": "0s"}},
		http.StatusOK, nil)
	problem(t, st, http.MethodGet, "/api/v1/schedules?state=done", nil, http.StatusBadRequest, "state")
}

func dumpSchedules(t *testing.T, st *teststack.Stack) string {
	rows, err := st.Store.Pool.Query(context.Background(), `SELECT s.name || ' owner=' || COALESCE(s.owner, '-') || ' plan=' || COALESCE(s.plan_action, '-') || '@' || COALESCE(s.plan_at::text, '-') ||
		' wm=' || COALESCE(s.watermark::text, '-') || ' runs=' || COALESCE((SELECT string_agg(r.status || '/' || r.armed || '/' || r.trigger || '/' || r.reason, ',') FROM schedule_runs r WHERE r.schedule_id = s.id), '') FROM schedules s`)
	require.NoError(t, err)
	defer rows.Close()
	out := ""
	for rows.Next() {
		var l string
		require.NoError(t, rows.Scan(&l))
		out += l + "\n"
	}
	rows2, err := st.Store.Pool.Query(context.Background(), `SELECT state || ' ' || COALESCE(wait_event_type,'') || ' ' || COALESCE(wait_event, '') || ' ' || left(query, 200) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)
	require.NoError(t, err)
	defer rows2.Close()
	for rows2.Next() {
		var l string
		require.NoError(t, rows2.Scan(&l))
		out += l + "\n"
	}
	return out
}
