package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
)

// PUT is a door like POST and PATCH: an http action's header values are write-only through
// it too, and an apply of the same file (the same values) changes nothing; tickgate's own
// workflows are refused as a workflow action's target.
func TestPutKeepsHeaderValuesWriteOnlyAndUnchangedOnReapply(t *testing.T) {
	t.Parallel()
	st := httpStack(t)
	ctx := context.Background()
	const token = "Bearer put-s3cret-value"
	body := map[string]any{"name": "put-hdr", "spec": map[string]any{"interval": "1h"},
		"action": map[string]any{"kind": "http", "url": "https://example.com/hook", "headers": map[string]any{"Authorization": token}}}

	status, b := st.Do(t, http.MethodPut, "/api/v1/schedules/put-hdr", body)
	require.Equal(t, http.StatusCreated, status, "%s", b)
	require.NotContains(t, string(b), token, "the answer names the header only")
	var created api.AppliedScheduleView
	require.NoError(t, json.Unmarshal(b, &created))
	require.NotEmpty(t, created.SigningSecret, "a created http schedule shows its secret once")
	values, err := st.Store.ScheduleHeaderValues(ctx, "put-hdr")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"Authorization": token}, values)
	row, err := st.Store.GetSchedule(ctx, "put-hdr")
	require.NoError(t, err)
	require.NotContains(t, string(row.Action), token)

	// The same file again: nothing changes, however the values are hidden from views.
	var again api.AppliedScheduleView
	st.JSON(t, http.MethodPut, "/api/v1/schedules/put-hdr", body, http.StatusOK, &again)
	require.Equal(t, api.OutcomeUnchanged, again.Outcome)
	require.Empty(t, again.Changes)
	require.Empty(t, again.SigningSecret)
	after, err := st.Store.GetSchedule(ctx, "put-hdr")
	require.NoError(t, err)
	require.Equal(t, row.Version, after.Version)

	// A new value is a change, recorded by the header's name only.
	body["action"].(map[string]any)["headers"] = map[string]any{"Authorization": "Bearer rotated-value"}
	var changed api.AppliedScheduleView
	status, b = st.Do(t, http.MethodPut, "/api/v1/schedules/put-hdr", body)
	require.Equal(t, http.StatusOK, status, "%s", b)
	require.NotContains(t, string(b), "rotated-value")
	require.NoError(t, json.Unmarshal(b, &changed))
	require.Equal(t, api.OutcomeUpdated, changed.Outcome)
	require.Len(t, changed.Changes, 1)
	require.Equal(t, "action.header_values", changed.Changes[0].Field)
	values, err = st.Store.ScheduleHeaderValues(ctx, "put-hdr")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"Authorization": "Bearer rotated-value"}, values)

	// Named without a value: the stored one is kept, and nothing changes.
	var kept api.AppliedScheduleView
	st.JSON(t, http.MethodPut, "/api/v1/schedules/put-hdr", map[string]any{"name": "put-hdr", "spec": map[string]any{"interval": "1h"},
		"action": map[string]any{"kind": "http", "url": "https://example.com/hook", "header_names": []string{"Authorization"}}}, http.StatusOK, &kept)
	require.Equal(t, api.OutcomeUnchanged, kept.Outcome)

	problem(t, st, http.MethodPut, "/api/v1/schedules/put-own", map[string]any{"name": "put-own", "spec": map[string]any{"interval": "1h"},
		"action": map[string]any{"kind": "workflow", "workflow_type": "HTTPDeliveryWorkflow", "task_queue": "reports"}}, http.StatusBadRequest, "action.workflow_type")
}
