package api_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/internal/testing/teststack"
)

func scheduleCount(t *testing.T, st *teststack.Stack) int {
	t.Helper()
	var n int
	require.NoError(t, st.Store.Pool.QueryRow(context.Background(), "SELECT count(*) FROM schedules").Scan(&n))
	return n
}

// TestCalendarsCRUDAndBadInput: calendars are created, read, listed, replaced and deleted
// through /calendars; every bad field is a 400 naming it, and changes nothing. A schedule
// may exclude only calendars that exist (400 naming spec.exclude_calendars, nothing
// created, in a bulk create too), and a calendar a schedule excludes is not deleted: a 409
// names the schedule.
func TestCalendarsCRUDAndBadInput(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	var cal api.CalendarView
	st.JSON(t, http.MethodPost, "/api/v1/calendars", map[string]any{
		"name": "holidays-fr", "timezone": "Europe/Paris", "dates": []string{"2026-12-25", "2026-01-01"},
		"ranges": []map[string]string{{"start": "2026-12-24", "end": "2026-12-26"}},
	}, http.StatusCreated, &cal)
	require.Equal(t, []string{"2026-01-01", "2026-12-25"}, cal.Dates)
	require.Equal(t, int64(1), cal.Version)

	for _, bad := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"name": "holidays-fr"}, "name"}, // 409 below
		{map[string]any{"name": "bad name"}, "name"},
		{map[string]any{"name": "c", "timezone": "Mars/Base"}, "timezone"},
		{map[string]any{"name": "c", "dates": []string{"2026-02-30"}}, "dates[0]"},
		{map[string]any{"name": "c", "ranges": []map[string]string{{"start": "2026-12-24", "end": "2026-12-01"}}}, "ranges[0].end"},
		{map[string]any{"name": "c", "ranges": []map[string]string{{"start": "tomorrow", "end": "2026-12-01"}}}, "ranges[0].start"},
		{map[string]any{"name": "c", "holidays": true}, "holidays"},
	} {
		status := http.StatusBadRequest
		if bad.field == "name" && bad.body["name"] == "holidays-fr" {
			status = http.StatusConflict
		}
		problem(t, st, http.MethodPost, "/api/v1/calendars", bad.body, status, bad.field)
	}
	var page struct {
		Items []api.CalendarView `json:"items"`
	}
	st.JSON(t, http.MethodGet, "/api/v1/calendars", nil, http.StatusOK, &page)
	require.Len(t, page.Items, 1, "the refused calendars changed nothing")

	problem(t, st, http.MethodPut, "/api/v1/calendars/holidays-fr", map[string]any{"dates": []string{"2026-12-25"}, "version": 7},
		http.StatusPreconditionFailed, "version")
	problem(t, st, http.MethodPut, "/api/v1/calendars/holidays-fr", map[string]any{"name": "other", "dates": []string{}},
		http.StatusBadRequest, "name")
	problem(t, st, http.MethodPut, "/api/v1/calendars/nope", map[string]any{"dates": []string{}}, http.StatusNotFound, "")
	st.JSON(t, http.MethodPut, "/api/v1/calendars/holidays-fr", map[string]any{"timezone": "Europe/Paris", "dates": []string{"2026-12-25"}, "version": 1},
		http.StatusOK, &cal)
	require.Equal(t, int64(2), cal.Version)
	require.Empty(t, cal.Ranges)

	event := map[string]any{"kind": "event", "topic": "t", "type": "x"}
	problem(t, st, http.MethodPost, "/api/v1/schedules", map[string]any{
		"name": "daily", "spec": map[string]any{"cron": "0 9 * * *", "exclude_calendars": []string{"holidays-fr", "nope"}}, "action": event,
	}, http.StatusBadRequest, "spec.exclude_calendars")
	problem(t, st, http.MethodPost, "/api/v1/schedules/bulk", map[string]any{"items": []map[string]any{
		{"name": "a", "spec": map[string]any{"cron": "0 9 * * *"}, "action": event},
		{"name": "b", "spec": map[string]any{"cron": "0 9 * * *", "exclude_calendars": []string{"nope"}}, "action": event},
	}}, http.StatusBadRequest, "items[1].spec.exclude_calendars")
	require.Zero(t, scheduleCount(t, st), "nothing created")

	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{
		"name": "daily", "spec": map[string]any{"cron": "0 9 * * *", "timezone": "Europe/Paris", "exclude_calendars": []string{"holidays-fr"}},
		"action": event,
	}, http.StatusCreated, nil)
	problem(t, st, http.MethodPatch, "/api/v1/schedules/daily", map[string]any{
		"spec": map[string]any{"cron": "0 9 * * *", "exclude_calendars": []string{"gone"}},
	}, http.StatusBadRequest, "spec.exclude_calendars")
	st.JSON(t, http.MethodGet, "/api/v1/calendars/holidays-fr", nil, http.StatusOK, &cal)
	require.Equal(t, []string{"daily"}, cal.UsedBy)
	require.Equal(t, int64(1), *cal.UsedByCount)

	p := problem(t, st, http.MethodDelete, "/api/v1/calendars/holidays-fr", nil, http.StatusConflict, "name")
	require.Contains(t, p.Detail, "daily")
	st.JSON(t, http.MethodGet, "/api/v1/calendars/holidays-fr", nil, http.StatusOK, nil)
	st.JSON(t, http.MethodDelete, "/api/v1/schedules/daily", nil, http.StatusNoContent, nil)
	st.JSON(t, http.MethodDelete, "/api/v1/calendars/holidays-fr", nil, http.StatusNoContent, nil)
	problem(t, st, http.MethodGet, "/api/v1/calendars/holidays-fr", nil, http.StatusNotFound, "")
}

