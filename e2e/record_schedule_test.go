package e2e

import (
	"context"
	"encoding/json"
	"fmt"
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

// recordTarget is the target of the recorded workflow-action schedules: a run lasts 3 s.
func recordTarget(ctx workflow.Context) error {
	return workflow.Sleep(ctx, 3*time.Second)
}

// startRecordTargets runs a worker for RecordTarget on a queue of its own.
func startRecordTargets(t *testing.T, st *teststack.Stack) string {
	queue := "record-targets-" + fmt.Sprint(time.Now().UnixNano())
	w := sdkworker.New(st.Temporal, queue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(recordTarget, workflow.RegisterOptions{Name: "RecordTarget"})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return queue
}

// TestScheduleCommandsHistoryReplays runs a workflow-action schedule (every 5 s, buffer_one,
// runs of 3 s) on the whole product from its first wake by the planner to its rest: ticks
// fired at their time, one buffered behind a running run, a manual trigger, a signal
// refused (bad input, recorded), a pause, a backfill run while paused with its range
// mirrored, a resume, and a pause again, after which the workflow rests once its last run
// ends. The history must replay against the current code. With TICKGATE_RECORD_HISTORIES=1
// it is written to workflows/testdata/schedule_commands.json, where TestReplayHistories
// keeps replaying it after later changes. (schedule_commands_concurrent_handlers.json is the
// same scenario recorded before schedule-one-writer: it replays that change's old branch.)
func TestScheduleCommandsHistoryReplays(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	queue := startRecordTargets(t, st)
	rec := &recorder{t: t, tc: st.Temporal, dir: recordDir(t), recorded: map[string]*historypb.History{}}
	ctx := context.Background()

	start := time.Now().UTC()
	st.CreateSchedule(t, map[string]any{
		"name": "commands", "spec": map[string]any{"interval": "5s"},
		"action":   map[string]any{"kind": "workflow", "workflow_type": "RecordTarget", "task_queue": queue},
		"policies": map[string]any{"overlap": "buffer_one"},
	})
	row, err := st.Store.GetSchedule(ctx, "commands")
	require.NoError(t, err)
	count := func(query string) int {
		var n int
		require.NoError(t, st.Store.Pool.QueryRow(ctx, query, row.ID).Scan(&n))
		return n
	}
	require.Eventually(t, func() bool {
		return count(`SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND status = 'SUCCEEDED'`) >= 2
	}, time.Minute, 50*time.Millisecond, "two ticks ran")
	st.Trigger(t, "commands")
	require.Eventually(t, func() bool {
		return count(`SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND trigger = 'manual' AND status = 'SUCCEEDED'`) >= 1
	}, time.Minute, 50*time.Millisecond, "the manual run ran")
	require.NoError(t, signalSchedule(ctx, st, "commands", workflows.ScheduleBackfill, rawJSON(`{"start":"yesterday"}`)))
	require.Eventually(t, func() bool { return count(`SELECT count(*) FROM schedule_refusals WHERE schedule_id = $1`) == 1 },
		20*time.Second, 50*time.Millisecond, "the bad signal was refused and recorded")
	st.Pause(t, "commands", "recorded")
	st.Backfill(t, "commands", map[string]any{
		"start": start.Add(-21 * time.Second).Format(time.RFC3339), "end": start.Add(-6 * time.Second).Format(time.RFC3339),
	})
	require.Eventually(t, func() bool {
		return count(`SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND trigger = 'backfill' AND status IN ('SUCCEEDED', 'SKIPPED')`) == 3
	}, time.Minute, 50*time.Millisecond, "the backfill ran while paused")
	st.Resume(t, "commands")
	require.Eventually(t, func() bool {
		return count(`SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND trigger = 'scheduled' AND fired_at > now() - interval '4 seconds'`) >= 1
	}, time.Minute, 50*time.Millisecond, "fires again after the resume")
	st.Pause(t, "commands", "recorded")

	id := workflows.ScheduleWorkflowID("commands")
	rec.waitRested(id) // paused, nothing in flight: it rests (after its linger)
	rec.write(id, workflows.ScheduleWorkflowType, "schedule_commands")
	r, err := worker.NewReplayer()
	require.NoError(t, err)
	require.NoError(t, r.ReplayWorkflowHistory(nil, rec.recorded["schedule_commands"]), "the commands' history does not replay")
}

// TestScheduleOneTimeReloadHistoryReplays records the reload that makes a schedule
// one-time with its at a moment past (the API accepts it within the catch-up window): an
// hourly event schedule's workflow, awake after a trigger, takes the update's refresh,
// counts ticks from just before the at (schedule-one-time-reload), fires that one tick at
// once and rests. (The branch before the change counted from the reload and never fired
// it.) The history must replay; with TICKGATE_RECORD_HISTORIES=1 it is written to
// workflows/testdata/schedule_one_time_reload.json, where the versions test finds the tick
// recorded after its at had passed.
func TestScheduleOneTimeReloadHistoryReplays(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	rec := &recorder{t: t, tc: st.Temporal, dir: recordDir(t), recorded: map[string]*historypb.History{}}
	ctx := context.Background()

	st.CreateSchedule(t, map[string]any{
		"name": "one-time-reload", "spec": map[string]any{"interval": "1h"},
		"action": map[string]any{"kind": "event", "topic": "record", "type": "tick"},
	})
	row, err := st.Store.GetSchedule(ctx, "one-time-reload")
	require.NoError(t, err)
	st.Trigger(t, "one-time-reload") // its workflow is awake
	at := time.Now().UTC().Add(-3 * time.Second).Truncate(time.Millisecond)
	st.PatchSchedule(t, "one-time-reload", map[string]any{
		"spec": map[string]any{"at": at.Format(time.RFC3339Nano)},
	})
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, st.Store.Pool.QueryRow(ctx, `SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND trigger = 'scheduled'
			AND status = 'SUCCEEDED' AND scheduled_at = $2`, row.ID, at).Scan(&n))
		return n == 1
	}, time.Minute, 100*time.Millisecond, "the one-time tick, already past at the reload, fired")

	id := workflows.ScheduleWorkflowID("one-time-reload")
	rec.waitRested(id)
	rec.write(id, workflows.ScheduleWorkflowType, "schedule_one_time_reload")
	r, err := worker.NewReplayer()
	require.NoError(t, err)
	require.NoError(t, r.ReplayWorkflowHistory(nil, rec.recorded["schedule_one_time_reload"]), "the reload's history does not replay")
}

