package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"

	"github.com/tickgate/tickgate/worker"
	"github.com/tickgate/tickgate/workflows"
)

// TestScheduleResidentHistoryReplays records a resident schedule's workflow
// (TICKGATE_SCHEDULES_RESIDENT=true, schedule-resident): an event schedule firing every 15 s,
// woken at its creation, rests in place and stays open while the planner arms its fires,
// looks again after one, takes a plain trigger signal at its timer (taking the schedule over
// from its row, the armed fires with it), fires the manual run, and rests in place again.
// The history must replay; with TICKGATE_RECORD_HISTORIES=1 it is written to
// workflows/testdata/schedule_resident.json, where the versions test finds the side effect
// that says the new branch ran.
func TestScheduleResidentHistoryReplays(t *testing.T) {
	t.Parallel()
	st := residentStack(t)
	rec := &recorder{t: t, tc: st.Temporal, dir: recordDir(t), recorded: map[string]*historypb.History{}}
	ctx := context.Background()
	const name = "resident-record"
	id := workflows.ScheduleWorkflowID(name)
	t.Cleanup(func() { _ = st.Temporal.TerminateWorkflow(context.Background(), id, "", "test over") })

	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{
		"name": name, "spec": map[string]any{"interval": "15s"},
		"action": map[string]any{"kind": "event", "topic": "record", "type": "tick"},
	}, http.StatusCreated, nil)
	var first workflows.ScheduleDescription
	require.Eventually(t, func() bool {
		row, err := st.Store.GetSchedule(ctx, name)
		require.NoError(t, err)
		if row.Owner != nil || row.PlanAction == nil {
			return false // not woken yet, or not rested
		}
		v, err := st.Temporal.QueryWorkflow(ctx, id, "", workflows.ScheduleDescribe)
		if err != nil {
			return false
		}
		require.NoError(t, v.Get(&first))
		return first.AtRest && first.NextFireAt != nil
	}, time.Minute, 200*time.Millisecond, "woken at its creation, it rested in place")
	// Its look after a fire: describe names a later fire.
	require.Eventually(t, func() bool {
		d := describeSchedule(t, st, name)
		return d.AtRest && d.NextFireAt != nil && d.NextFireAt.After(*first.NextFireAt)
	}, 2*time.Minute, 500*time.Millisecond, "it looked again after its first fire")

	require.NoError(t, st.Temporal.SignalWorkflow(ctx, id, "", workflows.ScheduleTrigger, workflows.TriggerRequest{RequestID: "record-1"}))
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, st.Store.Pool.QueryRow(ctx, `SELECT count(*) FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id
			WHERE s.name = $1 AND r.trigger = 'manual' AND r.status = 'SUCCEEDED'`, name).Scan(&n))
		return n == 1
	}, 30*time.Second, 100*time.Millisecond, "the plain signal fired the manual run")
	require.Eventually(t, func() bool {
		row, err := st.Store.GetSchedule(ctx, name)
		require.NoError(t, err)
		return row.Owner == nil && describeSchedule(t, st, name).AtRest
	}, 2*time.Minute, 500*time.Millisecond, "it rested in place again after its linger")

	rec.waitIdle(id)
	rec.write(id, workflows.ScheduleWorkflowType, "schedule_resident")
	r, err := worker.NewReplayer()
	require.NoError(t, err)
	require.NoError(t, r.ReplayWorkflowHistory(nil, rec.recorded["schedule_resident"]), "the resident run's history does not replay")
	var dup int
	require.NoError(t, st.Store.Pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT r.scheduled_at FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id
		WHERE s.name = $1 GROUP BY r.scheduled_at, r.trigger HAVING count(*) > 1) d`, name).Scan(&dup))
	require.Zero(t, dup, "no tick has two runs")
}
