package teststack

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/client"
)

// Client is the typed Go client (package client) of the stack: its requests carry the
// stack's headers (the admin's token, or As's), its answers are checked against
// api/openapi.yaml (ContractClient: drift fails t), and each request is sent once — no
// retries — so a test sees the API's first answer.
func (s *Stack) Client(t testing.TB) *client.Client {
	t.Helper()
	opts := []client.Option{client.WithHTTP(ContractClient(t)), client.WithRetries(1, 0)}
	for k, v := range s.Headers {
		opts = append(opts, client.WithHeader(k, v))
	}
	c, err := client.New(s.URL, opts...)
	require.NoError(t, err)
	return c
}

// Body is v as a JSON request body for a generated ...WithBody operation.
func Body(t testing.TB, v any) io.Reader {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return bytes.NewReader(b)
}

// Decode reads a generated answer's raw body into out (a test's own view of it).
func Decode(t testing.TB, raw []byte, out any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(raw, out), "%s", raw)
}

// The operations tests use most, through the Go client (Client); a body a test writes as a
// map goes through an operation's ...WithBody form.

// CreateSchedule creates a schedule from a create body and answers it as created.
func (s *Stack) CreateSchedule(t testing.TB, body map[string]any) client.CreatedSchedule {
	t.Helper()
	r, err := s.Client(t).CreateScheduleWithBodyWithResponse(context.Background(), nil, "application/json", Body(t, body))
	require.NoError(t, err, "create %v", body["name"])
	require.NotNil(t, r.JSON201, "%s", r.Body)
	return *r.JSON201
}

// GetSchedule reads a schedule (GET /schedules/{name}) into out.
func (s *Stack) GetSchedule(t testing.TB, name string, out any) {
	t.Helper()
	r, err := s.Client(t).GetScheduleWithResponse(context.Background(), name)
	require.NoError(t, err, name)
	Decode(t, r.Body, out)
}

// Trigger fires a schedule now and answers what the API said.
func (s *Stack) Trigger(t testing.TB, name string) api.TriggerView {
	t.Helper()
	r, err := s.Client(t).TriggerScheduleWithResponse(context.Background(), name, nil, client.TriggerRequest{})
	require.NoError(t, err, name)
	var v api.TriggerView
	Decode(t, r.Body, &v)
	return v
}

// PatchSchedule changes a schedule (PATCH /schedules/{name}) with a body of its parts.
func (s *Stack) PatchSchedule(t testing.TB, name string, body map[string]any) {
	t.Helper()
	_, err := s.Client(t).UpdateScheduleWithBodyWithResponse(context.Background(), name, nil, "application/json", Body(t, body))
	require.NoError(t, err, name)
}

// CreateCalendar creates a calendar from a create body.
func (s *Stack) CreateCalendar(t testing.TB, body map[string]any) {
	t.Helper()
	_, err := s.Client(t).CreateCalendarWithBodyWithResponse(context.Background(), nil, "application/json", Body(t, body))
	require.NoError(t, err, "calendar %v", body["name"])
}

// CreateRollout creates a rollout from a create body and reads the answer into out.
func (s *Stack) CreateRollout(t testing.TB, body map[string]any, out any) {
	t.Helper()
	r, err := s.Client(t).CreateRolloutWithBodyWithResponse(context.Background(), nil, "application/json", Body(t, body))
	require.NoError(t, err, "rollout %v", body["name"])
	if out != nil {
		Decode(t, r.Body, out)
	}
}

// RolloutTasks lists a rollout's task runs (the first page) into out.
func (s *Stack) RolloutTasks(t testing.TB, id int64, out any) {
	t.Helper()
	r, err := s.Client(t).ListRolloutTasksWithResponse(context.Background(), id, nil)
	require.NoError(t, err)
	Decode(t, r.Body, out)
}

// DeadLetter lists the dead letter (GET /runs?dead_letter=true) into out.
func (s *Stack) DeadLetter(t testing.TB, out any) {
	t.Helper()
	yes := true
	r, err := s.Client(t).ListRunsWithResponse(context.Background(), &client.ListRunsParams{DeadLetter: &yes})
	require.NoError(t, err)
	Decode(t, r.Body, out)
}

// ScheduleRuns lists a schedule's runs (the first page) into out.
func (s *Stack) ScheduleRuns(t testing.TB, name string, out any) {
	t.Helper()
	r, err := s.Client(t).ListScheduleRunsWithResponse(context.Background(), name, nil)
	require.NoError(t, err)
	Decode(t, r.Body, out)
}