// TestScheduleTakeoverHistoryReplays records a schedule at rest getting its workflow back
// while fires the planner armed are pending: an event schedule woken by a pause that
// retracts the armed fires and rests again; and an hourly workflow-action schedule whose
// fire the planner armed with a delayed start, woken by a trigger, which takes the armed run
// over, watches it and the manual run to their end and rests. Both histories must replay; with TICKGATE_RECORD_HISTORIES=1 they are written to
// workflows/testdata/schedule_takeover_pause.json and schedule_takeover_watch.json.
func TestScheduleTakeoverHistoryReplays(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	queue := startRecordTargets(t, st)
	rec := &recorder{t: t, tc: st.Temporal, dir: recordDir(t), recorded: map[string]*historypb.History{}}
	ctx := context.Background()
	r, err := worker.NewReplayer()
	require.NoError(t, err)

	st.CreateSchedule(t, map[string]any{
		"name": "takeover-pause", "spec": map[string]any{"interval": "2s"},
		"action": map[string]any{"kind": "event", "topic": "record", "type": "tick"},
	})
	paused, err := st.Store.GetSchedule(ctx, "takeover-pause")
	require.NoError(t, err)
	armed := func(id int64) int {
		var n int
		require.NoError(t, st.Store.Pool.QueryRow(ctx, `SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND armed AND visible_at > now()`, id).Scan(&n))
		return n
	}
	require.Eventually(t, func() bool { return armed(paused.ID) > 0 }, time.Minute, 50*time.Millisecond, "the planner armed its fires")
	st.Pause(t, "takeover-pause", "recorded")
	require.Zero(t, armed(paused.ID), "the pause retracted the fires the planner armed")
	id := workflows.ScheduleWorkflowID("takeover-pause")
	rec.waitRested(id)
	rec.write(id, workflows.ScheduleWorkflowType, "schedule_takeover_pause")
	require.NoError(t, r.ReplayWorkflowHistory(nil, rec.recorded["schedule_takeover_pause"]), "the pause's takeover does not replay")

	// An hourly fire a little more than a minute ahead: the planner arms it a minute ahead,
	// its target started with a delay. A trigger then wakes the schedule's workflow, which
	// takes the armed run over (its delayed start), runs the manual one, watches both to
	// their end and rests.
	fire := time.Now().UTC().Add(65 * time.Second).Truncate(time.Second)
	st.CreateSchedule(t, map[string]any{
		"name": "takeover-watch", "spec": map[string]any{"interval": "1h", "start_at": fire.Format(time.RFC3339)},
		"action":   map[string]any{"kind": "workflow", "workflow_type": "RecordTarget", "task_queue": queue},
		"policies": map[string]any{"overlap": "allow_all"},
	})
	watched, err := st.Store.GetSchedule(ctx, "takeover-watch")
	require.NoError(t, err)
	count := func(query string) int {
		var n int
		require.NoError(t, st.Store.Pool.QueryRow(ctx, query, watched.ID).Scan(&n))
		return n
	}
	require.Eventually(t, func() bool { return count(`SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND armed`) == 1 },
		time.Minute, 100*time.Millisecond, "the planner armed the fire")
	st.Trigger(t, "takeover-watch")
	require.Eventually(t, func() bool {
		return count(`SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND status = 'SUCCEEDED'`) == 2
	}, 3*time.Minute, 200*time.Millisecond, "the armed run and the manual one ran and were watched to their end")
	id = workflows.ScheduleWorkflowID("takeover-watch")
	rec.waitRested(id)
	rec.write(id, workflows.ScheduleWorkflowType, "schedule_takeover_watch")
	require.NoError(t, r.ReplayWorkflowHistory(nil, rec.recorded["schedule_takeover_watch"]), "the watch's takeover does not replay")

	planner := workflows.SchedulePlannerID(st.Config.TaskQueue, 0)
	rec.waitIdleOrRunningActivity(planner)
	rec.write(planner, workflows.SchedulePlannerType, "schedule_planner_round")
	require.NoError(t, r.ReplayWorkflowHistory(nil, rec.recorded["schedule_planner_round"]), "the planner's history does not replay")
}

