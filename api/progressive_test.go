package api_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/store"
)

// A rollout created with a strategy answers it back with its waves (each database placed,
// the first wave open), its tasks carry their wave, and a later wave's task waits with a
// cause naming its wave.
func TestRolloutWithAStrategyShowsItsWaves(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	body := map[string]any{
		"name": "tenants", "parallel_limit": 10,
		"tasks": []map[string]any{
			{"database": "billing", "type": "DDL", "version": "1", "executor": "noop"},
			{"database": "orders", "type": "DDL", "version": "1", "executor": "noop"},
			{"database": "users", "type": "DDL", "version": "1", "executor": "noop"},
		},
		"strategy": map[string]any{
			"waves":  []any{map[string]any{"databases": []string{"billing"}}, map[string]any{"percent": 50}, map[string]any{"percent": 100}},
			"bake":   "10m",
			"health": map[string]any{"sql": "SELECT 1", "http": "https://status.example.com/health"},
			"abort":  map[string]any{"min_finished": 2, "failed_percent": 25},
		},
	}
	var r api.RolloutView
	st.JSON(t, http.MethodPost, "/api/v1/rollouts", body, http.StatusCreated, &r)
	require.NotNil(t, r.Strategy)
	require.Equal(t, "10m", r.Strategy.Bake)
	require.Equal(t, domain.AbortPause, r.Strategy.Abort.Action, "pause is the default action, and shown")
	require.Equal(t, api.WaveProgress{Open: 1, Count: 3}, r.Wave)
	require.Len(t, r.Waves, 3)
	require.Equal(t, []string{"billing"}, r.Waves[0].Databases)
	require.Equal(t, domain.WaveRunning, r.Waves[0].Status)
	require.Equal(t, []string{"orders"}, r.Waves[1].Databases)
	require.Equal(t, []string{"users"}, r.Waves[2].Databases)
	require.Equal(t, domain.WaveWaiting, r.Waves[2].Status)

	_, err := st.Store.PromoteRound(context.Background())
	require.NoError(t, err)
	var page api.Page[api.TaskRunView]
	st.JSON(t, http.MethodGet, fmt.Sprintf("/api/v1/rollouts/%d/tasks", r.ID), nil, http.StatusOK, &page)
	require.Len(t, page.Items, 3)
	for _, tr := range page.Items {
		switch tr.Database {
		case "billing":
			require.EqualValues(t, 1, tr.Wave)
			require.Equal(t, domain.TaskRunAvailable, tr.Status)
		case "users":
			require.EqualValues(t, 3, tr.Wave)
			require.JSONEq(t, `{"reason":"wave","wave":3,"open_wave":1,"waits":"earlier_wave","message":"wave 3 waits: wave 2 has not started"}`, string(tr.WaitingCause))
		}
	}
}

