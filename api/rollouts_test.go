package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/dev/chaos/invariants"
	"github.com/tickgate/tickgate/internal/outbound"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/internal/version"
)

type taskPage struct {
	Items      []api.TaskRunView `json:"items"`
	NextCursor string            `json:"next_cursor"`
}

func rolloutTasks(t *testing.T, st *teststack.Stack, id int64, query string) []api.TaskRunView {
	t.Helper()
	var page taskPage
	st.JSON(t, http.MethodGet, fmt.Sprintf("/api/v1/rollouts/%d/tasks?limit=500%s", id, query), nil, http.StatusOK, &page)
	return page.Items
}

func getTask(t *testing.T, st *teststack.Stack, id int64) api.TaskRunView {
	t.Helper()
	var v api.TaskRunView
	st.JSON(t, http.MethodGet, fmt.Sprintf("/api/v1/task-runs/%d", id), nil, http.StatusOK, &v)
	return v
}

func waitTaskStatus(t *testing.T, st *teststack.Stack, id int64, status string) api.TaskRunView {
	t.Helper()
	var v api.TaskRunView
	require.Eventually(t, func() bool { v = getTask(t, st, id); return string(v.Status) == status },
		60*time.Second, 50*time.Millisecond, "task run %d never became %s", id, status)
	return v
}

func cause(v api.TaskRunView) map[string]any {
	var c map[string]any
	_ = json.Unmarshal(v.WaitingCause, &c)
	return c
}

