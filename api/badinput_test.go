package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/internal/testing/teststack"
)

// tables whose row counts bad input must leave alone.
var countedTables = []string{"schedules", "schedule_runs", "event_store", "outbox_messages", "rollouts", "task_runs",
	"rollout_waves", "freezes", "pcs", "devices", "tasks", "task_devices", "api_tokens", "idempotency_keys"}

func rowCounts(t *testing.T, st *teststack.Stack) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, tbl := range countedTables {
		var n int64
		require.NoError(t, st.Store.Pool.QueryRow(context.Background(), "SELECT count(*) FROM "+tbl).Scan(&n))
		out[tbl] = n
	}
	return out
}

// with returns base (a JSON object) with one field replaced (a nil value deletes it); path
// is dotted, and "tasks.0.x" goes into the first element of an array.
func with(base string, path string, value any) string {
	var obj any
	if err := json.Unmarshal([]byte(base), &obj); err != nil {
		panic(err)
	}
	parts := strings.Split(path, ".")
	cur := obj
	for _, p := range parts[:len(parts)-1] {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[p]
		case []any:
			cur = c[0]
		}
	}
	m := cur.(map[string]any)
	last := parts[len(parts)-1]
	if value == nil {
		delete(m, last)
	} else {
		m[last] = value
	}
	b, _ := json.Marshal(obj)
	return string(b)
}

