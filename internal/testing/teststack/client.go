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

// Pause pauses a schedule with a note; Resume resumes it.
func (s *Stack) Pause(t testing.TB, name, note string) {
	t.Helper()
	_, err := s.Client(t).PauseScheduleWithResponse(context.Background(), name, client.PauseRequest{Note: &note})
	require.NoError(t, err, name)
}

func (s *Stack) Resume(t testing.TB, name string) {
	t.Helper()
	_, err := s.Client(t).ResumeScheduleWithResponse(context.Background(), name, client.ResumeRequest{})
	require.NoError(t, err, name)
}

// Backfill runs a schedule's ticks of a past range (a backfill body) and answers how many.
func (s *Stack) Backfill(t testing.TB, name string, body map[string]any) int {
	t.Helper()
	r, err := s.Client(t).BackfillScheduleWithBodyWithResponse(context.Background(), name, "application/json", Body(t, body))
	require.NoError(t, err, name)
	var v api.BackfillView
	Decode(t, r.Body, &v)
	return v.Ticks
}

// ScheduleHistory lists a schedule's history (the first page) into out.
func (s *Stack) ScheduleHistory(t testing.TB, name string, out any) {
	t.Helper()
	r, err := s.Client(t).ListScheduleHistoryWithResponse(context.Background(), name, nil)
	require.NoError(t, err, name)
	Decode(t, r.Body, out)
}

// CreatePC adds a PC of capacity device slots; CreateDevice a device to it.
func (s *Stack) CreatePC(t testing.TB, name string, capacity int) {
	t.Helper()
	_, err := s.Client(t).CreatePCWithResponse(context.Background(), nil, client.CreatePCRequest{Name: name, DeviceCapacity: &capacity})
	require.NoError(t, err, name)
}

func (s *Stack) CreateDevice(t testing.TB, pc, serial string) {
	t.Helper()
	_, err := s.Client(t).CreateDeviceWithResponse(context.Background(), nil, client.CreateDeviceRequest{Pc: pc, Serial: serial})
	require.NoError(t, err, serial)
}

// CreateTask queues a device task from a create body and reads the answer into out.
func (s *Stack) CreateTask(t testing.TB, body map[string]any, out any) {
	t.Helper()
	r, err := s.Client(t).CreateTaskWithBodyWithResponse(context.Background(), nil, "application/json", Body(t, body))
	require.NoError(t, err)
	if out != nil {
		Decode(t, r.Body, out)
	}
}

// Claim takes a PC's pending commands as its agent (the stack's token) into out.
func (s *Stack) Claim(t testing.TB, pc string, maxN int, out any) {
	t.Helper()
	r, err := s.Client(t).AgentClaimWithBodyWithResponse(context.Background(), pc, nil, "application/json", Body(t, map[string]any{"max": maxN}))
	require.NoError(t, err, pc)
	Decode(t, r.Body, out)
}

// AgentResult reports an execution's result as its PC's agent and reads the answer into out.
func (s *Stack) AgentResult(t testing.TB, id int64, body map[string]any, out any) {
	t.Helper()
	r, err := s.Client(t).AgentReportResultWithBodyWithResponse(context.Background(), id, nil, "application/json", Body(t, body))
	require.NoError(t, err)
	if out != nil {
		Decode(t, r.Body, out)
	}
}

// TaskRunResult reports an external task run's result.
func (s *Stack) TaskRunResult(t testing.TB, id int64, body map[string]any) {
	t.Helper()
	_, err := s.Client(t).ReportTaskRunResultWithBodyWithResponse(context.Background(), id, "application/json", Body(t, body))
	require.NoError(t, err)
}

// TaskRunAct retries, skips or cancels a task run (verb "retry", "skip", "cancel").
func (s *Stack) TaskRunAct(t testing.TB, id int64, verb string) {
	t.Helper()
	c, ctx := s.Client(t), context.Background()
	var err error
	switch verb {
	case "retry":
		_, err = c.RetryTaskRunWithResponse(ctx, id)
	case "skip":
		_, err = c.SkipTaskRunWithResponse(ctx, id)
	case "cancel":
		_, err = c.CancelTaskRunWithResponse(ctx, id)
	default:
		t.Fatalf("no task run verb %q", verb)
	}
	require.NoError(t, err, "%s task run %d", verb, id)
}

// RolloutAct pauses, resumes or cancels a rollout (verb "pause", "resume", "cancel").
func (s *Stack) RolloutAct(t testing.TB, id int64, verb string) {
	t.Helper()
	c, ctx := s.Client(t), context.Background()
	var err error
	switch verb {
	case "pause":
		_, err = c.PauseRolloutWithResponse(ctx, id)
	case "resume":
		_, err = c.ResumeRolloutWithResponse(ctx, id)
	case "cancel":
		_, err = c.CancelRolloutWithResponse(ctx, id)
	default:
		t.Fatalf("no rollout verb %q", verb)
	}
	require.NoError(t, err, "%s rollout %d", verb, id)
}

// GetRollout, GetTaskRun and GetTask read one resource into out.
func (s *Stack) GetRollout(t testing.TB, id int64, out any) {
	t.Helper()
	r, err := s.Client(t).GetRolloutWithResponse(context.Background(), id)
	require.NoError(t, err)
	Decode(t, r.Body, out)
}

func (s *Stack) GetTaskRun(t testing.TB, id int64, out any) {
	t.Helper()
	r, err := s.Client(t).GetTaskRunWithResponse(context.Background(), id)
	require.NoError(t, err)
	Decode(t, r.Body, out)
}

func (s *Stack) GetTask(t testing.TB, id int64, out any) {
	t.Helper()
	r, err := s.Client(t).GetTaskWithResponse(context.Background(), id)
	require.NoError(t, err)
	Decode(t, r.Body, out)
}
