package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/tickgate/tickgate/api"
	tickgate "github.com/tickgate/tickgate/client"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/dev/agentsim"
	"github.com/tickgate/tickgate/internal/dev/devstack"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/worker"
	"github.com/tickgate/tickgate/workflows"
)

// recordQueue is the production task queue: the recorded histories then carry the
// production workflow ids ("rollout-promoter", "device-dispatcher", "pc/<name>"). The dev
// server is this test binary's own, so nothing else runs on it under those ids.
const recordQueue = workflows.DefaultTaskQueue

// TestHistoriesOfARealRunReplay drives a rollout and a device task to completion on the
// whole product (real PostgreSQL, Temporal dev server, worker, HTTP API, simulated agent),
// fetches each workflow's history and replays it against the current workflow code: the
// rollout, promoter, dispatcher, PC and PC-timer workflows must replay what they did on
// a real server, worker-task boundaries included. (The legacy timers — the per-execution
// DeviceSlotWorkflow and the per-slot SlotDeadlineWorkflow, which nothing starts any more —
// keep the histories they recorded then.)
//
// With TICKGATE_RECORD_HISTORIES=1 (`make record-histories`) it also writes the histories
// to workflows/testdata/<type>_<scenario>.json, where TestReplayHistories replays them on
// every run. Re-record after an intentional, versioned change to a workflow; a change that
// breaks replay of the old histories is what that test is there to catch, so do not
// re-record to make it pass.
func TestHistoriesOfARealRunReplay(t *testing.T) {
	out := recordDir(t)
	targets := waveTargets(t)
	st := teststack.Start(t, teststack.Options{Configure: func(c *config.Config) {
		c.SQLTargets = targets
		c.TaskQueue = recordQueue
		// Short, so that an unanswered attempt times out through its PC's timer in seconds.
		c.DeviceTimeout = 2 * time.Second
		c.DeviceMaxAttempts = 3
	}})
	rec := &recorder{t: t, tc: st.Temporal, dir: out, recorded: map[string]*historypb.History{}}

	recordRollouts(t, st, rec)
	recordWaves(t, st, rec, targets)
	recordDevices(t, st, rec)

	// The singletons never end: their histories are taken once they are idle, and replay
	// up to their last event.
	rec.waitIdle(workflows.PromoterWorkflowID(recordQueue))
	rec.write(workflows.PromoterWorkflowID(recordQueue), workflows.PromoterWorkflowType, "rollout_promoter_wakes")
	rec.waitIdle(workflows.DispatcherWorkflowID(workflows.DeviceScope(recordQueue)))
	rec.write(workflows.DispatcherWorkflowID(workflows.DeviceScope(recordQueue)), "DispatcherWorkflow", "dispatcher_task")

	types := map[string]bool{}
	for name, hist := range rec.recorded {
		r, err := worker.NewReplayer()
		require.NoError(t, err)
		require.NoError(t, r.ReplayWorkflowHistory(nil, hist), "the history %s of a real run does not replay", name)
		types[hist.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowType().GetName()] = true
	}
	for _, typ := range []string{workflows.RolloutWorkflowType, workflows.PromoterWorkflowType, "DispatcherWorkflow", "PCWorkflow", "PCTimerWorkflow"} {
		require.True(t, types[typ], "no history of %s recorded", typ)
	}
}

