package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// TestSchedulePatchIsOptimisticAndLive: PATCH with a stale version is 412 and changes
// nothing; a fresh one applies at once (next fire recomputed by the workflow).
func TestSchedulePatchIsOptimisticAndLive(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	var created api.ScheduleView
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{
		"name": "patched", "spec": map[string]any{"cron": "0 0 1 1 *"},
		"action": map[string]any{"kind": "event", "topic": "t", "type": "x"},
	}, http.StatusCreated, &created)
	require.Equal(t, int64(1), created.Version)

	var updated api.ScheduleView
	st.JSON(t, http.MethodPatch, "/api/v1/schedules/patched", map[string]any{
		"version": 1, "spec": map[string]any{"interval": "1s"}, "policies": map[string]any{"overlap": "allow_all"},
	}, http.StatusOK, &updated)
	require.Equal(t, int64(2), updated.Version)
	require.Equal(t, domain.OverlapAllowAll, updated.Policies.Overlap)

	status, body := st.Do(t, http.MethodPatch, "/api/v1/schedules/patched", map[string]any{"version": 1, "policies": map[string]any{"overlap": "skip"}})
	require.Equal(t, http.StatusPreconditionFailed, status, "%s", body)
	require.Contains(t, string(body), `"field":"version"`)
	status, body = st.Do(t, http.MethodPatch, "/api/v1/schedules/patched", map[string]any{"spec": map[string]any{"cron": "nope"}})
	require.Equal(t, http.StatusBadRequest, status, "%s", body)
	require.Contains(t, string(body), `"field":"spec.cron"`)

	var got api.ScheduleView
	st.JSON(t, http.MethodGet, "/api/v1/schedules/patched", nil, http.StatusOK, &got)
	require.Equal(t, domain.OverlapAllowAll, got.Policies.Overlap, "the stale and the bad PATCH changed nothing")
	// The new every-second spec applies live.
	require.Eventually(t, func() bool { return len(listRuns(t, st, "patched")) >= 2 }, 20*time.Second, 100*time.Millisecond)
}

// TestScheduleRescheduleAndBackfillThroughTheAPI moves the next fire and backfills a past
// range; backfilled ticks appear with trigger backfill, each once.
func TestScheduleRescheduleAndBackfillThroughTheAPI(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	start := time.Now().UTC().Truncate(time.Minute).Add(-10 * time.Minute)
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{
		"name": "ops", "spec": map[string]any{"interval": "1m", "start_at": start.Format(time.RFC3339)},
		"action": map[string]any{"kind": "event", "topic": "t", "type": "x"},
	}, http.StatusCreated, nil)

	at := time.Now().UTC().Add(2 * time.Second).Truncate(time.Second)
	var rescheduled api.ScheduleView
	st.JSON(t, http.MethodPost, "/api/v1/schedules/ops/reschedule", map[string]any{"next_run_at": at.Format(time.RFC3339)}, http.StatusOK, &rescheduled)
	require.Equal(t, at, rescheduled.NextRunAt.UTC())
	require.Eventually(t, func() bool {
		for _, r := range listRuns(t, st, "ops") {
			if r.ScheduledAt.Equal(at) && r.Status == "SUCCEEDED" {
				return true
			}
		}
		return false
	}, 20*time.Second, 100*time.Millisecond, "the rescheduled fire happens at next_run_at")

	var bf api.BackfillView
	st.JSON(t, http.MethodPost, "/api/v1/schedules/ops/backfill", map[string]any{
		"start": start.Format(time.RFC3339), "end": start.Add(4 * time.Minute).Format(time.RFC3339),
	}, http.StatusAccepted, &bf)
	require.Equal(t, 5, bf.Ticks)
	require.Eventually(t, func() bool {
		n := 0
		for _, r := range listRuns(t, st, "ops") {
			if r.Trigger == "backfill" {
				n++
			}
		}
		return n == 5
	}, 20*time.Second, 100*time.Millisecond)
	// The same range again runs nothing new.
	st.JSON(t, http.MethodPost, "/api/v1/schedules/ops/backfill", map[string]any{
		"start": start.Format(time.RFC3339), "end": start.Add(4 * time.Minute).Format(time.RFC3339),
	}, http.StatusAccepted, nil)
	require.Never(t, func() bool {
		n := 0
		for _, r := range listRuns(t, st, "ops") {
			if r.Trigger == "backfill" {
				n++
			}
		}
		return n != 5
	}, 2*time.Second, 200*time.Millisecond)

	for _, bad := range []struct{ path, body, field string }{
		{"reschedule", `{}`, "next_run_at"},
		{"reschedule", `{"next_run_at": "yesterday"}`, "next_run_at"},
		{"backfill", `{"end": "2026-01-01T00:00:00Z"}`, "start"},
		{"backfill", fmt.Sprintf(`{"start": %q, "end": %q}`, start.Format(time.RFC3339), start.Add(-time.Hour).Format(time.RFC3339)), "end"},
		{"backfill", fmt.Sprintf(`{"start": %q, "end": %q, "overlap": "never"}`, start.Format(time.RFC3339), start.Format(time.RFC3339)), "overlap"},
		{"trigger", `{"overlap": "x"}`, "overlap"},
		{"trigger", `{"input": {"a": 1}}`, "input"},
	} {
		status, body := st.Do(t, http.MethodPost, "/api/v1/schedules/ops/"+bad.path, bad.body)
		require.Equal(t, http.StatusBadRequest, status, "%s %s: %s", bad.path, bad.body, body)
		require.True(t, strings.Contains(string(body), `"field":"`+bad.field+`"`), "%s %s: %s", bad.path, bad.body, body)
	}
	// A range of more than 10,000 ticks is refused by the workflow and answered 400.
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{
		"name": "dense", "spec": map[string]any{"cron": "* * * * * *"}, "paused": true,
		"action": map[string]any{"kind": "event", "topic": "t", "type": "x"},
	}, http.StatusCreated, nil)
	status, body := st.Do(t, http.MethodPost, "/api/v1/schedules/dense/backfill", map[string]any{
		"start": start.Add(-3 * time.Hour).Format(time.RFC3339), "end": start.Format(time.RFC3339)})
	require.Equal(t, http.StatusBadRequest, status, "%s", body)
	require.Contains(t, string(body), `"field":"end"`)
}

