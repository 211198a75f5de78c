package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/worker"
	"github.com/tickgate/tickgate/workflows"
)

// TestArmedWindowHistoryReplays runs an every-second event schedule on the whole product
// until it has armed two windows of ticks, pauses it (retracting the armed fires not yet
// due), and replays the schedule workflow's history against the current code. With
// TICKGATE_RECORD_HISTORIES=1 it also writes the history to
// workflows/testdata/schedule_armed_windows_by_load.json (schedule_armed_windows.json is the
// same run before arm-span-by-load), where TestReplayHistories keeps replaying
// it after later changes.
func TestArmedWindowHistoryReplays(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	rec := &recorder{t: t, tc: st.Temporal, dir: recordDir(t), recorded: map[string]*historypb.History{}}
	ctx := context.Background()

	created := time.Now()
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{
		"name": "armed-windows", "spec": map[string]any{"interval": "1s"},
		"action": map[string]any{"kind": "event", "topic": "record", "type": "tick"},
	}, http.StatusCreated, nil)
	row, err := st.Store.GetSchedule(ctx, "armed-windows")
	require.NoError(t, err)
	// The first window holds the ticks up to ~30 s after the creation; a tick beyond that
	// was armed by a second window.
	require.Eventually(t, func() bool {
		var last time.Time
		err := st.Store.Pool.QueryRow(ctx, `SELECT COALESCE(max(scheduled_at), '-infinity') FROM schedule_runs WHERE schedule_id = $1`, row.ID).Scan(&last)
		return err == nil && last.After(created.Add(35*time.Second))
	}, time.Minute, 200*time.Millisecond, "a second window was armed")
	st.JSON(t, http.MethodPost, "/api/v1/schedules/armed-windows/pause", map[string]any{"note": "recorded"}, http.StatusOK, nil)
	var armedAhead int
	require.NoError(t, st.Store.Pool.QueryRow(ctx, `SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND armed AND visible_at > now()`, row.ID).Scan(&armedAhead))
	require.Zero(t, armedAhead, "the pause retracted the armed fires not yet due")

	id := workflows.ScheduleWorkflowID("armed-windows")
	rec.waitIdle(id)
	rec.write(id, workflows.ScheduleWorkflowType, "schedule_armed_windows_by_load")
	r, err := worker.NewReplayer()
	require.NoError(t, err)
	require.NoError(t, r.ReplayWorkflowHistory(nil, rec.recorded["schedule_armed_windows_by_load"]), "the armed windows' history does not replay")
}

// A replay must not depend on the time-zone data of the worker that replays: the tick a
// record mirrors as next_run_at is computed outside any side effect, so the workflow keeps
// the record's answer, not its own computation, to decide whether next_run_at needs writing
// again. A schedule's history is recorded, then replayed as a worker whose spec computes
// other instants would replay it — the definition it loaded moved by a second, as new
// time-zone data moves a cron's local times. (Keeping the computed value, the replay wrote
// next_run_at once more than the run did: a nondeterminism error.)
func TestReplayKeepsTheNextFireTheRecordsAnswered(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	rec := &recorder{t: t, tc: st.Temporal, dir: t.TempDir(), recorded: map[string]*historypb.History{}}
	ctx := context.Background()

	// skip_if_successful: every tick is recorded at its time, through RecordTick.
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{
		"name": "other-zone-data", "spec": map[string]any{"interval": "2s"},
		"action":   map[string]any{"kind": "event", "topic": "record", "type": "tick"},
		"policies": map[string]any{"skip_if_successful": true},
	}, http.StatusCreated, nil)
	row, err := st.Store.GetSchedule(ctx, "other-zone-data")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		runs, err := st.Store.ListRuns(ctx, row.ID, 0, 10)
		return err == nil && len(runs) >= 3
	}, time.Minute, 100*time.Millisecond, "three ticks recorded")
	id := workflows.ScheduleWorkflowID("other-zone-data")
	rec.waitIdle(id)
	rec.write(id, workflows.ScheduleWorkflowType, "schedule_other_zone_data")
	hist := rec.recorded["schedule_other_zone_data"]

	moved := 0
	for _, ev := range hist.GetEvents() {
		marker := ev.GetMarkerRecordedEventAttributes()
		details := marker.GetDetails()
		if marker.GetMarkerName() != "LocalActivity" || len(details["data"].GetPayloads()) == 0 ||
			!strings.Contains(string(details["data"].GetPayloads()[0].GetData()), `"ActivityType":"LoadSchedule"`) {
			continue
		}
		result := details["result"].GetPayloads()[0]
		var def map[string]any
		require.NoError(t, json.Unmarshal(result.GetData(), &def))
		spec := def["Spec"].(map[string]any)
		startAt, err := time.Parse(time.RFC3339, spec["start_at"].(string))
		require.NoError(t, err)
		spec["start_at"] = startAt.Add(time.Second).Format(time.RFC3339)
		result.Data, err = json.Marshal(def)
		require.NoError(t, err)
		moved++
	}
	require.Positive(t, moved, "the history loaded its definition")
	r, err := worker.NewReplayer()
	require.NoError(t, err)
	require.NoError(t, r.ReplayWorkflowHistory(nil, hist), "a replay whose spec computes other ticks decides as the run did")
}

// recordTarget is the target of the recorded workflow-action schedule: a run lasts 3 s.
func recordTarget(ctx workflow.Context) error {
	return workflow.Sleep(ctx, 3*time.Second)
}

