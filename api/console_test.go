package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/metrics"
)

type schedulePage struct {
	Items      []api.ScheduleView `json:"items"`
	NextCursor string             `json:"next_cursor"`
}

// allSchedules walks a filtered schedules list to its end, 500 a page, and returns the names.
func allSchedules(t *testing.T, st *teststack.Stack, query string) []string {
	t.Helper()
	var names []string
	cursor := ""
	for {
		var page schedulePage
		st.JSON(t, http.MethodGet, "/api/v1/schedules?limit=500&"+query+"&cursor="+url.QueryEscape(cursor), nil, http.StatusOK, &page)
		for _, s := range page.Items {
			names = append(names, s.Name)
			if strings.Contains(query, "state=paused") {
				require.True(t, s.Paused, s.Name)
			}
			if strings.Contains(query, "state=active") {
				require.False(t, s.Paused, s.Name)
			}
		}
		if page.NextCursor == "" {
			return names
		}
		cursor = page.NextCursor
	}
}

// TestScheduleListFiltersTenThousand: with 10,000 schedules, GET /schedules filters by state
// and by a part of the name (case-insensitive), pages through each result in name order
// exactly once, and PostgreSQL answers the state filter from the schedules_by_state index
// (an index range scan that stops at the page's end), not by reading the table.
func TestScheduleListFiltersTenThousand(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	st.SeedSchedules(t, "fleet", 10000, 10)

	all := allSchedules(t, st, "")
	require.Len(t, all, 10000)
	require.True(t, sort.StringsAreSorted(all))
	paused := allSchedules(t, st, "state=paused")
	require.Len(t, paused, 1000)
	require.True(t, sort.StringsAreSorted(paused))
	require.Equal(t, "fleet-00010", paused[0])
	require.Len(t, allSchedules(t, st, "state=active"), 9000)

	var want, wantActive []string
	for i := 1; i <= 10000; i++ {
		name := fmt.Sprintf("fleet-%05d", i)
		if strings.Contains(name, "0042") {
			want = append(want, name)
			if i%10 != 0 {
				wantActive = append(wantActive, name)
			}
		}
	}
	require.Equal(t, want, allSchedules(t, st, "name=0042"))
	require.Equal(t, allSchedules(t, st, "name=fleet-0004"), allSchedules(t, st, "name=FLEET-0004"))
	require.Len(t, allSchedules(t, st, "name=FLEET-0004"), 10)
	require.Equal(t, wantActive, allSchedules(t, st, "state=ACTIVE&name=0042"))
	require.Empty(t, allSchedules(t, st, "name=nothing-like-it"))

	var p struct {
		Field string `json:"field"`
	}
	st.JSON(t, http.MethodGet, "/api/v1/schedules?state=sleeping", nil, http.StatusBadRequest, &p)
	require.Equal(t, "state", p.Field)
	st.JSON(t, http.MethodGet, "/api/v1/schedules?state=active,paused", nil, http.StatusBadRequest, &p)
	require.Equal(t, "state", p.Field)
	st.JSON(t, http.MethodGet, "/api/v1/schedules?name="+strings.Repeat("x", 129), nil, http.StatusBadRequest, &p)
	require.Equal(t, "name", p.Field)

	var plan strings.Builder
	rows, err := st.Store.Pool.Query(context.Background(),
		`EXPLAIN SELECT * FROM schedules WHERE completed_at IS NULL AND paused = true AND name > 'fleet-05000' AND ('' = '' OR strpos(lower(name), '') > 0) ORDER BY paused, name LIMIT 51`)
	require.NoError(t, err)
	for rows.Next() {
		var line string
		require.NoError(t, rows.Scan(&line))
		plan.WriteString(line + "\n")
	}
	require.NoError(t, rows.Err())
	require.Contains(t, plan.String(), "schedules_by_state", plan.String())
	require.NotContains(t, plan.String(), "Seq Scan", plan.String())
}