// The global freeze over HTTP: set (by whom, why), shown on GET /freeze and on every
// rollout, a second one refused (409), lifted, kept in the history; a rollout's own freeze
// and unfreeze; an operator's pause says who paused.
func TestFreezeRoutesKeepWhoFrozeWhenAndWhy(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	_, opToken, err := st.Store.CreateToken(context.Background(), store.NewToken{Role: domain.RoleOperator, Note: "alice"})
	require.NoError(t, err)
	op := st.As(opToken)
	var r api.RolloutView
	st.JSON(t, http.MethodPost, "/api/v1/rollouts", map[string]any{"name": "r", "parallel_limit": 1,
		"tasks": []map[string]any{{"database": "a", "type": "DML", "version": "1", "executor": "noop"}}}, http.StatusCreated, &r)

	var fs api.FreezeStateView
	op.JSON(t, http.MethodPost, "/api/v1/freeze", map[string]any{"reason": "incident 42"}, http.StatusCreated, &fs)
	require.NotNil(t, fs.Frozen)
	require.Equal(t, "incident 42", fs.Frozen.Reason)
	require.Equal(t, "global", fs.Frozen.Scope)
	require.Regexp(t, `^token \d+ \(alice\)$`, fs.Frozen.FrozenBy)
	status, b := op.Do(t, http.MethodPost, "/api/v1/freeze", map[string]any{"reason": "again"})
	require.Equal(t, http.StatusConflict, status, "%s", b)
	require.Contains(t, string(b), "already frozen by token")

	var got api.RolloutView
	st.JSON(t, http.MethodGet, fmt.Sprintf("/api/v1/rollouts/%d", r.ID), nil, http.StatusOK, &got)
	require.NotNil(t, got.Frozen, "every rollout shows the global freeze")
	require.Equal(t, "incident 42", got.Frozen.Reason)

	viewer := st.As(st.NewToken(t, domain.RoleViewer, ""))
	status, _ = viewer.Do(t, http.MethodDelete, "/api/v1/freeze", nil)
	require.Equal(t, http.StatusForbidden, status, "a viewer may not lift it")
	st.JSON(t, http.MethodDelete, "/api/v1/freeze", nil, http.StatusOK, &fs)
	require.Nil(t, fs.Frozen)
	require.Len(t, fs.History, 1)
	require.Equal(t, "incident 42", fs.History[0].Reason)
	require.NotNil(t, fs.History[0].LiftedAt)
	require.Regexp(t, `^token \d+ \(teststack\)$`, *fs.History[0].LiftedBy)
	status, _ = st.Do(t, http.MethodDelete, "/api/v1/freeze", nil)
	require.Equal(t, http.StatusConflict, status, "nothing to lift")

	op.JSON(t, http.MethodPost, fmt.Sprintf("/api/v1/rollouts/%d/freeze", r.ID), map[string]any{"reason": "tenant on hold"}, http.StatusOK, &got)
	require.NotNil(t, got.Frozen)
	require.Equal(t, "rollout", got.Frozen.Scope)
	viewer.JSON(t, http.MethodGet, "/api/v1/freeze", nil, http.StatusOK, &fs)
	require.Nil(t, fs.Frozen)
	require.Len(t, fs.RolloutsFrozen, 1)
	require.Equal(t, r.ID, *fs.RolloutsFrozen[0].RolloutID)
	got = api.RolloutView{}
	op.JSON(t, http.MethodPost, fmt.Sprintf("/api/v1/rollouts/%d/unfreeze", r.ID), nil, http.StatusOK, &got)
	require.Nil(t, got.Frozen)
	require.Len(t, got.FreezeHistory, 1)
	status, _ = op.Do(t, http.MethodPost, fmt.Sprintf("/api/v1/rollouts/%d/unfreeze", r.ID), nil)
	require.Equal(t, http.StatusConflict, status)

	op.JSON(t, http.MethodPost, fmt.Sprintf("/api/v1/rollouts/%d/pause", r.ID), nil, http.StatusOK, &got)
	require.Equal(t, "PAUSED", got.Status)
	require.Regexp(t, `^paused by token \d+ \(alice\)$`, got.StatusReason)
	got = api.RolloutView{}
	op.JSON(t, http.MethodPost, fmt.Sprintf("/api/v1/rollouts/%d/resume", r.ID), nil, http.StatusOK, &got)
	require.Empty(t, got.StatusReason)
}

// A device task carries its rate and windows; while it runs outside its windows GET
// /tasks/{id} says so (the waiting cause names the next opening), and the agent's claim
// gets nothing.
func TestDeviceTaskWindowsAndRateOverHTTP(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	st.JSON(t, http.MethodPost, "/api/v1/pcs", map[string]any{"name": "rack-w", "device_capacity": 2}, http.StatusCreated, nil)
	st.JSON(t, http.MethodPost, "/api/v1/devices", map[string]any{"pc": "rack-w", "serial": "w-1"}, http.StatusCreated, nil)
	opens := time.Now().UTC().Truncate(time.Hour).Add(2 * time.Hour)
	var task api.DeviceTaskView
	st.JSON(t, http.MethodPost, "/api/v1/tasks", map[string]any{"payload": map[string]any{"cmd": "flash"},
		"rate":    map[string]any{"per_minute": 10, "exponential": map[string]any{"base_per_minute": 2, "factor": 2, "after_succeeded": 5}},
		"windows": []any{map[string]any{"cron": fmt.Sprintf("0 %d * * *", opens.Hour()), "duration": "30m"}},
	}, http.StatusCreated, &task)
	require.Equal(t, 10, *task.Rate.PerMinute)
	require.Len(t, task.Windows, 1)
	require.Equal(t, "UTC", task.Windows[0].Timezone)
	var got api.DeviceTaskView
	require.Eventually(t, func() bool {
		got = api.DeviceTaskView{}
		st.JSON(t, http.MethodGet, fmt.Sprintf("/api/v1/tasks/%d", task.ID), nil, http.StatusOK, &got)
		return got.Status == "running"
	}, 30*time.Second, 50*time.Millisecond)
	require.Equal(t, "outside every window; the next opens "+opens.Format("2006-01-02 15:04")+" UTC", got.WaitingCause)
	var claim struct {
		Items []api.DeviceExecutionDTO `json:"items"`
	}
	st.JSON(t, http.MethodPost, "/api/v1/agent/pcs/rack-w/claim", map[string]any{"max": 2}, http.StatusOK, &claim)
	require.Empty(t, claim.Items, "nothing is sent outside the windows")
}