// recordRollouts runs two rollouts. The first has DDL and DML tasks on two databases under
// a parallel limit of 2: noop tasks gated by version order and one schema change per
// database, an external task that fails, is retried and then succeeds (task-result
// signals, a retry), and an external task canceled while RUNNING (cancel-task signal). The
// second is canceled as a whole while its external task runs (cancel signal).
func recordRollouts(t *testing.T, st *teststack.Stack, rec *recorder) {
	var r1 api.RolloutView
	st.CreateRollout(t, map[string]any{"name": "replay-gates", "parallel_limit": 2, "tasks": []map[string]any{
		{"database": "db-a", "type": "DDL", "version": "1.0", "executor": "noop", "payload": map[string]any{"sleep": "100ms"}},
		{"database": "db-a", "type": "DML", "version": "1.1", "executor": "noop"},
		{"database": "db-a", "type": "DDL", "version": "1.2", "executor": "noop", "payload": map[string]any{"sleep": "50ms"}},
		{"database": "db-b", "type": "DDL", "version": "1", "executor": "external", "payload": map[string]any{"ticket": "OPS-1"}},
		{"database": "db-b", "type": "DML", "version": "2", "executor": "noop"},
		{"database": "db-b", "type": "DDL", "version": "3", "executor": "external", "payload": map[string]any{"ticket": "OPS-2"}},
	}}, &r1)
	tasks := map[string]api.TaskRunView{}
	for _, tr := range listTasks(t, st, r1.ID) {
		tasks[tr.Database+"/"+tr.Version] = tr
	}
	require.Len(t, tasks, 6)
	ext1, ext3 := tasks["db-b/1"].ID, tasks["db-b/3"].ID

	waitTask(t, st, ext1, "RUNNING")
	st.TaskRunResult(t, ext1, map[string]any{"status": "FAILED", "error": "ticket rejected"})
	waitTask(t, st, ext1, "FAILED")
	// The failed version no longer blocks db-b: DML 2 runs, then DDL 3 holds the database,
	// so the retried DDL 1 waits for it (R1) and the workflow stays the same run.
	waitTask(t, st, ext3, "RUNNING")
	st.TaskRunAct(t, ext1, "retry")
	st.TaskRunAct(t, ext3, "cancel")
	waitTask(t, st, ext1, "RUNNING")
	st.TaskRunResult(t, ext1, map[string]any{"status": "DONE", "output": map[string]any{"approved_by": "dba"}})
	// Every other task is DONE, but DDL 3 was canceled: the rollout did not do all it was
	// asked to, so it ends CANCELED, never DONE (docs/rollouts.md, "Rollout status").
	waitRollout(t, st, r1.ID, "CANCELED")
	rec.waitClosed(workflows.RolloutWorkflowID(r1.ID))
	rec.write(workflows.RolloutWorkflowID(r1.ID), workflows.RolloutWorkflowType, "rollout_gates_retry_cancel_task")

	var r2 api.RolloutView
	st.CreateRollout(t, map[string]any{"name": "replay-cancel", "parallel_limit": 1, "tasks": []map[string]any{
		{"database": "db-c", "type": "SDL", "version": "1", "executor": "external"},
		{"database": "db-c", "type": "SDL", "version": "2", "executor": "noop"},
	}}, &r2)
	for _, tr := range listTasks(t, st, r2.ID) {
		if tr.Executor == "external" {
			waitTask(t, st, tr.ID, "RUNNING")
		}
	}
	st.RolloutAct(t, r2.ID, "cancel")
	rec.waitClosed(workflows.RolloutWorkflowID(r2.ID))
	rec.write(workflows.RolloutWorkflowID(r2.ID), workflows.RolloutWorkflowType, "rollout_cancel")
}

// waveTargets are the target databases of recordWaves' rollout, each a database of its own.
func waveTargets(t *testing.T) map[string]string {
	out := map[string]string{}
	for _, db := range []string{"w-a", "w-b", "w-c"} {
		out[db] = testenv.DatabaseURL(t)
	}
	return out
}