// TestSchedulePreview: POST /schedules/preview answers a valid schedule's stored spec, its
// description in words and its next 10 fire times; a bad field is the same 400 naming it as
// creating would give; nothing is ever created.
func TestSchedulePreview(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	var v api.PreviewView
	st.JSON(t, http.MethodPost, "/api/v1/schedules/preview", map[string]any{
		"spec": map[string]any{"cron": "0 * * * *", "timezone": "Europe/Paris"}, "action": map[string]any{"kind": "event", "topic": "t"},
	}, http.StatusOK, &v)
	require.Equal(t, "at minute 0 past every hour (Europe/Paris)", v.Description)
	require.Len(t, v.NextFireTimes, 10)
	for i, ft := range v.NextFireTimes {
		require.Zero(t, ft.Minute())
		require.True(t, ft.After(time.Now()))
		if i > 0 {
			require.Equal(t, time.Hour, ft.Sub(v.NextFireTimes[i-1]))
		}
	}
	require.Equal(t, "skip", string(v.Policies.Overlap))

	for body, field := range map[string]string{
		`{"spec": {"cron": "61 * * * *"}, "action": {"kind": "event", "topic": "t"}}`:                           "spec.cron",
		`{"spec": {"cron": "0 * * * *", "timezone": "Mars/Base"}, "action": {"kind": "event", "topic": "t"}}`:   "spec.timezone",
		`{"spec": {"interval": "-5s"}, "action": {"kind": "event", "topic": "t"}}`:                              "spec.interval",
		`{"name": "bad name", "spec": {"interval": "5s"}, "action": {"kind": "event", "topic": "t"}}`:           "name",
		`{"spec": {"interval": "5s"}, "action": {"kind": "workflow"}}`:                                          "action.workflow_type",
		`{"spec": {"interval": "5s"}, "action": {"kind": "event", "topic": "t"}, "policies": {"overlap": "x"}}`: "policies.overlap",
	} {
		var p struct {
			Field string `json:"field"`
		}
		st.JSON(t, http.MethodPost, "/api/v1/schedules/preview", body, http.StatusBadRequest, &p)
		require.Equal(t, field, p.Field, body)
	}
	var page schedulePage
	st.JSON(t, http.MethodGet, "/api/v1/schedules", nil, http.StatusOK, &page)
	require.Empty(t, page.Items)
}

// seedRuns records runs of a schedule straight in SQL: each tick ago before now, with its
// trigger, status and lateness (negative: not fired).
func seedRuns(t *testing.T, st *teststack.Stack, schedule string, runs []seededRun) {
	t.Helper()
	for i, r := range runs {
		at := time.Now().UTC().Add(-r.ago)
		var fired, finished *time.Time
		if r.late >= 0 {
			f := at.Add(r.late)
			fired = &f
		}
		if r.status != "RUNNING" {
			f := at.Add(max(r.late, 0))
			finished = &f
		}
		_, err := st.Store.Pool.Exec(context.Background(), `INSERT INTO schedule_runs (schedule_id, scheduled_at, fired_at, trigger, status, reason, idempotency_key, finished_at)
			SELECT id, $2, $3, $4, $5, $6, $7, $8 FROM schedules WHERE name = $1`,
			schedule, at, fired, r.trigger, r.status, r.reason, fmt.Sprintf("%s-seed-%d", schedule, i), finished)
		require.NoError(t, err)
	}
}

type seededRun struct {
	ago     time.Duration
	trigger string
	status  string
	reason  string
	late    time.Duration
}

