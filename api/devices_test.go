package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/dev/agentsim"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/store"
)

// deviceStack starts a stack on a task queue of its own: the device engine's workflow ids
// are scoped by task queue and numbered by database ids, so a second run of the same test
// (-count=2) against the same Temporal server must not meet the first run's workflows.
func deviceStack(t *testing.T, configure func(*config.Config)) *teststack.Stack {
	t.Helper()
	return teststack.Start(t, teststack.Options{Configure: func(c *config.Config) {
		c.TaskQueue = fmt.Sprintf("tq-%s-%d", t.Name(), time.Now().UnixNano())
		if configure != nil {
			configure(c)
		}
	}})
}

type deviceExecutionEventsPage struct {
	Items []api.DeviceExecutionEventView `json:"items"`
}

func deviceExecutionEventTypes(t *testing.T, st *teststack.Stack, id int64) []string {
	t.Helper()
	var page deviceExecutionEventsPage
	st.JSON(t, http.MethodGet, fmt.Sprintf("/api/v1/task-devices/%d/events", id), nil, http.StatusOK, &page)
	var out []string
	for _, e := range page.Items {
		out = append(out, fmt.Sprintf("%s#%d", e.Type, e.Attempt))
	}
	return out
}

// TestDevicesEndToEndWithAgentSim runs a PC with 25 devices and capacity 20 through the
// HTTP API with the simulated agent: never more than 20 commands are out, every device runs
// the task exactly once, and the failed first attempts of five devices are retried.
func TestDevicesEndToEndWithAgentSim(t *testing.T) {
	t.Parallel()
	st := deviceStack(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var pc api.PCView
	st.JSON(t, http.MethodPost, "/api/v1/pcs", map[string]any{"name": "rack-1"}, http.StatusCreated, &pc)
	require.Equal(t, int32(20), pc.DeviceCapacity, "capacity defaults to 20")
	for i := 0; i < 25; i++ {
		st.JSON(t, http.MethodPost, "/api/v1/devices", map[string]any{"pc": "rack-1", "serial": fmt.Sprintf("dev-%02d", i)}, http.StatusCreated, nil)
	}
	var task api.DeviceTaskView
	st.JSON(t, http.MethodPost, "/api/v1/tasks", map[string]any{"payload": map[string]any{"cmd": "flash", "build": 42}}, http.StatusCreated, &task)

	var mu sync.Mutex
	out, maxOut := 0, 0
	fleet := agentsim.Start(ctx, agentsim.Options{
		BaseURL: st.URL + "/api/v1", PCs: []string{"rack-1"}, Max: 25, Latency: 30 * time.Millisecond, Jitter: 20 * time.Millisecond, Ack: true,
		// The first attempt on dev-00…dev-04 fails (retryable); everything else succeeds.
		Decide: func(c agentsim.Command) agentsim.Outcome {
			if c.Attempt == 1 && c.Device < "dev-05" {
				return agentsim.Fail
			}
			return agentsim.Succeed
		},
		OnClaimed: func(c agentsim.Command, _ time.Time) {
			mu.Lock()
			defer mu.Unlock()
			out++
			maxOut = max(maxOut, out)
		},
		// Counted down before the result is posted: the server can only hand out the slot's
		// next command after that result commits, so this count bounds the server's.
		OnAnswering: func(agentsim.Command, agentsim.Outcome, time.Time) {
			mu.Lock()
			defer mu.Unlock()
			out--
		},
		Logf:  t.Logf,
		Token: st.NewToken(t, domain.RoleAgent, "rack-1"), // the PC's own agent token
	})
	defer fleet.Wait()
	defer cancel()

	// Meanwhile the PC's slots never exceed the target in SQL either.
	var slotViolations []string
	var samples int
	watcher := make(chan struct{})
	go func() {
		defer close(watcher)
		for ctx.Err() == nil {
			var v api.PCView
			code, body := st.Do(t, http.MethodGet, "/api/v1/pcs/rack-1", nil)
			if code == http.StatusOK && json.Unmarshal(body, &v) == nil && v.Slots != nil {
				mu.Lock()
				samples++
				if v.Slots.Running > v.Slots.Target {
					slotViolations = append(slotViolations, fmt.Sprintf("%+v", *v.Slots))
				}
				mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()

	var got api.DeviceTaskView
	require.Eventually(t, func() bool {
		st.JSON(t, http.MethodGet, fmt.Sprintf("/api/v1/tasks/%d", task.ID), nil, http.StatusOK, &got)
		return got.Status != "pending" && got.Status != "running"
	}, 90*time.Second, 100*time.Millisecond, "task never finished: %+v", fleet.Stats.String())
	cancel()
	<-watcher

	require.Equal(t, domain.DeviceTaskSuccess, got.Status, "stats: %s", fleet.Stats.String())
	require.Len(t, got.Devices, 25)
	seen := map[string]bool{}
	for _, td := range got.Devices {
		require.False(t, seen[td.Device], "device %s ran twice", td.Device)
		seen[td.Device] = true
		require.Equal(t, domain.ExecutionSucceeded, td.Status)
		require.Equal(t, "rack-1", td.PC)
		if td.Device < "dev-05" {
			require.Equal(t, int32(2), td.Attempt, "device %s was retried", td.Device)
			require.Equal(t, []string{"CREATED#1", "SENT#1", "ACKED#1", "FAILED#1", "RETRY_SCHEDULED#2", "SENT#2", "ACKED#2", "SUCCEEDED#2"},
				deviceExecutionEventTypes(t, st, td.ID))
		} else {
			require.Equal(t, int32(1), td.Attempt)
		}
	}
	mu.Lock()
	require.Equal(t, 20, maxOut, "the agent had exactly 20 commands out at the peak")
	require.Empty(t, slotViolations)
	require.NotZero(t, samples)
	mu.Unlock()
	require.Zero(t, fleet.Stats.Errors.Load())

	var detail api.PCView
	st.JSON(t, http.MethodGet, "/api/v1/pcs/rack-1", nil, http.StatusOK, &detail)
	require.Equal(t, api.PCSlots{Eligible: 25, Running: 0, Target: 20}, *detail.Slots)
	require.Len(t, detail.Devices, 25)

	// The executions page through GET /tasks/{id}/devices.
	var page struct {
		Items      []api.DeviceExecutionDTO `json:"items"`
		NextCursor string                   `json:"next_cursor"`
	}
	st.JSON(t, http.MethodGet, fmt.Sprintf("/api/v1/tasks/%d/devices?limit=20", task.ID), nil, http.StatusOK, &page)
	require.Len(t, page.Items, 20)
	require.NotEmpty(t, page.NextCursor)
	st.JSON(t, http.MethodGet, fmt.Sprintf("/api/v1/tasks/%d/devices?limit=20&cursor=%s", task.ID, page.NextCursor), nil, http.StatusOK, &page)
	require.Len(t, page.Items, 5)
	var devs struct {
		Items []api.DeviceView `json:"items"`
	}
	st.JSON(t, http.MethodGet, "/api/v1/devices?limit=100", nil, http.StatusOK, &devs)
	require.Len(t, devs.Items, 25)
}

// TestDevicesTimeoutOnRealServerAndLateResult uses a 1-second device timeout: a claimed
// command nobody answers times out through its PC timer, is retried, and a
// result for the timed-out attempt is answered 409 and recorded. Canceling the task
// activates the next one at once.
func TestDevicesTimeoutOnRealServerAndLateResult(t *testing.T) {
	t.Parallel()
	st := deviceStack(t, func(c *config.Config) { c.DeviceTimeout = time.Second })
	st.JSON(t, http.MethodPost, "/api/v1/pcs", map[string]any{"name": "solo", "device_capacity": 1}, http.StatusCreated, nil)
	st.JSON(t, http.MethodPost, "/api/v1/devices", map[string]any{"pc": "solo", "serial": "only-one"}, http.StatusCreated, nil)
	var t1, t2 api.DeviceTaskView
	st.JSON(t, http.MethodPost, "/api/v1/tasks", map[string]any{"payload": map[string]any{"n": 1}}, http.StatusCreated, &t1)
	st.JSON(t, http.MethodPost, "/api/v1/tasks", map[string]any{"payload": map[string]any{"n": 2}}, http.StatusCreated, &t2)

	var claim struct {
		Items []api.DeviceExecutionDTO `json:"items"`
	}
	require.Eventually(t, func() bool {
		st.JSON(t, http.MethodPost, "/api/v1/agent/pcs/solo/claim", map[string]any{"max": 5}, http.StatusOK, &claim)
		return len(claim.Items) == 1
	}, 30*time.Second, 50*time.Millisecond)
	cmd := claim.Items[0]
	require.Equal(t, t1.ID, cmd.TaskID)
	require.JSONEq(t, `{"n":1}`, string(cmd.Payload))
	require.Equal(t, time.Second, cmd.TimeoutAt.Sub(*cmd.SentAt))

	require.Eventually(t, func() bool {
		ev := deviceExecutionEventTypes(t, st, cmd.ID)
		return len(ev) >= 4 && ev[2] == "TIMEOUT#1" && ev[3] == "RETRY_SCHEDULED#2"
	}, 30*time.Second, 50*time.Millisecond)

	code, body := st.Do(t, http.MethodPost, fmt.Sprintf("/api/v1/agent/task-devices/%d/result", cmd.ID), map[string]any{"status": "succeeded", "attempt": 1})
	require.Equal(t, http.StatusConflict, code, "%s", body)
	require.Contains(t, string(body), "attempt")
	ev := deviceExecutionEventTypes(t, st, cmd.ID)
	require.Equal(t, "LATE_RESULT#1", ev[len(ev)-1])

	var got api.DeviceTaskView
	st.JSON(t, http.MethodGet, fmt.Sprintf("/api/v1/tasks/%d", t2.ID), nil, http.StatusOK, &got)
	require.Equal(t, domain.DeviceTaskPending, got.Status, "D1: the second task waits")
	st.JSON(t, http.MethodPost, fmt.Sprintf("/api/v1/tasks/%d/cancel", t1.ID), nil, http.StatusOK, &got)
	require.Equal(t, domain.DeviceTaskCanceled, got.Status)
	require.Eventually(t, func() bool {
		st.JSON(t, http.MethodGet, fmt.Sprintf("/api/v1/tasks/%d", t2.ID), nil, http.StatusOK, &got)
		return got.Status == domain.DeviceTaskRunning && len(got.Devices) == 1
	}, 30*time.Second, 50*time.Millisecond)
	st.JSON(t, http.MethodPost, fmt.Sprintf("/api/v1/tasks/%d/cancel", t1.ID), nil, http.StatusConflict, nil)

	// The canceled execution is counted under counts.canceled (one l, like every status).
	var raw struct {
		Counts map[string]int64 `json:"counts"`
	}
	st.JSON(t, http.MethodGet, fmt.Sprintf("/api/v1/tasks/%d", t1.ID), nil, http.StatusOK, &raw)
	require.Equal(t, map[string]int64{"active": 0, "succeeded": 0, "failed": 0, "canceled": 1}, raw.Counts)
}

// TestDevicesBadInput: bad requests get a 4xx problem naming the field and change nothing.
func TestDevicesBadInput(t *testing.T) {
	t.Parallel()
	st := deviceStack(t, nil)
	st.JSON(t, http.MethodPost, "/api/v1/pcs", map[string]any{"name": "p1"}, http.StatusCreated, nil)
	st.JSON(t, http.MethodPost, "/api/v1/devices", map[string]any{"pc": "p1", "serial": "s1"}, http.StatusCreated, nil)
	cases := []struct {
		method, path string
		body         any
		status       int
		field        string
	}{
		{"POST", "/api/v1/pcs", map[string]any{"name": "bad name"}, 400, "name"},
		{"POST", "/api/v1/pcs", map[string]any{"name": "p2", "device_capacity": 0}, 400, "device_capacity"},
		{"POST", "/api/v1/pcs", map[string]any{"name": "p2", "capacity": 5}, 400, "capacity"},
		{"POST", "/api/v1/pcs", map[string]any{"name": "p1"}, 409, "name"},
		{"POST", "/api/v1/devices", map[string]any{"pc": "nope", "serial": "s2"}, 404, "pc"},
		{"POST", "/api/v1/devices", map[string]any{"pc": "p1", "serial": "s1"}, 409, "serial"},
		{"PATCH", "/api/v1/devices/s1", map[string]any{"status": "broken"}, 400, "status"},
		{"PATCH", "/api/v1/devices/s1", map[string]any{"status": "busy"}, 400, "status"},  // never a status the engine sets
		{"PATCH", "/api/v1/devices/s1", map[string]any{"status": "error"}, 400, "status"}, // only a final failure sets it
		{"PATCH", "/api/v1/devices/missing", map[string]any{"status": "online"}, 404, ""},
		{"POST", "/api/v1/tasks", map[string]any{"payload": map[string]any{}, "target_count": 0}, 400, "target_count"},
		{"POST", "/api/v1/tasks", map[string]any{"abort": map[string]any{"min_executed": 1, "failed_percent": 150}}, 400, "abort.failed_percent"},
		{"POST", "/api/v1/tasks", `{"payload": {`, 400, ""},
		{"GET", "/api/v1/tasks/abc", nil, 400, "id"},
		{"GET", "/api/v1/tasks/999", nil, 404, ""},
		{"GET", "/api/v1/task-devices/999/events", nil, 404, ""},
		{"POST", "/api/v1/agent/pcs/p1/claim", map[string]any{"max": 0}, 400, "max"},
		{"POST", "/api/v1/agent/pcs/nope/claim", map[string]any{"max": 1}, 404, ""},
		{"POST", "/api/v1/agent/task-devices/1/result", map[string]any{"status": "done"}, 400, "status"},
		{"POST", "/api/v1/agent/task-devices/999/result", map[string]any{"status": "succeeded"}, 404, ""},
	}
	for _, c := range cases {
		code, body := st.Do(t, c.method, c.path, c.body)
		require.Equal(t, c.status, code, "%s %s: %s", c.method, c.path, body)
		require.Contains(t, string(body), `"status":`)
		if c.field != "" {
			require.Contains(t, string(body), `"field":"`+c.field+`"`, "%s %s: %s", c.method, c.path, body)
		}
	}
	var tasks struct {
		Items []api.DeviceTaskView `json:"items"`
	}
	st.JSON(t, http.MethodGet, "/api/v1/tasks", nil, http.StatusOK, &tasks)
	require.Empty(t, tasks.Items, "no bad request created a task")
	var pcs struct {
		Items []api.PCView `json:"items"`
	}
	st.JSON(t, http.MethodGet, "/api/v1/pcs", nil, http.StatusOK, &pcs)
	require.Len(t, pcs.Items, 1)
	require.True(t, strings.HasPrefix(pcs.Items[0].Name, "p1"))
}

// claimOne claims on pc until one command comes back.
func claimOne(t *testing.T, st *teststack.Stack, pc string) api.DeviceExecutionDTO {
	t.Helper()
	var claim struct {
		Items []api.DeviceExecutionDTO `json:"items"`
	}
	require.Eventually(t, func() bool {
		st.JSON(t, http.MethodPost, "/api/v1/agent/pcs/"+pc+"/claim", map[string]any{"max": 5}, http.StatusOK, &claim)
		return len(claim.Items) == 1
	}, 30*time.Second, 50*time.Millisecond)
	return claim.Items[0]
}

// TestDevicesNextTaskTakesTheConfiguredSettings: the configuration in force is 5 minutes
// and 5 attempts, while the running task was activated under an older one (20 minutes, 3
// attempts, as by a worker before its restart). A task activated after it ends — by a
// cancel or by its last result, both through the API — takes the configured settings,
// never the ended task's. No worker runs: the dispatcher would otherwise race the test's
// activations under the older settings (it is nudged after every advance), and it is the
// API's own advance this test is about.
func TestDevicesNextTaskTakesTheConfiguredSettings(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true, Configure: func(c *config.Config) {
		c.TaskQueue = fmt.Sprintf("tq-%s-%d", t.Name(), time.Now().UnixNano())
		c.DeviceTimeout, c.DeviceMaxAttempts = 5*time.Minute, 5
	}})
	ctx := context.Background()
	old := domain.DeviceSettings{MaxAttempts: 3, Timeout: 20 * time.Minute}
	st.JSON(t, http.MethodPost, "/api/v1/pcs", map[string]any{"name": "solo", "device_capacity": 1}, http.StatusCreated, nil)
	st.JSON(t, http.MethodPost, "/api/v1/devices", map[string]any{"pc": "solo", "serial": "only-one"}, http.StatusCreated, nil)
	var tasks []store.DeviceTask
	for i := 0; i < 4; i++ {
		task, err := st.Store.CreateDeviceTask(ctx, store.NewDeviceTask{})
		require.NoError(t, err)
		tasks = append(tasks, task)
	}
	requireSettings := func(cmd api.DeviceExecutionDTO, task store.DeviceTask, want domain.DeviceSettings) {
		t.Helper()
		require.Equal(t, task.ID, cmd.TaskID)
		require.Equal(t, want.Timeout, cmd.TimeoutAt.Sub(*cmd.SentAt), "deadline of task %d", task.ID)
		require.Equal(t, int32(want.MaxAttempts), cmd.MaxAttempts, "attempts of task %d", task.ID)
	}

	// Ended by a cancel.
	_, err := st.Store.Advance(ctx, old)
	require.NoError(t, err)
	requireSettings(claimOne(t, st, "solo"), tasks[0], old)
	st.JSON(t, http.MethodPost, fmt.Sprintf("/api/v1/tasks/%d/cancel", tasks[0].ID), nil, http.StatusOK, nil)
	requireSettings(claimOne(t, st, "solo"), tasks[1], st.Config.DeviceSettings())

	// Ended by its last result.
	_, err = st.Store.CancelDeviceTask(ctx, tasks[1].ID)
	require.NoError(t, err)
	_, err = st.Store.Advance(ctx, old)
	require.NoError(t, err)
	cmd := claimOne(t, st, "solo")
	requireSettings(cmd, tasks[2], old)
	st.JSON(t, http.MethodPost, fmt.Sprintf("/api/v1/agent/task-devices/%d/result", cmd.ID), map[string]any{"status": "succeeded"}, http.StatusOK, nil)
	requireSettings(claimOne(t, st, "solo"), tasks[3], st.Config.DeviceSettings())
}

// TestDevicesTaskWithNoEligibleDeviceFailsVisibly: a task created while no device can run
// it ends failed, with the reason in GET /tasks/{id}; the next task activates once a device
// is there.
func TestDevicesTaskWithNoEligibleDeviceFailsVisibly(t *testing.T) {
	t.Parallel()
	st := deviceStack(t, nil)
	var t1, t2, got api.DeviceTaskView
	st.JSON(t, http.MethodPost, "/api/v1/tasks", map[string]any{"payload": map[string]any{"n": 1}}, http.StatusCreated, &t1)
	require.Eventually(t, func() bool {
		st.JSON(t, http.MethodGet, fmt.Sprintf("/api/v1/tasks/%d", t1.ID), nil, http.StatusOK, &got)
		return got.Status != domain.DeviceTaskPending && got.Status != domain.DeviceTaskRunning
	}, 30*time.Second, 50*time.Millisecond)
	require.Equal(t, domain.DeviceTaskFailed, got.Status)
	require.Contains(t, got.Error, "no eligible device")
	require.NotNil(t, got.FinishedAt)
	require.Empty(t, got.Devices)

	st.JSON(t, http.MethodPost, "/api/v1/pcs", map[string]any{"name": "p1"}, http.StatusCreated, nil)
	st.JSON(t, http.MethodPost, "/api/v1/devices", map[string]any{"pc": "p1", "serial": "d1"}, http.StatusCreated, nil)
	st.JSON(t, http.MethodPost, "/api/v1/tasks", map[string]any{"payload": map[string]any{"n": 2}}, http.StatusCreated, &t2)
	require.Eventually(t, func() bool {
		st.JSON(t, http.MethodGet, fmt.Sprintf("/api/v1/tasks/%d", t2.ID), nil, http.StatusOK, &got)
		return got.Status == domain.DeviceTaskRunning && len(got.Devices) == 1
	}, 30*time.Second, 50*time.Millisecond)
}