// TestBadInputChangesNothing sends every creating route a body wrong in one field at a
// time (and malformed, oversized, mistyped and unknown-field bodies): each answer is a 4xx
// problem+json naming the field, and no table gains or loses a row.
func TestBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	st.JSON(t, http.MethodPost, "/api/v1/pcs", map[string]any{"name": "pc-0"}, http.StatusCreated, nil)

	const (
		schedule = `{"name":"s1","spec":{"interval":"1h"},"action":{"kind":"event","topic":"t","type":"x"}}`
		rollout  = `{"name":"r1","parallel_limit":2,"tasks":[{"database":"db","type":"DML","version":"1","executor":"noop"}]}`
		waved    = `{"name":"r2","parallel_limit":2,"tasks":[{"database":"a","type":"DML","version":"1","executor":"noop"},
			{"database":"b","type":"DML","version":"1","executor":"noop"}],
			"strategy":{"waves":[{"databases":["a"]},{"percent":100}],"bake":"1m","health":{"sql":"SELECT 1"}}}`
		pc     = `{"name":"pc-1","device_capacity":5}`
		device = `{"pc":"pc-0","serial":"dev-1"}`
		task   = `{"payload":{"cmd":"reboot"},"target_count":2}`
		token  = `{"role":"viewer"}`
	)
	type tc struct {
		path, body, field string
		status            int
	}
	cases := []tc{
		{"/api/v1/schedules", with(schedule, "name", "bad name!"), "name", 400},
		{"/api/v1/schedules", with(schedule, "name", nil), "name", 400},
		{"/api/v1/schedules", with(schedule, "name", 7), "name", 400},
		{"/api/v1/schedules", with(schedule, "spec.interval", "-1h"), "spec.interval", 400},
		{"/api/v1/schedules", with(schedule, "spec", map[string]any{"cron": "61 * * * *"}), "spec.cron", 400},
		{"/api/v1/schedules", with(schedule, "spec", map[string]any{"cron": "0 * * * *", "timezone": "Mars/Olympus"}), "spec.timezone", 400},
		{"/api/v1/schedules", with(schedule, "spec.start_at", "yesterday"), "spec.start_at", 400},
		{"/api/v1/schedules", with(schedule, "spec.jitter", "soon"), "spec.jitter", 400},
		{"/api/v1/schedules", with(schedule, "action.kind", "email"), "action.kind", 400},
		{"/api/v1/schedules", with(schedule, "action", map[string]any{"kind": "workflow", "task_queue": "q"}), "action.workflow_type", 400},
		{"/api/v1/schedules", with(schedule, "action", map[string]any{"kind": "workflow", "workflow_type": "W"}), "action.task_queue", 400},
		{"/api/v1/schedules", with(schedule, "policies", map[string]any{"overlap": "sometimes"}), "policies.overlap", 400},
		{"/api/v1/schedules", with(schedule, "policies", map[string]any{"catchup_window": "-5m"}), "policies.catchup_window", 400},
		{"/api/v1/schedules", with(schedule, "policies", map[string]any{"skip_if_successful": "yes"}), "policies.skip_if_successful", 400},
		{"/api/v1/schedules", with(schedule, "paused", "no"), "paused", 400},
		{"/api/v1/schedules", with(schedule, "color", "red"), "color", 400},

		{"/api/v1/rollouts", with(rollout, "name", ""), "name", 400},
		{"/api/v1/rollouts", with(rollout, "parallel_limit", 0), "parallel_limit", 400},
		{"/api/v1/rollouts", with(rollout, "parallel_limit", "two"), "parallel_limit", 400},
		{"/api/v1/rollouts", with(rollout, "tasks", []any{}), "tasks", 400},
		{"/api/v1/rollouts", with(rollout, "tasks.0.database", ""), "tasks[0].database", 400},
		{"/api/v1/rollouts", with(rollout, "tasks.0.type", "YAML"), "tasks[0].type", 400},
		{"/api/v1/rollouts", with(rollout, "tasks.0.version", ""), "tasks[0].version", 400},
		{"/api/v1/rollouts", with(rollout, "tasks.0.run_at", "tomorrow"), "tasks[0].run_at", 400},
		{"/api/v1/rollouts", with(rollout, "tasks.0.executor", "telepathy"), "tasks[0].executor", 400},
		{"/api/v1/rollouts", with(rollout, "tasks.0.payload", []any{1}), "tasks[0].payload", 400},
		{"/api/v1/rollouts", with(rollout, "owner", "me"), "owner", 400},
		// The strategy (docs/progressive.md), one bad field at a time.
		{"/api/v1/rollouts", with(waved, "strategy.waves", []any{map[string]any{"databases": []string{"a"}, "percent": 10}, map[string]any{"percent": 100}}), "strategy.waves[0]", 400},
		{"/api/v1/rollouts", with(waved, "strategy.waves", []any{map[string]any{}, map[string]any{"percent": 100}}), "strategy.waves[0]", 400},
		{"/api/v1/rollouts", with(waved, "strategy.waves", []any{map[string]any{"databases": []string{"a"}}, map[string]any{"databases": []string{"nope"}}}), "strategy.waves[1].databases[0]", 400},
		{"/api/v1/rollouts", with(waved, "strategy.waves", []any{map[string]any{"databases": []string{"a"}}, map[string]any{"databases": []string{"a"}}}), "strategy.waves[1].databases[0]", 400},
		{"/api/v1/rollouts", with(waved, "strategy.waves", []any{map[string]any{"percent": 0}, map[string]any{"percent": 100}}), "strategy.waves[0].percent", 400},
		{"/api/v1/rollouts", with(waved, "strategy.waves", []any{map[string]any{"percent": 100}, map[string]any{"percent": 100}}), "strategy.waves[1]", 400},
		{"/api/v1/rollouts", with(waved, "strategy.waves", []any{map[string]any{"percent": "half"}}), "strategy.waves.percent", 400},
		{"/api/v1/rollouts", with(waved, "strategy.bake", "ten minutes"), "strategy.bake", 400},
		{"/api/v1/rollouts", with(waved, "strategy.bake", "-1m"), "strategy.bake", 400},
		{"/api/v1/rollouts", with(with(waved, "strategy.waves", []any{map[string]any{"percent": 100}}), "strategy.bake", "1m"), "strategy.bake", 400},
		{"/api/v1/rollouts", with(waved, "strategy.health", map[string]any{}), "strategy.health", 400},
		{"/api/v1/rollouts", with(waved, "strategy.health", map[string]any{"http": "ftp://example.com"}), "strategy.health.http", 400},
		{"/api/v1/rollouts", with(waved, "strategy.health", map[string]any{"http": "http://127.0.0.1:9/health"}), "strategy.health.http", 400},
		{"/api/v1/rollouts", with(waved, "strategy.health", map[string]any{"sql": "SELECT 1", "timeout": "0s"}), "strategy.health.timeout", 400},
		{"/api/v1/rollouts", with(waved, "strategy.health", map[string]any{"sql": "SELECT 1", "retries": 3}), "strategy.health.retries", 400},
		{"/api/v1/rollouts", with(waved, "strategy.abort", map[string]any{"min_finished": 0, "failed_percent": 10}), "strategy.abort.min_finished", 400},
		{"/api/v1/rollouts", with(waved, "strategy.abort", map[string]any{"min_finished": 5, "failed_percent": 100}), "strategy.abort.failed_percent", 400},
		{"/api/v1/rollouts", with(waved, "strategy.abort", map[string]any{"min_finished": 5, "failed_percent": 10, "action": "stop"}), "strategy.abort.action", 400},
		{"/api/v1/rollouts", with(waved, "strategy.rate", map[string]any{}), "strategy.rate", 400},
		{"/api/v1/rollouts", with(waved, "strategy.rate", map[string]any{"per_minute": 0}), "strategy.rate.per_minute", 400},
		{"/api/v1/rollouts", with(waved, "strategy.rate", map[string]any{"exponential": map[string]any{"base_per_minute": 5, "factor": 1, "after_succeeded": 3}}), "strategy.rate.exponential.factor", 400},
		{"/api/v1/rollouts", with(waved, "strategy.rate", map[string]any{"per_minute": 4, "exponential": map[string]any{"base_per_minute": 5, "factor": 2, "after_succeeded": 3}}), "strategy.rate.exponential.base_per_minute", 400},
		{"/api/v1/rollouts", with(waved, "strategy.rate", map[string]any{"exponential": map[string]any{"base_per_minute": 5, "factor": 2, "after_succeeded": 0}}), "strategy.rate.exponential.after_succeeded", 400},
		{"/api/v1/rollouts", with(waved, "strategy.windows", []any{map[string]any{"cron": "nope", "duration": "1h"}}), "strategy.windows[0].cron", 400},
		{"/api/v1/rollouts", with(waved, "strategy.windows", []any{map[string]any{"cron": "0 1 * * *", "duration": "1h", "timezone": "Mars/Olympus"}}), "strategy.windows[0].timezone", 400},
		{"/api/v1/rollouts", with(waved, "strategy.windows", []any{map[string]any{"cron": "0 1 * * *", "duration": "30s"}}), "strategy.windows[0].duration", 400},
		{"/api/v1/rollouts", with(waved, "strategy.cadence", "weekly"), "strategy.cadence", 400},
		{"/api/v1/freeze", `{"reason": "  "}`, "reason", 400},
		{"/api/v1/freeze", `{}`, "reason", 400},
		{"/api/v1/freeze", `{"reason": "x", "until": "monday"}`, "until", 400},

		{"/api/v1/pcs", with(pc, "name", "no spaces"), "name", 400},
		{"/api/v1/pcs", with(pc, "device_capacity", 0), "device_capacity", 400},
		{"/api/v1/pcs", with(pc, "device_capacity", "many"), "device_capacity", 400},
		{"/api/v1/pcs", with(pc, "rack", 1), "rack", 400},

		{"/api/v1/devices", with(device, "pc", ""), "pc", 400},
		{"/api/v1/devices", with(device, "serial", "bad serial!"), "serial", 400},
		{"/api/v1/devices", with(device, "serial", 12), "serial", 400},
		{"/api/v1/devices", with(device, "model", "x"), "model", 400},

		{"/api/v1/tasks", with(task, "target_count", 0), "target_count", 400},
		{"/api/v1/tasks", with(task, "target_count", "all"), "target_count", 400},
		{"/api/v1/tasks", with(task, "abort", map[string]any{"min_executed": 0, "failed_percent": 10}), "abort.min_executed", 400},
		{"/api/v1/tasks", with(task, "abort", map[string]any{"min_executed": 5, "failed_percent": 100}), "abort.failed_percent", 400},
		{"/api/v1/tasks", with(task, "priority", 1), "priority", 400},
		{"/api/v1/tasks", with(task, "rate", map[string]any{}), "rate", 400},
		{"/api/v1/tasks", with(task, "rate", map[string]any{"per_minute": -1}), "rate.per_minute", 400},
		{"/api/v1/tasks", with(task, "rate", map[string]any{"exponential": map[string]any{"base_per_minute": 1, "factor": 9, "after_succeeded": 1}}), "rate.exponential.factor", 400},
		{"/api/v1/tasks", with(task, "windows", []any{map[string]any{"cron": "0 1 * * *", "duration": "forever"}}), "windows[0].duration", 400},
		{"/api/v1/tasks", with(task, "windows", []any{map[string]any{"cron": "0 1 * * *", "duration": "1h", "timezone": "Atlantis"}}), "windows[0].timezone", 400},

		{"/api/v1/tokens", with(token, "role", "root"), "role", 400},
		{"/api/v1/tokens", with(token, "pc", "pc-0"), "pc", 400},
		{"/api/v1/tokens", with(token, "scope", "all"), "scope", 400},
	}
	for _, path := range []string{"/api/v1/schedules", "/api/v1/rollouts", "/api/v1/pcs", "/api/v1/devices", "/api/v1/tasks", "/api/v1/tokens", "/api/v1/freeze"} {
		cases = append(cases,
			tc{path, `{"name": `, "", 400},
			tc{path, `{} {}`, "", 400},
			tc{path, `[1, 2]`, "", 400},
			tc{path, `{"x": "` + strings.Repeat("a", api.MaxBodyBytes) + `"}`, "", 413},
		)
	}

	before := rowCounts(t, st)
	keyed := st.As(st.AdminToken) // the same requests with an Idempotency-Key leave no row either
	for i, c := range append(cases, cases...) {
		client := st
		if i >= len(cases) {
			if c.path == "/api/v1/tokens" {
				continue // POST /tokens refuses Idempotency-Key (tested in TestIdempotentCreate)
			}
			client = keyed
			keyed.Headers[api.IdempotencyHeader] = "bad-" + strconv.Itoa(i)
		}
		status, b := client.Do(t, http.MethodPost, c.path, c.body)
		short := c.body
		if len(short) > 120 {
			short = short[:120] + "…"
		}
		require.Equal(t, c.status, status, "POST %s %s: %s", c.path, short, b)
		var p api.Problem
		require.NoError(t, json.Unmarshal(b, &p), "POST %s %s: %s", c.path, short, b)
		require.Equal(t, c.status, p.Status)
		if c.field != "" {
			require.Equal(t, c.field, p.Field, "POST %s %s: %s", c.path, short, b)
		}
	}
	// Not JSON at all.
	req, err := http.NewRequest(http.MethodPost, st.URL+"/api/v1/schedules", bytes.NewBufferString(schedule))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set("Authorization", st.Headers["Authorization"])
	resp, err := teststack.ContractClient(t).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)
	require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))

	require.Equal(t, before, rowCounts(t, st), "bad input changed the database")

	// The valid bodies do create (so the cases above failed for their one bad field).
	for path, body := range map[string]string{"/api/v1/schedules": schedule, "/api/v1/rollouts": rollout, "/api/v1/pcs": pc,
		"/api/v1/devices": device, "/api/v1/tasks": task, "/api/v1/tokens": token, "/api/v1/freeze": `{"reason": "x"}`} {
		status, b := st.Do(t, http.MethodPost, path, body)
		require.Equal(t, http.StatusCreated, status, "POST %s %s: %s", path, body, b)
	}
}