// Report is the target workflow of the workflow-action test: it fails when asked to.
func Report(ctx workflow.Context, input map[string]any) (string, error) {
	if err := workflow.Sleep(ctx, 200*time.Millisecond); err != nil {
		return "", err
	}
	if input["fail"] == true {
		return "", fmt.Errorf("report failed as asked")
	}
	return "ok", nil
}

// reportWorker runs Report on a task queue of its own on the stack's Temporal, and returns
// the queue.
func reportWorker(t *testing.T, st *teststack.Stack) string {
	t.Helper()
	queue := "reports-" + fmt.Sprint(time.Now().UnixNano())
	w := sdkworker.New(st.Temporal, queue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(Report, workflow.RegisterOptions{Name: "Report"})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return queue
}

// TestScheduleWorkflowActionRunsTheTargetAndRecordsItsOutcome starts a real target
// workflow per fire on the dev server; its result sets the run's status.
func TestScheduleWorkflowActionRunsTheTargetAndRecordsItsOutcome(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	queue := reportWorker(t, st)

	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{
		"name": "reports", "spec": map[string]any{"cron": "0 0 1 1 *"},
		"action": map[string]any{"kind": "workflow", "workflow_type": "Report", "task_queue": queue, "input": map[string]any{"fail": false}},
	}, http.StatusCreated, nil)
	var ok, failed api.TriggerView
	st.JSON(t, http.MethodPost, "/api/v1/schedules/reports/trigger", nil, http.StatusOK, &ok)
	require.Equal(t, domain.RunRunning, ok.Run.Status)
	require.True(t, strings.HasPrefix(ok.Run.WorkflowID, "schedule/reports/run/"), ok.Run.WorkflowID)
	// The first run may still be running: allow_all lets this one start beside it.
	st.JSON(t, http.MethodPost, "/api/v1/schedules/reports/trigger", map[string]any{
		"overlap": "allow_all", "input": map[string]any{"fail": true}}, http.StatusOK, &failed)
	require.Equal(t, domain.RunRunning, failed.Run.Status)
	require.Eventually(t, func() bool {
		statuses := map[int64]domain.RunStatus{}
		for _, r := range listRuns(t, st, "reports") {
			statuses[r.ID] = r.Status
		}
		return statuses[ok.Run.ID] == "SUCCEEDED" && statuses[failed.Run.ID] == "FAILED"
	}, 30*time.Second, 200*time.Millisecond)
}

