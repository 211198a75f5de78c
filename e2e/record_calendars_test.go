package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"

	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/worker"
	"github.com/tickgate/tickgate/workflows"
)

// TestScheduleCalendarsHistoryReplays records a schedule's workflow deciding ticks against a
// calendar, then made one-time by an update: a workflow-action schedule every 2 s excluding
// a calendar (so its workflow, woken by the planner, decides each tick at its time: asks
// whether the calendar excludes it, records the excluded ones SKIPPED), an update to a
// one-time spec (the reload counts from just before its at), its one fire, and its rest with
// its completion planned. The history must replay; with TICKGATE_RECORD_HISTORIES=1 it is
// written to workflows/testdata/schedule_calendars.json, which shows the change
// schedule-calendars taken (its ExcludedBy local activities). (Its at is still to come at the
// reload, so both branches of schedule-one-time-reload fire it alike: the history that shows
// that change taken is TestScheduleOneTimeReloadHistoryReplays'.)
func TestScheduleCalendarsHistoryReplays(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	queue := startRecordTargets(t, st)
	rec := &recorder{t: t, tc: st.Temporal, dir: recordDir(t), recorded: map[string]*historypb.History{}}
	ctx := context.Background()

	now := time.Now().UTC()
	st.CreateCalendar(t, map[string]any{"name": "recorded-freeze", "ranges": []map[string]string{
		{"start": now.Add(5 * time.Second).Format(time.RFC3339), "end": now.Add(9 * time.Second).Format(time.RFC3339)}}})
	action := map[string]any{"kind": "workflow", "workflow_type": "RecordTarget", "task_queue": queue}
	st.CreateSchedule(t, map[string]any{
		"name": "calendars", "spec": map[string]any{"interval": "2s", "exclude_calendars": []string{"recorded-freeze"}},
		"action": action, "policies": map[string]any{"overlap": "allow_all"},
	})
	row, err := st.Store.GetSchedule(ctx, "calendars")
	require.NoError(t, err)
	count := func(query string) int {
		var n int
		require.NoError(t, st.Store.Pool.QueryRow(ctx, query, row.ID).Scan(&n))
		return n
	}
	require.Eventually(t, func() bool {
		return count(`SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND status = 'SKIPPED' AND reason = 'excluded by calendar recorded-freeze'`) >= 1 &&
			count(`SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND status = 'SUCCEEDED' AND scheduled_at > now() - interval '20 seconds'`) >= 2
	}, time.Minute, 100*time.Millisecond, "ticks fired, and the excluded ones were skipped")

	at := time.Now().UTC().Add(3 * time.Second)
	st.PatchSchedule(t, "calendars", map[string]any{
		"spec": map[string]any{"at": at.Format(time.RFC3339Nano), "exclude_calendars": []string{"recorded-freeze"}},
	})
	oneTime := func() int {
		var n int
		require.NoError(t, st.Store.Pool.QueryRow(ctx, `SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND status = 'SUCCEEDED'
			AND scheduled_at BETWEEN $2 AND $3`, row.ID, at.Add(-time.Millisecond), at.Add(time.Millisecond)).Scan(&n))
		return n
	}
	if !assert.Eventually(t, func() bool { return oneTime() == 1 }, time.Minute, 100*time.Millisecond, "the one-time fire ran") {
		rows, err := st.Store.Pool.Query(ctx, `SELECT scheduled_at::text || ' ' || status || ' ' || trigger || ' ' || reason FROM schedule_runs WHERE schedule_id = $1 ORDER BY scheduled_at`, row.ID)
		require.NoError(t, err)
		for rows.Next() {
			var l string
			require.NoError(t, rows.Scan(&l))
			t.Log(l)
		}
		rows.Close()
		var owner, spec, plan string
		require.NoError(t, st.Store.Pool.QueryRow(ctx, `SELECT COALESCE(owner,'-'), spec::text, COALESCE(plan_action,'-') || COALESCE(plan_at::text,'') || ' wm=' || COALESCE(watermark::text, '') FROM schedules WHERE id = $1`, row.ID).Scan(&owner, &spec, &plan))
		t.Fatalf("at %s owner %s spec %s plan %s", at.Format(time.RFC3339Nano), owner, spec, plan)
	}

	id := workflows.ScheduleWorkflowID("calendars")
	rec.waitRested(id) // its one tick done, nothing in flight: it rests (after its linger)
	rec.write(id, workflows.ScheduleWorkflowType, "schedule_calendars")
	r, err := worker.NewReplayer()
	require.NoError(t, err)
	require.NoError(t, r.ReplayWorkflowHistory(nil, rec.recorded["schedule_calendars"]), "the calendars' history does not replay")
	require.Eventually(t, func() bool {
		var v struct {
			State string `json:"state"`
		}
		st.GetSchedule(t, "calendars", &v)
		return v.State == "completed"
	}, time.Minute, 200*time.Millisecond, "the planner completed it once it rested")
}