// TestRolloutEndToEnd runs a rollout of DDL tasks sharing databases, versions given out of
// order, with a parallel limit, on two workers, sampling R1–R3 while it runs; it finishes
// all DONE, in version order per database.
func TestRolloutEndToEnd(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{Workers: 2})
	ctx := context.Background()

	versions := []string{"1.10", "1.2", "2", "1.9", "1.1"}
	var tasks []map[string]any
	for db := 0; db < 3; db++ {
		for _, v := range versions {
			tasks = append(tasks, map[string]any{
				"database": fmt.Sprintf("db%d", db), "type": "DDL", "version": v,
				"executor": "noop", "payload": map[string]any{"sleep": "150ms"},
			})
		}
		// A DML per database, same version as the smallest DDL: it may not share the database
		// with a DDL (R1).
		tasks = append(tasks, map[string]any{"database": fmt.Sprintf("db%d", db), "type": "DML", "version": "1.1", "executor": "noop"})
	}
	var created api.RolloutView
	st.JSON(t, http.MethodPost, "/api/v1/rollouts", map[string]any{"name": "schema-2026", "parallel_limit": 2, "tasks": tasks}, http.StatusCreated, &created)
	require.Equal(t, "schema-2026", created.Name)
	require.EqualValues(t, 2, created.ParallelLimit)
	require.EqualValues(t, len(tasks), created.Progress.Total)
	// The promoter may already have promoted up to the limit by the time the answer is read.
	var counted int64
	for _, n := range created.Counts {
		counted += int64(n)
	}
	require.EqualValues(t, len(tasks), counted)
	require.GreaterOrEqual(t, int64(created.Counts["PENDING"]), int64(len(tasks)-2))

	// Sample the invariants the whole time it runs.
	var (
		breaches []string
		samples  atomic.Int64
		sawCause sync.Map
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			b, err := invariants.RolloutBreaches(ctx, st.Store.Pool)
			if err == nil {
				breaches = append(breaches, b...)
				samples.Add(1)
			}
			rows, err := st.Store.ListTaskRuns(ctx, created.ID, 0, []string{"PENDING"}, 500)
			if err == nil {
				for _, r := range rows {
					var c map[string]any
					if json.Unmarshal(r.WaitingCause, &c) == nil {
						sawCause.Store(c["reason"], true)
					}
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()

	var got api.RolloutView
	require.Eventually(t, func() bool {
		st.JSON(t, http.MethodGet, fmt.Sprintf("/api/v1/rollouts/%d", created.ID), nil, http.StatusOK, &got)
		return got.Status == "DONE"
	}, 90*time.Second, 100*time.Millisecond, "rollout never finished")
	close(stop)
	wg.Wait()
	require.Empty(t, breaches, "R1–R3 breached while running")
	require.Greater(t, samples.Load(), int64(10))
	for _, reason := range []string{"version", "parallel_limit"} {
		_, ok := sawCause.Load(reason)
		require.True(t, ok, "a PENDING task showed waiting cause %q", reason)
	}
	require.EqualValues(t, len(tasks), got.Counts["DONE"])
	require.EqualValues(t, 100, got.Progress.Percent)

	all := rolloutTasks(t, st, created.ID, "")
	require.Len(t, all, len(tasks))
	byDB := map[string][]api.TaskRunView{}
	for _, tr := range all {
		require.Equal(t, domain.TaskRunDone, tr.Status)
		require.NotNil(t, tr.StartedAt)
		require.NotNil(t, tr.FinishedAt)
		require.Equal(t, "null", string(tr.WaitingCause))
		byDB[tr.Database] = append(byDB[tr.Database], tr)
	}
	for db, trs := range byDB {
		slices.SortFunc(trs, func(a, b api.TaskRunView) int { return version.Compare(a.Version, b.Version) })
		for i := 1; i < len(trs); i++ {
			prev, cur := trs[i-1], trs[i]
			if prev.Type == "DDL" || cur.Type == "DDL" {
				if version.Compare(prev.Version, cur.Version) == 0 {
					// Same version: not ordered, but never overlapping (R1).
					require.True(t, !prev.StartedAt.Before(*cur.FinishedAt) || !cur.StartedAt.Before(*prev.FinishedAt),
						"%s: tasks %d and %d overlapped", db, prev.ID, cur.ID)
					continue
				}
				require.False(t, cur.StartedAt.Before(*prev.FinishedAt),
					"%s: version %s started before version %s finished", db, cur.Version, prev.Version)
			}
		}
	}
	// The filter by status answers only those.
	require.Len(t, rolloutTasks(t, st, created.ID, "&status=DONE"), len(tasks))
	require.Empty(t, rolloutTasks(t, st, created.ID, "&status=PENDING,RUNNING"))
}

// TestRolloutOperations: an external task and its result, waiting causes through the API,
// pause and resume, cancel, an http task failing then retried, a sql task on a configured
// target, and the 4xx answers of operations that do not apply.
func TestRolloutOperations(t *testing.T) {
	t.Parallel()
	targetURL := testenv.DatabaseURL(t)
	var httpOK atomic.Bool
	var httpCalls atomic.Int64
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpCalls.Add(1)
		if r.Method != http.MethodPost || !httpOK.Load() {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(hook.Close)
	st := teststack.Start(t, teststack.Options{Configure: func(c *config.Config) {
		c.SQLTargets = map[string]string{"target": targetURL}
		// The hook listens on loopback, which the outbound rule refuses unless listed.
		rule, err := outbound.Parse("127.0.0.1")
		require.NoError(t, err)
		c.HTTPAllow = rule
	}})
	ctx := context.Background()

	// 1. An external DDL v1 blocks a noop DDL v2 on the same database.
	var r1 api.RolloutView
	st.JSON(t, http.MethodPost, "/api/v1/rollouts", map[string]any{"name": "ext", "parallel_limit": 5, "tasks": []map[string]any{
		{"database": "x", "type": "DDL", "version": "1", "executor": "external", "payload": map[string]any{"ticket": "OPS-1"}},
		{"database": "x", "type": "DDL", "version": "2", "executor": "noop"},
	}}, http.StatusCreated, &r1)
	tasks := rolloutTasks(t, st, r1.ID, "")
	require.Len(t, tasks, 2)
	ext, next := tasks[0], tasks[1]
	waitTaskStatus(t, st, ext.ID, "RUNNING")
	require.Eventually(t, func() bool {
		c := cause(getTask(t, st, next.ID))
		return c["reason"] == "version" && c["blocked_by_task"] == float64(ext.ID)
	}, 30*time.Second, 50*time.Millisecond, "task 2 shows it waits for version 1")

	status, body := st.Do(t, http.MethodPost, fmt.Sprintf("/api/v1/task-runs/%d/result", next.ID), map[string]any{"status": "DONE"})
	require.Equal(t, http.StatusConflict, status, "%s", body)
	status, body = st.Do(t, http.MethodPost, fmt.Sprintf("/api/v1/task-runs/%d/result", ext.ID), map[string]any{"status": "MAYBE"})
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, string(body), `"field":"status"`)

	// Pause, then report the result: task 1 finishes, task 2 waits for the resume.
	var paused api.RolloutView
	st.JSON(t, http.MethodPost, fmt.Sprintf("/api/v1/rollouts/%d/pause", r1.ID), nil, http.StatusOK, &paused)
	require.Equal(t, "PAUSED", paused.Status)
	st.JSON(t, http.MethodPost, fmt.Sprintf("/api/v1/rollouts/%d/pause", r1.ID), nil, http.StatusConflict, nil)
	st.JSON(t, http.MethodPost, fmt.Sprintf("/api/v1/task-runs/%d/result", ext.ID),
		map[string]any{"status": "DONE", "output": map[string]any{"approved_by": "dba"}}, http.StatusAccepted, nil)
	done := waitTaskStatus(t, st, ext.ID, "DONE")
	require.JSONEq(t, `{"approved_by":"dba"}`, string(done.Output))
	require.Eventually(t, func() bool { return cause(getTask(t, st, next.ID))["reason"] == "rollout_paused" },
		30*time.Second, 50*time.Millisecond)
	require.Equal(t, domain.TaskRunPending, getTask(t, st, next.ID).Status)
	st.JSON(t, http.MethodPost, fmt.Sprintf("/api/v1/rollouts/%d/resume", r1.ID), nil, http.StatusOK, nil)
	waitTaskStatus(t, st, next.ID, "DONE")
	st.JSON(t, http.MethodPost, fmt.Sprintf("/api/v1/task-runs/%d/retry", ext.ID), nil, http.StatusConflict, nil)

	// 2. Cancel a rollout with a RUNNING external task and a PENDING one.
	var r2 api.RolloutView
	st.JSON(t, http.MethodPost, "/api/v1/rollouts", map[string]any{"name": "to-cancel", "parallel_limit": 1, "tasks": []map[string]any{
		{"database": "y", "type": "SDL", "version": "1", "executor": "external"},
		{"database": "y", "type": "SDL", "version": "2", "executor": "noop"},
	}}, http.StatusCreated, &r2)
	t2 := rolloutTasks(t, st, r2.ID, "")
	waitTaskStatus(t, st, t2[0].ID, "RUNNING")
	var canceled api.RolloutView
	st.JSON(t, http.MethodPost, fmt.Sprintf("/api/v1/rollouts/%d/cancel", r2.ID), nil, http.StatusOK, &canceled)
	require.Equal(t, "CANCELED", canceled.Status)
	waitTaskStatus(t, st, t2[0].ID, "CANCELED")
	require.Equal(t, domain.TaskRunCanceled, getTask(t, st, t2[1].ID).Status)
	st.JSON(t, http.MethodPost, fmt.Sprintf("/api/v1/task-runs/%d/retry", t2[0].ID), nil, http.StatusConflict, nil)
	st.JSON(t, http.MethodPost, fmt.Sprintf("/api/v1/rollouts/%d/resume", r2.ID), nil, http.StatusConflict, nil)

	// 3. An http task answered 400 fails at once; fixed and retried, it is DONE. A sql task
	// runs on its configured target; a skipped task never runs.
	var r3 api.RolloutView
	st.JSON(t, http.MethodPost, "/api/v1/rollouts", map[string]any{"name": "hooks", "parallel_limit": 3, "tasks": []map[string]any{
		{"database": "z", "type": "DML", "version": "1", "executor": "http", "payload": map[string]any{"url": hook.URL + "/deploy"}},
		{"database": "target", "type": "DDL", "version": "1", "executor": "sql", "payload": map[string]any{"statement": "CREATE TABLE migrated (id int)"}},
		{"database": "w", "type": "DDL", "version": "1", "executor": "noop", "run_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)},
	}}, http.StatusCreated, &r3)
	t3 := rolloutTasks(t, st, r3.ID, "")
	failed := waitTaskStatus(t, st, t3[0].ID, "FAILED")
	require.Contains(t, failed.Error, "400")
	httpOK.Store(true)
	var retried api.TaskRunView
	st.JSON(t, http.MethodPost, fmt.Sprintf("/api/v1/task-runs/%d/retry", t3[0].ID), nil, http.StatusOK, &retried)
	require.Equal(t, domain.TaskRunPending, retried.Status)
	ok := waitTaskStatus(t, st, t3[0].ID, "DONE")
	require.EqualValues(t, 2, ok.Attempt)
	require.Equal(t, int64(2), httpCalls.Load())

	sqlDone := waitTaskStatus(t, st, t3[1].ID, "DONE")
	require.NotContains(t, string(sqlDone.Payload)+string(sqlDone.Output), targetURL)
	conn, err := pgx.Connect(ctx, targetURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var n int
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'migrated'").Scan(&n))
	require.Equal(t, 1, n)

	require.Eventually(t, func() bool { return cause(getTask(t, st, t3[2].ID))["reason"] == "run_at" }, 30*time.Second, 50*time.Millisecond)
	var skipped api.TaskRunView
	st.JSON(t, http.MethodPost, fmt.Sprintf("/api/v1/task-runs/%d/skip", t3[2].ID), nil, http.StatusOK, &skipped)
	require.Equal(t, domain.TaskRunSkipped, skipped.Status)
	var r3done api.RolloutView
	require.Eventually(t, func() bool {
		st.JSON(t, http.MethodGet, fmt.Sprintf("/api/v1/rollouts/%d", r3.ID), nil, http.StatusOK, &r3done)
		return r3done.Status == "DONE"
	}, 30*time.Second, 50*time.Millisecond)

	// 4. Cancel a RUNNING task: the row is CANCELED at once and its executor (an hour-long
	// sleep) is stopped, so the rollout finishes — CANCELED, not DONE: its only task never
	// completed.
	var r4 api.RolloutView
	st.JSON(t, http.MethodPost, "/api/v1/rollouts", map[string]any{"name": "long", "parallel_limit": 1, "tasks": []map[string]any{
		{"database": "v", "type": "DDL", "version": "1", "executor": "noop", "payload": map[string]any{"sleep": "1h"}},
	}}, http.StatusCreated, &r4)
	long := rolloutTasks(t, st, r4.ID, "")[0]
	waitTaskStatus(t, st, long.ID, "RUNNING")
	var canceledTask api.TaskRunView
	st.JSON(t, http.MethodPost, fmt.Sprintf("/api/v1/task-runs/%d/cancel", long.ID), nil, http.StatusOK, &canceledTask)
	require.Equal(t, domain.TaskRunCanceled, canceledTask.Status)
	st.JSON(t, http.MethodPost, fmt.Sprintf("/api/v1/task-runs/%d/cancel", long.ID), nil, http.StatusConflict, nil)
	var r4done api.RolloutView
	require.Eventually(t, func() bool {
		st.JSON(t, http.MethodGet, fmt.Sprintf("/api/v1/rollouts/%d", r4.ID), nil, http.StatusOK, &r4done)
		return r4done.Progress.Finished == 1
	}, 30*time.Second, 50*time.Millisecond)
	require.Equal(t, "CANCELED", r4done.Status)
	require.Equal(t, domain.TaskRunCanceled, getTask(t, st, long.ID).Status)
	require.Eventually(t, func() bool {
		desc, err := st.Temporal.DescribeWorkflowExecution(ctx, fmt.Sprintf("rollout/%d", r4.ID), "")
		return err == nil && desc.WorkflowExecutionInfo.CloseTime != nil
	}, 30*time.Second, 100*time.Millisecond, "the rollout's workflow ends once its stopped task's batch returns")

	st.JSON(t, http.MethodPost, "/api/v1/task-runs/987654321/skip", nil, http.StatusNotFound, nil)
	st.JSON(t, http.MethodGet, "/api/v1/rollouts/abc", nil, http.StatusBadRequest, nil) // malformed id: 400 naming it (TestPathIDsAnswerAlike)
	st.JSON(t, http.MethodGet, fmt.Sprintf("/api/v1/rollouts/%d/tasks?status=BOGUS", r3.ID), nil, http.StatusBadRequest, nil)
}

// TestRolloutBadInput: every bad create is a 400 naming the field, and nothing is created.
func TestRolloutBadInput(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	good := func() map[string]any {
		return map[string]any{"database": "db", "type": "DDL", "version": "1.2", "executor": "noop"}
	}
	with := func(k string, v any) []map[string]any {
		t := good()
		if v == nil {
			delete(t, k)
		} else {
			t[k] = v
		}
		return []map[string]any{good(), t}
	}
	cases := []struct {
		body  any
		field string
	}{
		{map[string]any{"name": "r", "parallel_limit": 1, "tasks": with("executor", "shell")}, "tasks[1].executor"},
		{map[string]any{"name": "r", "parallel_limit": 1, "tasks": with("database", nil)}, "tasks[1].database"},
		{map[string]any{"name": "r", "parallel_limit": 1, "tasks": with("version", "1..2 beta")}, "tasks[1].version"},
		{map[string]any{"name": "r", "parallel_limit": 1, "tasks": with("version", nil)}, "tasks[1].version"},
		{map[string]any{"name": "r", "parallel_limit": 1, "tasks": with("type", "PATCH")}, "tasks[1].type"},
		{map[string]any{"name": "r", "parallel_limit": 1, "tasks": with("run_at", "tomorrow")}, "tasks[1].run_at"},
		{map[string]any{"name": "r", "parallel_limit": 1, "tasks": with("payload", map[string]any{"sleep": "forever"})}, "tasks[1].payload.sleep"},
		{map[string]any{"name": "r", "parallel_limit": 1, "tasks": with("payload", []int{1})}, "tasks[1].payload"},
		{map[string]any{"name": "r", "parallel_limit": 0, "tasks": with("type", "DDL")}, "parallel_limit"},
		{map[string]any{"name": "r", "parallel_limit": -3, "tasks": with("type", "DDL")}, "parallel_limit"},
		{map[string]any{"name": "r", "tasks": with("type", "DDL")}, "parallel_limit"},
		{map[string]any{"name": "", "parallel_limit": 1, "tasks": with("type", "DDL")}, "name"},
		{map[string]any{"name": "r", "parallel_limit": 1, "tasks": []any{}}, "tasks"},
		{map[string]any{"name": "r", "parallel_limit": 1, "tasks": with("dsn", "postgres://x")}, "tasks[1].dsn"},
		{map[string]any{"name": "r", "parallel_limit": "2", "tasks": with("type", "DDL")}, "parallel_limit"},
	}
	for _, c := range cases {
		status, body := st.Do(t, http.MethodPost, "/api/v1/rollouts", c.body)
		require.Equal(t, http.StatusBadRequest, status, "%v: %s", c.body, body)
		var p api.Problem
		require.NoError(t, json.Unmarshal(body, &p))
		require.Equal(t, c.field, p.Field, "%s", body)
	}
	status, body := st.Do(t, http.MethodPost, "/api/v1/rollouts", `{"name": "r", "parallel_limit": 1, "tasks": [`)
	require.Equal(t, http.StatusBadRequest, status, "%s", body)

	var page struct {
		Items []api.RolloutView `json:"items"`
	}
	st.JSON(t, http.MethodGet, "/api/v1/rollouts", nil, http.StatusOK, &page)
	require.Empty(t, page.Items, "a rejected request created nothing")
	var n int
	require.NoError(t, st.Store.Pool.QueryRow(context.Background(), "SELECT count(*) FROM task_runs").Scan(&n))
	require.Zero(t, n)
	require.False(t, strings.Contains(string(body), "postgres://"))
}

// A rollout that runs code on its targets — a task with the sql or http executor, or a
// wave's SQL health probe — is created only by a deployer or an admin token; an operator
// keeps noop and external tasks, and its refusal is a 403 naming the field, creating
// nothing. Before, an operator's http task POSTed wherever it said.
func TestRolloutsThatRunCodeNeedADeployer(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	operator := st.As(st.NewToken(t, domain.RoleOperator, ""))
	deployer := st.As(st.NewToken(t, domain.RoleDeployer, ""))
	task := func(db, executor, payload string) map[string]any {
		return map[string]any{"database": db, "type": "DDL", "version": "1", "executor": executor, "payload": json.RawMessage(payload)}
	}
	sqlTask := task("a", "sql", `{"statement":"CREATE TABLE t (id int)"}`)
	httpTask := task("a", "http", `{"url":"https://93.184.216.34/deploy"}`)
	noopTask, externalTask := task("a", "noop", `{}`), task("b", "external", `{"ticket":"T-1"}`)
	probed := map[string]any{"waves": []any{map[string]any{"databases": []string{"a"}}, map[string]any{"percent": 100}},
		"bake": "1m", "health": map[string]any{"sql": "SELECT 1"}}
	rollout := func(name string, strategy any, tasks ...map[string]any) map[string]any {
		r := map[string]any{"name": name, "parallel_limit": 1, "tasks": tasks}
		if strategy != nil {
			r["strategy"] = strategy
		}
		return r
	}
	count := func() int {
		var n int
		require.NoError(t, st.Store.Pool.QueryRow(context.Background(), `SELECT count(*) FROM rollouts`).Scan(&n))
		return n
	}
	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{rollout("op-sql", nil, sqlTask), "tasks[0].executor"},
		{rollout("op-http", nil, httpTask), "tasks[0].executor"},
		{rollout("op-mixed", nil, noopTask, task("b", "sql", `{"statement":"SELECT 1"}`)), "tasks[1].executor"},
		{rollout("op-probe", probed, noopTask, externalTask), "strategy.health.sql"},
	} {
		status, b := operator.Do(t, http.MethodPost, "/api/v1/rollouts", c.body)
		require.Equal(t, http.StatusForbidden, status, "%s", b)
		var p api.Problem
		require.NoError(t, json.Unmarshal(b, &p))
		require.Equal(t, c.field, p.Field, "%s", b)
		require.Contains(t, p.Detail, "deployer or admin")
	}
	require.Zero(t, count(), "a refused rollout creates nothing")

	operator.JSON(t, http.MethodPost, "/api/v1/rollouts", rollout("op-ok", nil, noopTask, externalTask), http.StatusCreated, nil)
	operator.JSON(t, http.MethodPost, "/api/v1/rollouts",
		rollout("op-http-probe", map[string]any{"waves": probed["waves"], "bake": "1m", "health": map[string]any{"http": "https://93.184.216.34/health"}},
			noopTask, externalTask), http.StatusCreated, nil)
	for who, as := range map[string]*teststack.Stack{"deployer": deployer, "admin": st} {
		as.JSON(t, http.MethodPost, "/api/v1/rollouts", rollout(who+"-code", probed, sqlTask, task("b", "http", `{"url":"https://93.184.216.34/deploy"}`)),
			http.StatusCreated, nil)
	}
	require.Equal(t, 4, count())
}