// A replay must not depend on the time-zone data of the worker that replays: the tick a
// record mirrors as next_run_at is computed outside any side effect, so the workflow keeps
// the record's answer, not its own computation, to decide whether next_run_at needs writing
// again. A schedule's history is recorded, then replayed as a worker whose spec computes
// other instants would replay it — the definition it took over moved by a second, as new
// time-zone data moves a cron's local times. (Keeping the computed value, the replay wrote
// next_run_at once more than the run did: a nondeterminism error.)
func TestReplayKeepsTheNextFireTheRecordsAnswered(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	rec := &recorder{t: t, tc: st.Temporal, dir: t.TempDir(), recorded: map[string]*historypb.History{}}
	ctx := context.Background()

	// skip_if_successful: every tick is its workflow's, recorded at its time through RecordTick.
	st.CreateSchedule(t, map[string]any{
		"name": "other-zone-data", "spec": map[string]any{"interval": "2s"},
		"action":   map[string]any{"kind": "event", "topic": "record", "type": "tick"},
		"policies": map[string]any{"skip_if_successful": true},
	})
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
			!strings.Contains(string(details["data"].GetPayloads()[0].GetData()), `"ActivityType":"TakeOwnership"`) {
			continue
		}
		result := details["result"].GetPayloads()[0]
		var takeover map[string]any
		require.NoError(t, json.Unmarshal(result.GetData(), &takeover))
		spec := takeover["Definition"].(map[string]any)["Spec"].(map[string]any)
		startAt, err := time.Parse(time.RFC3339, spec["start_at"].(string))
		require.NoError(t, err)
		spec["start_at"] = startAt.Add(time.Second).Format(time.RFC3339)
		result.Data, err = json.Marshal(takeover)
		require.NoError(t, err)
		moved++
	}
	require.Positive(t, moved, "the history took its definition over")
	r, err := worker.NewReplayer()
	require.NoError(t, err)
	require.NoError(t, r.ReplayWorkflowHistory(nil, hist), "a replay whose spec computes other ticks decides as the run did")
}

// waitIdleOrRunningActivity waits until a workflow that lives in one long activity (a
// planner) has no workflow task in flight, so its history ends on a completed workflow task.
func (r *recorder) waitIdleOrRunningActivity(id string) {
	r.t.Helper()
	require.Eventually(r.t, func() bool {
		d, err := r.tc.DescribeWorkflowExecution(context.Background(), id, "")
		return err == nil && d.GetPendingWorkflowTask() == nil && len(d.GetPendingActivities()) == 1
	}, time.Minute, 100*time.Millisecond, "workflow %s never settled", id)
}

// waitRested waits for a schedule's workflow to rest: to end once nothing is in flight and
// its linger after the last command has passed.
func (r *recorder) waitRested(id string) {
	r.t.Helper()
	require.Eventually(r.t, func() bool {
		d, err := r.tc.DescribeWorkflowExecution(context.Background(), id, "")
		return err == nil && d.GetWorkflowExecutionInfo().GetCloseTime() != nil
	}, 3*time.Minute, 200*time.Millisecond, "workflow %s never rested", id)
}