// TestArmedStartsHistoryReplays runs a workflow-action schedule (every 5 s, buffer_one, runs
// of 3 s) on the whole product through what issue 19 added to the schedule workflow: its
// ticks are armed by starting their targets ahead (nothing runs when each is armed); a
// trigger retracts the armed tick (buffer_one: the trigger's run is one the tick's decision
// did not count on) and the next tick waits BUFFERED behind it; a pause stops the armed
// start; a backfill runs while paused, its pending range mirrored; a resume. The history
// must replay against the current code. With TICKGATE_RECORD_HISTORIES=1 it is also
// written to workflows/testdata/schedule_armed_starts.json, where TestReplayHistories keeps
// replaying it after later changes.
func TestArmedStartsHistoryReplays(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	queue := "record-targets-" + fmt.Sprint(time.Now().UnixNano())
	w := sdkworker.New(st.Temporal, queue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(recordTarget, workflow.RegisterOptions{Name: "RecordTarget"})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	rec := &recorder{t: t, tc: st.Temporal, dir: recordDir(t), recorded: map[string]*historypb.History{}}
	ctx := context.Background()

	// Anchored by default at its creation, the interval's grid extends backwards, where the
	// backfill below fills three ticks.
	start := time.Now().UTC()
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{
		"name": "armed-starts", "spec": map[string]any{"interval": "5s"},
		"action":   map[string]any{"kind": "workflow", "workflow_type": "RecordTarget", "task_queue": queue},
		"policies": map[string]any{"overlap": "buffer_one"},
	}, http.StatusCreated, nil)
	row, err := st.Store.GetSchedule(ctx, "armed-starts")
	require.NoError(t, err)
	count := func(query string) int {
		var n int
		require.NoError(t, st.Store.Pool.QueryRow(ctx, query, row.ID).Scan(&n))
		return n
	}
	require.Eventually(t, func() bool {
		return count(`SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND status = 'SUCCEEDED'`) >= 2 &&
			count(`SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND armed`) == 1
	}, time.Minute, 50*time.Millisecond, "two ticks ran, the next is armed")
	st.JSON(t, http.MethodPost, "/api/v1/schedules/armed-starts/trigger", nil, http.StatusOK, nil)
	require.Eventually(t, func() bool {
		return count(`SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND retracted_at IS NOT NULL`) >= 1
	}, 20*time.Second, 50*time.Millisecond, "the trigger retracted the armed tick")
	require.Eventually(t, func() bool {
		return count(`SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND armed`) == 1
	}, time.Minute, 50*time.Millisecond, "a tick is armed again")
	st.JSON(t, http.MethodPost, "/api/v1/schedules/armed-starts/pause", map[string]any{"note": "recorded"}, http.StatusOK, nil)
	require.Zero(t, count(`SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND armed AND visible_at > now()`),
		"the pause retracted the armed start")
	st.JSON(t, http.MethodPost, "/api/v1/schedules/armed-starts/backfill", map[string]any{
		"start": start.Add(-21 * time.Second).Format(time.RFC3339), "end": start.Add(-6 * time.Second).Format(time.RFC3339),
	}, http.StatusAccepted, nil)
	require.Eventually(t, func() bool {
		return count(`SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND trigger = 'backfill' AND status IN ('SUCCEEDED', 'SKIPPED')`) == 3
	}, time.Minute, 50*time.Millisecond, "the backfill ran while paused")
	st.JSON(t, http.MethodPost, "/api/v1/schedules/armed-starts/resume", nil, http.StatusOK, nil)
	require.Eventually(t, func() bool {
		return count(`SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND armed`) == 1
	}, time.Minute, 50*time.Millisecond, "armed again after the resume")
	// Paused again, nothing is left in flight once the last run ends: the history then ends
	// on an idle workflow.
	st.JSON(t, http.MethodPost, "/api/v1/schedules/armed-starts/pause", map[string]any{"note": "recorded"}, http.StatusOK, nil)
	require.Eventually(t, func() bool {
		return count(`SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND status IN ('RUNNING', 'BUFFERED')`) == 0
	}, time.Minute, 50*time.Millisecond, "every run ended")

	id := workflows.ScheduleWorkflowID("armed-starts")
	rec.waitIdle(id)
	rec.write(id, workflows.ScheduleWorkflowType, "schedule_armed_starts")
	r, err := worker.NewReplayer()
	require.NoError(t, err)
	require.NoError(t, r.ReplayWorkflowHistory(nil, rec.recorded["schedule_armed_starts"]), "the armed starts' history does not replay")

	// Under allow_all a run's watch begins after its start, with the schedule's next round.
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{
		"name": "armed-starts-all", "spec": map[string]any{"interval": "5s"},
		"action":   map[string]any{"kind": "workflow", "workflow_type": "RecordTarget", "task_queue": queue},
		"policies": map[string]any{"overlap": "allow_all"},
	}, http.StatusCreated, nil)
	all, err := st.Store.GetSchedule(ctx, "armed-starts-all")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, st.Store.Pool.QueryRow(ctx, `SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND status = 'SUCCEEDED'`, all.ID).Scan(&n))
		return n >= 3
	}, time.Minute, 50*time.Millisecond, "three runs watched to their end")
	st.JSON(t, http.MethodPost, "/api/v1/schedules/armed-starts-all/pause", map[string]any{"note": "recorded"}, http.StatusOK, nil)
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, st.Store.Pool.QueryRow(ctx, `SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND status = 'RUNNING'`, all.ID).Scan(&n))
		return n == 0
	}, time.Minute, 50*time.Millisecond, "every run ended")
	id = workflows.ScheduleWorkflowID("armed-starts-all")
	rec.waitIdle(id)
	rec.write(id, workflows.ScheduleWorkflowType, "schedule_armed_starts_allow_all")
	require.NoError(t, r.ReplayWorkflowHistory(nil, rec.recorded["schedule_armed_starts_allow_all"]), "the deferred watches' history does not replay")
}