// recordWaves runs a rollout of three waves (docs/progressive.md) with a 1-second bake and
// an SQL health probe: wave 1 passes; wave 2's probe fails on w-b (a table the migration
// broke), the rollout pauses; the table is fixed and the rollout resumed, the checks run
// again and pass, and wave 3 runs to the end. Its history holds the bake timers (with their
// summaries), both verdicts of the checks and the resume.
func recordWaves(t *testing.T, st *teststack.Stack, rec *recorder, targets map[string]string) {
	ctx := context.Background()
	execSQL := func(db, sql string) {
		conn, err := pgx.Connect(ctx, targets[db])
		require.NoError(t, err)
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		require.NoError(t, err)
	}
	execSQL("w-b", `CREATE TABLE broken (id int)`)
	var r api.RolloutView
	st.CreateRollout(t, map[string]any{"name": "replay-waves", "parallel_limit": 2,
		"tasks": []map[string]any{
			{"database": "w-a", "type": "DDL", "version": "1", "executor": "noop"},
			{"database": "w-b", "type": "DDL", "version": "1", "executor": "noop"},
			{"database": "w-c", "type": "DDL", "version": "1", "executor": "noop"},
		},
		"strategy": map[string]any{
			"waves":  []any{map[string]any{"databases": []string{"w-a"}}, map[string]any{"databases": []string{"w-b"}}, map[string]any{"percent": 100}},
			"bake":   "1s",
			"health": map[string]any{"sql": "SELECT NOT EXISTS (SELECT 1 FROM pg_tables WHERE tablename = 'broken')", "timeout": "5s"},
		}}, &r)
	waitRollout(t, st, r.ID, "PAUSED")
	var got api.RolloutView
	st.GetRollout(t, r.ID, &got)
	require.Equal(t, "wave 2: health check failed on w-b: the probe answered false", got.StatusReason)
	execSQL("w-b", `DROP TABLE broken`)
	st.RolloutAct(t, r.ID, "resume")
	waitRollout(t, st, r.ID, "DONE")
	id := workflows.RolloutWorkflowID(r.ID)
	rec.waitClosed(id)
	rec.write(id, workflows.RolloutWorkflowType, "rollout_waves")
	var bakes []string
	for _, ev := range rec.recorded["rollout_waves"].GetEvents() {
		if ev.GetTimerStartedEventAttributes() != nil {
			var summary string
			_ = converter.GetDefaultDataConverter().FromPayload(ev.GetUserMetadata().GetSummary(), &summary)
			if strings.Contains(summary, "bake") {
				bakes = append(bakes, summary)
			}
		}
	}
	require.Len(t, bakes, 2, "a bake timer after waves 1 and 2, each with its summary")
	require.Contains(t, bakes[0], "wave 1 bake: wave 2 waits until ")
}

// recordDevices runs one device task on a PC with 4 devices and 2 slots, the agent
// answering by device: a success, a retryable failure then a success, no answer (the
// attempt times out after the 2-second device timeout) then a success, and a
// non-retryable failure (FAILED_FINAL, the device goes to error).
func recordDevices(t *testing.T, st *teststack.Stack, rec *recorder) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st.CreatePC(t, "rack-1", 2)
	for _, serial := range []string{"dev-ok", "dev-retry", "dev-timeout", "dev-fatal"} {
		st.CreateDevice(t, "rack-1", serial)
	}
	var task api.DeviceTaskView
	st.CreateTask(t, map[string]any{"payload": map[string]any{"cmd": "flash", "build": 7}}, &task)
	fleet := agentsim.Start(ctx, agentsim.Options{
		BaseURL: st.URL + "/api/v1", PCs: []string{"rack-1"}, Latency: 50 * time.Millisecond, Ack: true,
		Decide: func(c agentsim.Command) agentsim.Outcome {
			switch {
			case c.Device == "dev-retry" && c.Attempt == 1:
				return agentsim.Fail
			case c.Device == "dev-timeout" && c.Attempt == 1:
				return agentsim.NoAnswer
			case c.Device == "dev-fatal":
				return agentsim.Fatal
			}
			return agentsim.Succeed
		},
		Logf:  t.Logf,
		Token: st.NewToken(t, domain.RoleAgent, "rack-1"),
	})
	defer fleet.Wait()
	defer cancel()

	var got api.DeviceTaskView
	require.Eventually(t, func() bool {
		st.GetTask(t, task.ID, &got)
		return got.Status != "pending" && got.Status != "running"
	}, 2*time.Minute, 100*time.Millisecond, "device task never finished: %s", fleet.Stats.String())
	cancel()
	require.Len(t, got.Devices, 4)
	scope := workflows.DeviceScope(recordQueue)
	want := map[string]struct {
		status  domain.ExecutionStatus
		attempt int32
	}{
		"dev-ok":      {domain.ExecutionSucceeded, 1},
		"dev-retry":   {domain.ExecutionSucceeded, 2},
		"dev-timeout": {domain.ExecutionSucceeded, 2},
		"dev-fatal":   {domain.ExecutionFailedFinal, 1},
	}
	for _, td := range got.Devices {
		w, ok := want[td.Device]
		require.True(t, ok, td.Device)
		require.Equal(t, w.status, td.Status, td.Device)
		require.Equal(t, w.attempt, td.Attempt, td.Device)
	}
	// The PC's timer: it watched every attempt on rack-1 and timed out dev-timeout's first
	// attempt. It runs on, so it is taken once idle. (slot_deadline_*.json are the legacy
	// SlotDeadlineWorkflow's, recorded before PCTimerWorkflow replaced it; they still replay.)
	timerID := workflows.PCTimerWorkflowID(scope, "rack-1")
	rec.waitIdle(timerID)
	rec.write(timerID, "PCTimerWorkflow", "pc_timer_timeout")
	pcID := workflows.PCWorkflowID(scope, "rack-1")
	rec.waitIdle(pcID)
	rec.write(pcID, "PCWorkflow", "pc_refill")
}