// TestRunStatisticsOverAWindow: GET /schedules/{name}/stats and GET /stats/overview count
// a window's runs by outcome in PostgreSQL, with lateness quantiles of the scheduled and
// catch-up fires only, per bucket and in total; GET /runs lists what each figure counts.
func TestRunStatisticsOverAWindow(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	st.SeedSchedules(t, "stats", 2, 2) // stats-00001 active, stats-00002 paused
	seedRuns(t, st, "stats-00001", []seededRun{
		{ago: 50 * time.Minute, trigger: "scheduled", status: "SUCCEEDED", late: 100 * time.Millisecond},
		{ago: 40 * time.Minute, trigger: "scheduled", status: "SUCCEEDED", late: 200 * time.Millisecond},
		{ago: 30 * time.Minute, trigger: "catchup", status: "FAILED", late: 2 * time.Second},
		{ago: 20 * time.Minute, trigger: "scheduled", status: "MISSED", reason: "tickgate was down", late: -1},
		{ago: 10 * time.Minute, trigger: "scheduled", status: "SKIPPED", reason: "overlap skip", late: -1},
		{ago: 5 * time.Minute, trigger: "backfill", status: "SUCCEEDED", late: 5 * time.Hour},
		{ago: 3 * time.Hour, trigger: "scheduled", status: "SUCCEEDED", late: 9 * time.Second}, // outside the window
	})
	seedRuns(t, st, "stats-00002", []seededRun{
		{ago: 15 * time.Minute, trigger: "manual", status: "RUNNING", late: 0},
	})

	var s api.ScheduleStatsView
	st.JSON(t, http.MethodGet, "/api/v1/schedules/stats-00001/stats?window=1h", nil, http.StatusOK, &s)
	require.Equal(t, "stats-00001", s.Schedule)
	require.Equal(t, "1h0m0s", s.Window)
	require.Equal(t, "1m0s", s.Bucket)
	tot := s.Totals
	require.Equal(t, api.RunCounts{Ticks: 6, Fired: 4, Late: 1, Missed: 1, Skipped: 1, Failed: 1, Lateness: tot.Lateness}, tot)
	require.EqualValues(t, 3, tot.Lateness.Samples) // the backfill has no lateness
	require.InDelta(t, 0.2, *tot.Lateness.P50Seconds, 1e-6)
	require.InDelta(t, 2.0, *tot.Lateness.MaxSeconds, 1e-6)
	require.InDelta(t, 0.2+0.8*1.8, *tot.Lateness.P90Seconds, 1e-6) // percentile_cont: 80% of the way from 0.2 to 2.0
	require.GreaterOrEqual(t, len(s.Series), 60)
	var ticks, samples int64
	for i, b := range s.Series {
		ticks += b.Ticks
		samples += b.Lateness.Samples
		if b.Lateness.Samples == 0 {
			require.Nil(t, b.Lateness.P99Seconds)
		}
		if i > 0 {
			require.Equal(t, time.Minute, b.T.Sub(s.Series[i-1].T))
		}
	}
	require.EqualValues(t, tot.Ticks, ticks)
	require.EqualValues(t, 3, samples)

	var o api.OverviewView
	st.JSON(t, http.MethodGet, "/api/v1/stats/overview", nil, http.StatusOK, &o)
	require.EqualValues(t, 7, o.Totals.Ticks)
	require.EqualValues(t, 1, o.Totals.Running)
	require.Equal(t, api.ScheduleStates{Total: 2, Active: 1, Paused: 1}, o.Schedules)
	require.Zero(t, o.Rollouts.Count)
	require.Nil(t, o.DeviceTask)
	st.JSON(t, http.MethodGet, "/api/v1/stats/overview?window=4h", nil, http.StatusOK, &o)
	require.EqualValues(t, 8, o.Totals.Ticks)
	require.Equal(t, "5m0s", o.Bucket)

	type runsPage struct {
		Items []api.ScheduleRunView `json:"items"`
	}
	for query, want := range map[string][]string{
		"status=MISSED":                     {"stats-00001 MISSED tickgate was down"},
		"status=skipped,failed":             {"stats-00001 SKIPPED overlap skip", "stats-00001 FAILED "},
		"late_over=1s":                      {"stats-00001 FAILED "},
		"late_over=1s&window=4h":            {"stats-00001 SUCCEEDED ", "stats-00001 FAILED "}, // newest recorded first
		"trigger=manual":                    {"stats-00002 RUNNING "},
		"status=SUCCEEDED&trigger=backfill": {"stats-00001 SUCCEEDED "},
	} {
		var page runsPage
		st.JSON(t, http.MethodGet, "/api/v1/runs?"+query, nil, http.StatusOK, &page)
		var got []string
		for _, r := range page.Items {
			got = append(got, r.Schedule+" "+string(r.Status)+" "+r.Reason)
		}
		require.Equal(t, want, got, query)
	}
	var p struct {
		Field string `json:"field"`
	}
	for query, field := range map[string]string{
		"/api/v1/stats/overview?window=30s":               "window",
		"/api/v1/stats/overview?window=9d":                "window",
		"/api/v1/schedules/stats-00001/stats?window=x":    "window",
		"/api/v1/runs?late_over=soon":                     "late_over",
		"/api/v1/runs?status=LOST":                        "status",
		"/api/v1/schedules/stats-00001/runs?trigger=cron": "trigger",
	} {
		st.JSON(t, http.MethodGet, query, nil, http.StatusBadRequest, &p)
		require.Equal(t, field, p.Field, query)
	}
	st.JSON(t, http.MethodGet, "/api/v1/schedules/nope/stats", nil, http.StatusNotFound, nil)

	// A schedule's runs filtered by status and trigger.
	var runs struct {
		Items []api.RunView `json:"items"`
	}
	st.JSON(t, http.MethodGet, "/api/v1/schedules/stats-00001/runs?status=SUCCEEDED&trigger=scheduled", nil, http.StatusOK, &runs)
	require.Len(t, runs.Items, 3)
	for _, r := range runs.Items {
		require.Equal(t, "SUCCEEDED", string(r.Status))
		require.Equal(t, "scheduled", string(r.Trigger))
	}
}

