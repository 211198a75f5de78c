package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/internal/testing/teststack"
)

// TestRolloutStatusThroughAPI: GET /rollouts/{id} and GET /rollouts answer the store's
// derived status — CANCELED for a rollout whose every task was skipped (nothing ran),
// FAILED once its external task reports a failure, PAUSED while paused with work left.
func TestRolloutStatusThroughAPI(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	later := time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)
	statusOf := func(id int64) string {
		var one api.RolloutView
		st.JSON(t, http.MethodGet, fmt.Sprintf("/api/v1/rollouts/%d", id), nil, http.StatusOK, &one)
		var page struct {
			Items []api.RolloutView `json:"items"`
		}
		st.JSON(t, http.MethodGet, "/api/v1/rollouts?limit=1&cursor="+url.QueryEscape(api.IntCursor(id-1)), nil, http.StatusOK, &page)
		require.Len(t, page.Items, 1)
		require.Equal(t, one.Status, page.Items[0].Status, "GET /rollouts and GET /rollouts/{id} agree")
		return one.Status
	}

	var skipped api.RolloutView
	st.JSON(t, http.MethodPost, "/api/v1/rollouts", map[string]any{"name": "all-skipped", "parallel_limit": 2, "tasks": []map[string]any{
		{"database": "a", "type": "DML", "version": "1", "executor": "noop", "run_at": later},
		{"database": "b", "type": "DML", "version": "1", "executor": "noop", "run_at": later},
	}}, http.StatusCreated, &skipped)
	require.Equal(t, "RUNNING", skipped.Status)
	var paused api.RolloutView
	st.JSON(t, http.MethodPost, fmt.Sprintf("/api/v1/rollouts/%d/pause", skipped.ID), nil, http.StatusOK, &paused)
	require.Equal(t, "PAUSED", paused.Status)
	require.Equal(t, "PAUSED", statusOf(skipped.ID))
	for _, task := range rolloutTasks(t, st, skipped.ID, "") {
		st.JSON(t, http.MethodPost, fmt.Sprintf("/api/v1/task-runs/%d/skip", task.ID), nil, http.StatusOK, nil)
	}
	require.Equal(t, "CANCELED", statusOf(skipped.ID), "no task ran")

	var failing api.RolloutView
	st.JSON(t, http.MethodPost, "/api/v1/rollouts", map[string]any{"name": "refused", "parallel_limit": 2, "tasks": []map[string]any{
		{"database": "c", "type": "DDL", "version": "1", "executor": "external"},
		{"database": "d", "type": "DML", "version": "1", "executor": "noop"},
	}}, http.StatusCreated, &failing)
	tasks := rolloutTasks(t, st, failing.ID, "")
	waitTaskStatus(t, st, tasks[1].ID, "DONE")
	waitTaskStatus(t, st, tasks[0].ID, "RUNNING")
	require.Equal(t, "RUNNING", statusOf(failing.ID), "the external task is still running")
	st.JSON(t, http.MethodPost, fmt.Sprintf("/api/v1/task-runs/%d/result", tasks[0].ID),
		map[string]any{"status": "FAILED", "error": "refused by the DBA"}, http.StatusAccepted, nil)
	waitTaskStatus(t, st, tasks[0].ID, "FAILED")
	require.Equal(t, "FAILED", statusOf(failing.ID))
}