func listTasks(t *testing.T, st *teststack.Stack, rolloutID int64) []api.TaskRunView {
	t.Helper()
	var page struct {
		Items []api.TaskRunView `json:"items"`
	}
	limit := 100
	r, err := st.Client(t).ListRolloutTasksWithResponse(t.Context(), rolloutID, &tickgate.ListRolloutTasksParams{Limit: &limit})
	require.NoError(t, err)
	teststack.Decode(t, r.Body, &page)
	return page.Items
}

func waitTask(t *testing.T, st *teststack.Stack, id int64, status string) {
	t.Helper()
	waitStatus(t, fmt.Sprintf("task run %d", id), func(out any) { st.GetTaskRun(t, id, out) }, status)
}

func waitRollout(t *testing.T, st *teststack.Stack, id int64, status string) {
	t.Helper()
	waitStatus(t, fmt.Sprintf("rollout %d", id), func(out any) { st.GetRollout(t, id, out) }, status)
}

// waitStatus polls a resource (get reads it) until its status is status.
func waitStatus(t *testing.T, path string, get func(out any), status string) {
	t.Helper()
	var v struct {
		Status string `json:"status"`
	}
	deadline := time.Now().Add(time.Minute)
	for {
		get(&v)
		if v.Status == status {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never became %s (last seen %q)", path, status, v.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// recordDir is where recorded histories go: workflows/testdata with
// TICKGATE_RECORD_HISTORIES=1 (`make record-histories`), else a temporary directory (the
// histories are then only replayed).
func recordDir(t *testing.T) string {
	t.Helper()
	if os.Getenv("TICKGATE_RECORD_HISTORIES") != "1" {
		return t.TempDir()
	}
	root, err := devstack.RepoRoot()
	require.NoError(t, err)
	return filepath.Join(root, "workflows", "testdata")
}

// recorder fetches workflow histories from the dev server and writes them as the JSON
// that `temporal workflow show --output json` writes and the replayer reads.
type recorder struct {
	t   *testing.T
	tc  client.Client
	dir string
	// recorded holds every history written, by file name.
	recorded map[string]*historypb.History
}

// waitClosed waits for a workflow that ends on its own to have ended.
func (r *recorder) waitClosed(id string) {
	r.t.Helper()
	require.Eventually(r.t, func() bool {
		d, err := r.tc.DescribeWorkflowExecution(context.Background(), id, "")
		return err == nil && d.GetWorkflowExecutionInfo().GetCloseTime() != nil
	}, time.Minute, 100*time.Millisecond, "workflow %s never closed", id)
}

// waitIdle waits until a long-running workflow has no workflow task and no activity in
// flight, so its recorded history ends on a completed workflow task (and the commands it
// made) rather than in the middle of one.
func (r *recorder) waitIdle(id string) {
	r.t.Helper()
	require.Eventually(r.t, func() bool {
		d, err := r.tc.DescribeWorkflowExecution(context.Background(), id, "")
		return err == nil && d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING &&
			d.GetPendingWorkflowTask() == nil && len(d.GetPendingActivities()) == 0
	}, time.Minute, 100*time.Millisecond, "workflow %s never idle", id)
}

// write saves the latest run's history of workflow id as <dir>/<name>.json, after checking
// that it is a history of workflowType.
func (r *recorder) write(id, workflowType, name string) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hist := &historypb.History{}
	it := r.tc.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(r.t, err, "history of %s", id)
		hist.Events = append(hist.Events, ev)
	}
	require.NotEmpty(r.t, hist.Events, id)
	require.Equal(r.t, workflowType, hist.Events[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowType().GetName(), id)
	b, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(hist)
	require.NoError(r.t, err)
	path := filepath.Join(r.dir, name+".json")
	require.NoError(r.t, os.WriteFile(path, append(b, '\n'), 0o644))
	r.recorded[name] = hist
	r.t.Logf("recorded %s (%s, %d events, %d bytes) to %s", id, workflowType, len(hist.Events), len(b)+1, path)
}