// TestPCSlotGrid: GET /pcs/{name}/slots lists each of the PC's device_capacity slots with
// the execution holding it (device, attempt, status, timeout once sent), null when free.
func TestPCSlotGrid(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	st.JSON(t, http.MethodPost, "/api/v1/pcs", map[string]any{"name": "grid-pc", "device_capacity": 3}, http.StatusCreated, nil)
	for _, d := range []string{"grid-d1", "grid-d2"} {
		st.JSON(t, http.MethodPost, "/api/v1/devices", map[string]any{"pc": "grid-pc", "serial": d}, http.StatusCreated, nil)
	}
	st.JSON(t, http.MethodPost, "/api/v1/tasks", map[string]any{"payload": map[string]any{"cmd": "flash"}}, http.StatusCreated, nil)
	var v api.PCSlotsView
	require.Eventually(t, func() bool {
		st.JSON(t, http.MethodGet, "/api/v1/pcs/grid-pc/slots", nil, http.StatusOK, &v)
		return v.Running == 2
	}, 30*time.Second, 50*time.Millisecond)
	require.Len(t, v.Slots, 3)
	require.EqualValues(t, 2, v.Target)
	devices := map[string]bool{}
	for i, s := range v.Slots {
		require.EqualValues(t, i+1, s.Slot)
		if i < 2 {
			require.NotNil(t, s.Execution, "slot %d", s.Slot)
			require.EqualValues(t, 1, s.Execution.Attempt)
			require.EqualValues(t, s.Slot, *s.Execution.Slot)
			devices[s.Execution.Device] = true
		} else {
			require.Nil(t, s.Execution)
		}
	}
	require.Equal(t, map[string]bool{"grid-d1": true, "grid-d2": true}, devices)

	agent := st.As(st.NewToken(t, "agent", "grid-pc"))
	var claimed struct {
		Items []api.DeviceExecutionDTO `json:"items"`
	}
	agent.JSON(t, http.MethodPost, "/api/v1/agent/pcs/grid-pc/claim", map[string]any{"max": 1}, http.StatusOK, &claimed)
	require.Len(t, claimed.Items, 1)
	st.JSON(t, http.MethodGet, "/api/v1/pcs/grid-pc/slots", nil, http.StatusOK, &v)
	sent := v.Slots[*claimed.Items[0].Slot-1].Execution
	require.Equal(t, "SENT", string(sent.Status))
	require.NotNil(t, sent.TimeoutAt)
	require.True(t, sent.TimeoutAt.After(v.Now))
	st.JSON(t, http.MethodGet, "/api/v1/pcs/no-such-pc/slots", nil, http.StatusNotFound, nil)
}