// TestPreviewAndDescribeLeaveExcludedTicksOut: the preview and a schedule's page list the
// fires it will make: the ticks its calendars exclude are left out (they are recorded
// SKIPPED, not fired). A preview naming an unknown calendar is the 400 a create would be.
func TestPreviewAndDescribeLeaveExcludedTicksOut(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	start := time.Now().UTC().Truncate(24 * time.Hour).Add(48 * time.Hour)
	closed := []string{start.AddDate(0, 0, 1).Format("2006-01-02"), start.AddDate(0, 0, 2).Format("2006-01-02")}
	st.JSON(t, http.MethodPost, "/api/v1/calendars", map[string]any{"name": "closed", "dates": closed}, http.StatusCreated, nil)
	body := map[string]any{
		"name": "daily", "spec": map[string]any{"interval": "24h", "start_at": start.Add(9 * time.Hour).Format(time.RFC3339),
			"exclude_calendars": []string{"closed"}},
		"action": map[string]any{"kind": "event", "topic": "t", "type": "x"},
	}
	want := []time.Time{start.Add(9 * time.Hour), start.AddDate(0, 0, 3).Add(9 * time.Hour), start.AddDate(0, 0, 4).Add(9 * time.Hour)}
	var preview api.PreviewView
	st.JSON(t, http.MethodPost, "/api/v1/schedules/preview", body, http.StatusOK, &preview)
	require.Equal(t, want, preview.NextFireTimes[:3], "days 1 and 2 are closed")
	require.Contains(t, preview.Description, "except what the calendars closed exclude")

	st.JSON(t, http.MethodPost, "/api/v1/schedules", body, http.StatusCreated, nil)
	var got api.ScheduleView
	st.JSON(t, http.MethodGet, "/api/v1/schedules/daily", nil, http.StatusOK, &got)
	require.Equal(t, want, got.NextFireTimes[:3])
	require.Equal(t, api.StateActive, got.State)

	body["spec"] = map[string]any{"cron": "@daily", "exclude_calendars": []string{"open"}}
	problem(t, st, http.MethodPost, "/api/v1/schedules/preview", body, http.StatusBadRequest, "spec.exclude_calendars")
}

// recorder records the planner's wakes instead of starting workflows.
type recorder struct {
	mu    sync.Mutex
	woken []string
}

func (r *recorder) WakeSchedule(_ context.Context, _ int64, name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.woken = append(r.woken, name)
	return nil
}

func (r *recorder) StopSchedule(context.Context, string, string) error { return nil }