// TestBackfillOfAPausedScheduleRunsAndShowsWhatWaits: a backfill is an explicit request, so
// it runs while the schedule is paused; while its ticks wait behind one another (buffer_all),
// GET /schedules/{name} shows them as buffered ticks and the list counts them, and both go
// back to zero once every tick ran — with the schedule paused throughout.
func TestBackfillOfAPausedScheduleRunsAndShowsWhatWaits(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	queue := reportWorker(t, st)

	start := time.Now().UTC().Truncate(time.Minute).Add(-10 * time.Minute)
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{
		"name": "paused-backfill", "spec": map[string]any{"interval": "1m", "start_at": start.Format(time.RFC3339)},
		"action":   map[string]any{"kind": "workflow", "workflow_type": "Report", "task_queue": queue, "input": map[string]any{}},
		"policies": map[string]any{"overlap": "buffer_all"}, "paused": true,
	}, http.StatusCreated, nil)
	var bf api.BackfillView
	st.JSON(t, http.MethodPost, "/api/v1/schedules/paused-backfill/backfill", map[string]any{
		"start": start.Format(time.RFC3339), "end": start.Add(5 * time.Minute).Format(time.RFC3339),
	}, http.StatusAccepted, &bf)
	require.Equal(t, 6, bf.Ticks)

	// Each Report run lasts 200 ms, so the six ticks wait behind one another for a while.
	var sawWaiting api.ScheduleView
	require.Eventually(t, func() bool {
		st.JSON(t, http.MethodGet, "/api/v1/schedules/paused-backfill", nil, http.StatusOK, &sawWaiting)
		return sawWaiting.Waiting != nil && sawWaiting.Waiting.Buffered > 0
	}, 20*time.Second, 20*time.Millisecond, "the ticks waiting behind the running one are shown")
	require.Len(t, sawWaiting.Waiting.BufferedTicks, int(sawWaiting.Waiting.Buffered))
	for _, b := range sawWaiting.Waiting.BufferedTicks {
		require.Equal(t, domain.TriggerBackfill, b.Trigger)
		require.Contains(t, b.Reason, "overlap buffer_all: waiting for run")
	}
	require.True(t, sawWaiting.Paused)

	require.Eventually(t, func() bool {
		n := 0
		for _, r := range listRuns(t, st, "paused-backfill") {
			if r.Trigger == "backfill" && r.Status == "SUCCEEDED" {
				n++
			}
		}
		return n == 6
	}, 60*time.Second, 200*time.Millisecond, "every backfill tick ran while paused")
	var after api.ScheduleView
	st.JSON(t, http.MethodGet, "/api/v1/schedules/paused-backfill", nil, http.StatusOK, &after)
	require.True(t, after.Paused)
	require.Equal(t, api.ScheduleWaiting{}, *after.Waiting, "nothing waits any more")
	var list struct{ Items []api.ScheduleView }
	st.JSON(t, http.MethodGet, "/api/v1/schedules", nil, http.StatusOK, &list)
	require.Len(t, list.Items, 1)
	require.Equal(t, &api.ScheduleWaiting{}, list.Items[0].Waiting, "the list answers the counts")
}

// The free text and the backlog a client can leave behind are bounded: a create's note is
// a pause note, at most workflows.MaxPauseNote bytes (a 400 naming note, nothing created),
// and a schedule holds at most workflows.MaxPendingBackfills backfills (one more is a 409
// naming backfills, saying the cap, and nothing is sent to its workflow).
func TestNotesAndPendingBackfillsAreBounded(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	schedule := func(name, note string) map[string]any {
		return map[string]any{"name": name, "spec": map[string]any{"interval": "1h"},
			"action": map[string]any{"kind": "event", "topic": "t", "type": "x"}, "paused": true, "note": note}
	}
	status, b := st.Do(t, http.MethodPost, "/api/v1/schedules", schedule("long-note", strings.Repeat("n", workflows.MaxPauseNote+1)))
	require.Equal(t, http.StatusBadRequest, status, "%s", b)
	var p api.Problem
	require.NoError(t, json.Unmarshal(b, &p))
	require.Equal(t, "note", p.Field)
	status, _ = st.Do(t, http.MethodGet, "/api/v1/schedules/long-note", nil)
	require.Equal(t, http.StatusNotFound, status)
	status, b = st.Do(t, http.MethodPost, "/api/v1/schedules/bulk", map[string]any{"items": []any{schedule("bulk-long-note", strings.Repeat("n", workflows.MaxPauseNote+1))}})
	require.Equal(t, http.StatusBadRequest, status, "%s", b)
	require.NoError(t, json.Unmarshal(b, &p))
	require.Equal(t, "items[0].note", p.Field)

	var created api.ScheduleView
	st.JSON(t, http.MethodPost, "/api/v1/schedules", schedule("backfilled", strings.Repeat("n", workflows.MaxPauseNote)), http.StatusCreated, &created)
	row, err := st.Store.GetSchedule(context.Background(), "backfilled")
	require.NoError(t, err)
	past := time.Now().UTC().Add(-48 * time.Hour).Truncate(time.Hour)
	pending := make([]store.PendingBackfill, workflows.MaxPendingBackfills)
	for i := range pending {
		pending[i] = store.PendingBackfill{Start: past, End: past.Add(time.Hour), Remaining: 1}
	}
	require.NoError(t, st.Store.SetBackfills(context.Background(), row.ID, pending))
	status, b = st.Do(t, http.MethodPost, "/api/v1/schedules/backfilled/backfill", map[string]any{
		"start": past.Format(time.RFC3339), "end": past.Add(2 * time.Hour).Format(time.RFC3339)})
	require.Equal(t, http.StatusConflict, status, "%s", b)
	require.NoError(t, json.Unmarshal(b, &p))
	require.Equal(t, "backfills", p.Field)
	require.Contains(t, p.Detail, fmt.Sprintf("at most %d at once", workflows.MaxPendingBackfills))
}