// TestPerScheduleMetrics: a schedule that asks for series of its own (metrics: true, at
// create or by PATCH) gets tickgate_schedule_*_total counters and a lateness histogram
// labelled with its name; one that does not, none; past the cap an opt-in is a 409 naming
// metrics that changes nothing, and a scrape never reports more than the cap.
func TestPerScheduleMetrics(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	var created api.ScheduleView
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{
		"name": "watched", "spec": map[string]any{"interval": "1h"}, "metrics": true,
		"action": map[string]any{"kind": "event", "topic": "t", "type": "x"},
	}, http.StatusCreated, &created)
	require.True(t, created.Metrics)
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{
		"name": "unwatched", "spec": map[string]any{"interval": "1h"},
		"action": map[string]any{"kind": "event", "topic": "t", "type": "x"},
	}, http.StatusCreated, nil)
	seedRuns(t, st, "watched", []seededRun{
		{ago: time.Hour, trigger: "scheduled", status: "SUCCEEDED", late: 20 * time.Millisecond},
		{ago: 2 * time.Hour, trigger: "scheduled", status: "FAILED", late: 3 * time.Second},
		{ago: 3 * time.Hour, trigger: "scheduled", status: "MISSED", reason: "down", late: -1},
	})
	_, err := st.Store.Pool.Exec(context.Background(), `UPDATE schedules SET fired_count = 2, missed_count = 1 WHERE name = 'watched'`)
	require.NoError(t, err)

	scrape := func() string {
		status, body := st.Do(t, http.MethodGet, "/metrics", nil)
		require.Equal(t, http.StatusOK, status)
		return string(body)
	}
	text := scrape()
	for _, want := range []string{
		`tickgate_schedule_fired_total{schedule="watched"} 2`,
		`tickgate_schedule_missed_total{schedule="watched"} 1`,
		`tickgate_schedule_skipped_total{schedule="watched"} 0`,
		`tickgate_schedule_failed_total{schedule="watched"} 1`,
		`tickgate_schedule_lateness_seconds_bucket{schedule="watched",le="0.025"} 1`,
		`tickgate_schedule_lateness_seconds_bucket{schedule="watched",le="2.5"} 1`,
		`tickgate_schedule_lateness_seconds_bucket{schedule="watched",le="5"} 2`,
		`tickgate_schedule_lateness_seconds_count{schedule="watched"} 2`,
		`tickgate_schedule_series_errors 0`,
	} {
		require.Contains(t, text, want)
	}
	require.NotContains(t, text, `schedule="unwatched"`)

	// Opt in by PATCH, then fill the cap.
	var patched api.ScheduleView
	st.JSON(t, http.MethodPatch, "/api/v1/schedules/unwatched", map[string]any{"metrics": true}, http.StatusOK, &patched)
	require.True(t, patched.Metrics)
	st.SeedSchedules(t, "many", metrics.MaxScheduleSeries, 0)
	_, err = st.Store.Pool.Exec(context.Background(), `UPDATE schedules SET metrics = true WHERE name LIKE 'many-%' AND name <= $1`,
		fmt.Sprintf("many-%05d", metrics.MaxScheduleSeries-2))
	require.NoError(t, err)
	var p struct {
		Field string `json:"field"`
	}
	st.JSON(t, http.MethodPatch, fmt.Sprintf("/api/v1/schedules/many-%05d", metrics.MaxScheduleSeries), map[string]any{"metrics": true}, http.StatusConflict, &p)
	require.Equal(t, "metrics", p.Field)
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{
		"name": "one-too-many", "spec": map[string]any{"interval": "1h"}, "metrics": true,
		"action": map[string]any{"kind": "event", "topic": "t", "type": "x"},
	}, http.StatusConflict, &p)
	require.Equal(t, "metrics", p.Field)
	var after api.ScheduleView
	st.JSON(t, http.MethodGet, fmt.Sprintf("/api/v1/schedules/many-%05d", metrics.MaxScheduleSeries), nil, http.StatusOK, &after)
	require.False(t, after.Metrics)
	require.EqualValues(t, 1, after.Version, "a refused opt-in changes nothing")
	st.JSON(t, http.MethodGet, "/api/v1/schedules/one-too-many", nil, http.StatusNotFound, nil)

	// Even past the cap in the table (written by hand), a scrape reports at most the cap.
	_, err = st.Store.Pool.Exec(context.Background(), `UPDATE schedules SET metrics = true`)
	require.NoError(t, err)
	require.Equal(t, metrics.MaxScheduleSeries, strings.Count(scrape(), "tickgate_schedule_fired_total{"))
	// Opting out is always allowed.
	st.JSON(t, http.MethodPatch, "/api/v1/schedules/watched", map[string]any{"metrics": false}, http.StatusOK, &patched)
	require.False(t, patched.Metrics)
}

// TestUpcomingFiresFollowAReschedule: after a reschedule, the schedule's upcoming fires
// start at the rescheduled time and continue with the spec's ticks after it (the natural
// ticks before it are replaced), as its workflow will fire them.
func TestUpcomingFiresFollowAReschedule(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	start := time.Now().UTC().Truncate(time.Second)
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{
		"name": "moved", "spec": map[string]any{"interval": "1h", "start_at": start.Format(time.RFC3339)},
		"action": map[string]any{"kind": "event", "topic": "t", "type": "x"},
	}, http.StatusCreated, nil)
	var v api.ScheduleView
	st.JSON(t, http.MethodGet, "/api/v1/schedules/moved", nil, http.StatusOK, &v)
	require.Len(t, v.NextFireTimes, 10)
	require.True(t, v.NextFireTimes[0].Equal(start.Add(time.Hour)), "%v", v.NextFireTimes)

	moved := start.Add(2*time.Hour + 17*time.Minute)
	st.JSON(t, http.MethodPost, "/api/v1/schedules/moved/reschedule", map[string]any{"next_run_at": moved.Format(time.RFC3339)}, http.StatusOK, nil)
	st.JSON(t, http.MethodGet, "/api/v1/schedules/moved", nil, http.StatusOK, &v)
	require.Len(t, v.NextFireTimes, 10)
	require.True(t, v.NextFireTimes[0].Equal(moved), "%v", v.NextFireTimes)
	require.True(t, v.NextFireTimes[1].Equal(start.Add(3*time.Hour)), "%v", v.NextFireTimes)
	require.True(t, v.NextRunAt.Equal(moved))
}
