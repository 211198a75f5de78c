package e2e

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/client"
	"github.com/tickgate/tickgate/internal/testing/teststack"
)

// The e2e tests drive the API through the Go client (package client): the generated
// operations, with the stack's token, each answer checked against the OpenAPI document
// (teststack.Stack.Client). A body a test writes as a map goes through an operation's
// ...WithBody form.

// createSchedule creates a schedule from a create body and answers it as created.
func createSchedule(t *testing.T, st *teststack.Stack, body map[string]any) client.CreatedSchedule {
	t.Helper()
	r, err := st.Client(t).CreateScheduleWithBodyWithResponse(t.Context(), nil, "application/json", teststack.Body(t, body))
	require.NoError(t, err, "create %v", body["name"])
	require.NotNil(t, r.JSON201, "%s", r.Body)
	return *r.JSON201
}

// decode reads a generated answer's raw body into out (a test's own view of it).
func decode(t *testing.T, raw []byte, out any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(raw, out), "%s", raw)
}

// getSchedule reads a schedule (GET /schedules/{name}) into out.
func getSchedule(t *testing.T, st *teststack.Stack, name string, out any) {
	t.Helper()
	r, err := st.Client(t).GetScheduleWithResponse(t.Context(), name)
	require.NoError(t, err, name)
	decode(t, r.Body, out)
}

// triggerSchedule fires a schedule now and answers what the API said.
func triggerSchedule(t *testing.T, st *teststack.Stack, name string) api.TriggerView {
	t.Helper()
	r, err := st.Client(t).TriggerScheduleWithResponse(t.Context(), name, nil, client.TriggerRequest{})
	require.NoError(t, err, name)
	var v api.TriggerView
	decode(t, r.Body, &v)
	return v
}

// patchSchedule changes a schedule (PATCH /schedules/{name}) with a body of its parts.
func patchSchedule(t *testing.T, st *teststack.Stack, name string, body map[string]any) {
	t.Helper()
	_, err := st.Client(t).UpdateScheduleWithBodyWithResponse(t.Context(), name, nil, "application/json", teststack.Body(t, body))
	require.NoError(t, err, name)
}

// createCalendar creates a calendar from a create body.
func createCalendar(t *testing.T, st *teststack.Stack, body map[string]any) {
	t.Helper()
	_, err := st.Client(t).CreateCalendarWithBodyWithResponse(t.Context(), nil, "application/json", teststack.Body(t, body))
	require.NoError(t, err, "calendar %v", body["name"])
}

// createRollout creates a rollout from a create body and reads the answer into out.
func createRollout(t *testing.T, st *teststack.Stack, body map[string]any, out any) {
	t.Helper()
	r, err := st.Client(t).CreateRolloutWithBodyWithResponse(t.Context(), nil, "application/json", teststack.Body(t, body))
	require.NoError(t, err, "rollout %v", body["name"])
	if out != nil {
		decode(t, r.Body, out)
	}
}