// TestCalendarEditJudgesArmedFiresBeforeTheirRelease: an edit of a calendar takes effect for
// every schedule excluding it at once. The planner armed a minute of fires ahead; the edit,
// in its transaction, turns the ones it now excludes into SKIPPED ticks naming it (their
// events gone, never in the feed) and, edited back, makes them fire again — before any is
// released. A fire released before the edit is a fact the edit leaves alone. S1 holds
// throughout: one row per tick.
func TestCalendarEditJudgesArmedFiresBeforeTheirRelease(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	ctx := context.Background()
	planner := &activities.ScheduleActivities{Store: st.Store, Schedules: &recorder{}}
	t0 := time.Now().UTC().Truncate(time.Second).Add(time.Hour)
	st.JSON(t, http.MethodPost, "/api/v1/calendars", map[string]any{"name": "freeze", "dates": []string{}}, http.StatusCreated, nil)
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{
		"name": "beat", "spec": map[string]any{"interval": "10s", "start_at": t0.Format(time.RFC3339), "exclude_calendars": []string{"freeze"}},
		"action": map[string]any{"kind": "event", "topic": "beat", "type": "x"},
	}, http.StatusCreated, nil)
	_, err := planner.PlanRound(ctx, t0)
	require.NoError(t, err)
	// Armed: ticks t0 … t0+150s (ArmLead + ArmSpan ahead; start_at is the first), one row each.
	statuses := func() map[time.Duration]string {
		rows, err := st.Store.Pool.Query(ctx, `SELECT r.scheduled_at, r.status || '/' || r.reason || '/' || (SELECT count(*) FROM event_store e WHERE e.schedule_run_id = r.id)
			FROM schedule_runs r ORDER BY r.scheduled_at`)
		require.NoError(t, err)
		defer rows.Close()
		out := map[time.Duration]string{}
		for rows.Next() {
			var at time.Time
			var s string
			require.NoError(t, rows.Scan(&at, &s))
			out[at.Sub(t0)] = s
		}
		return out
	}
	require.Len(t, statuses(), 16)
	// release does what a releaser running all along did by asOf: each fire released at
	// its time.
	release := func(asOf time.Time) {
		for {
			var due *time.Time
			require.NoError(t, st.Store.Pool.QueryRow(ctx, "SELECT min(visible_at) FROM schedule_runs WHERE armed AND visible_at <= $1", asOf).Scan(&due))
			if due == nil {
				return
			}
			_, err := st.Store.ReleaseDueAsOf(ctx, due, nil)
			require.NoError(t, err)
		}
	}
	release(t0.Add(10 * time.Second)) // the first fires are out before the edit

	var cal api.CalendarView
	st.JSON(t, http.MethodPut, "/api/v1/calendars/freeze", map[string]any{"ranges": []map[string]string{
		{"start": t0.Format(time.RFC3339), "end": t0.Add(35 * time.Second).Format(time.RFC3339)}}}, http.StatusOK, &cal)
	require.Equal(t, &api.CalendarRejudged{Skipped: 2, Fired: 0}, cal.Rejudged, "t0+20s and t0+30s; t0 and t0+10s were released before")
	got := statuses()
	require.Equal(t, "SUCCEEDED//1", got[10*time.Second], "released before the edit: a fact")
	require.Equal(t, "SKIPPED/excluded by calendar freeze/0", got[20*time.Second])
	require.Equal(t, "SKIPPED/excluded by calendar freeze/0", got[30*time.Second])
	require.Equal(t, "SUCCEEDED//1", got[40*time.Second])

	st.JSON(t, http.MethodPut, "/api/v1/calendars/freeze", map[string]any{"ranges": []map[string]string{
		{"start": t0.Add(25 * time.Second).Format(time.RFC3339), "end": t0.Add(45 * time.Second).Format(time.RFC3339)}}}, http.StatusOK, &cal)
	require.Equal(t, &api.CalendarRejudged{Skipped: 1, Fired: 1}, cal.Rejudged, "t0+20s fires again, t0+40s is excluded now")
	got = statuses()
	require.Equal(t, "SUCCEEDED//1", got[20*time.Second])
	require.Equal(t, "SKIPPED/excluded by calendar freeze/0", got[30*time.Second])
	require.Equal(t, "SKIPPED/excluded by calendar freeze/0", got[40*time.Second])
	require.Len(t, got, 16, "one row per tick")

	release(t0.Add(time.Minute))
	var runs struct {
		Items []api.RunView `json:"items"`
	}
	st.JSON(t, http.MethodGet, "/api/v1/schedules/beat/runs?status=SKIPPED", nil, http.StatusOK, &runs)
	require.Len(t, runs.Items, 2)
	for _, r := range runs.Items {
		require.Equal(t, "excluded by calendar freeze", r.Reason)
		require.Nil(t, r.FiredAt)
	}
	var sched api.ScheduleView
	st.JSON(t, http.MethodGet, "/api/v1/schedules/beat", nil, http.StatusOK, &sched)
	require.Equal(t, &api.ScheduleCounter{Fired: 5, Skipped: 2}, sched.Counters)
	dup, err := st.Store.CountDuplicateTicks(ctx)
	require.NoError(t, err)
	require.Zero(t, dup)
}
