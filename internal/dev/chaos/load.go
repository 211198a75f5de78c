package chaos

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/client"
)

// overlapPolicies are cycled through by the workflow-action schedules.
var overlapPolicies = []string{"skip", "buffer_one", "buffer_all", "cancel_other", "terminate_other", "allow_all"}

// apiClient calls the tickgate APIs with the run's admin token, as clients behind a load
// balancer do: each call goes to the next API in turn, and a call that finds its API down
// (it is one of the things the run kills) or answering 5xx is sent to the other one, for
// up to a minute. Any other error is returned at once. A POST carries an Idempotency-Key
// that its resends keep, so a create whose first answer was lost — whichever API it
// reached — does not create twice.
type apiClient struct {
	clients []*client.Client
	next    atomic.Uint64
}

func newAPIClient(token string, addrs []string) *apiClient {
	c := &apiClient{}
	for _, a := range addrs {
		// One attempt per call: do() itself sends it to the other API when this one is down.
		api, err := client.New("http://"+a, client.WithToken(token), client.WithRetries(1, 0))
		if err != nil {
			panic(err) // addrs are the run's own host:port pairs
		}
		c.clients = append(c.clients, api)
	}
	return c
}

func (c *apiClient) do(ctx context.Context, method, path string, body, out any) error {
	var key []client.RequestEditorFn
	if method == http.MethodPost {
		key = append(key, client.WithIdempotencyKey(fmt.Sprintf("chaos-%d", rand.Uint64()))) // #nosec G404 -- an idempotency key unique per request, no secret
	}
	deadline := time.Now().Add(time.Minute)
	for {
		call := c.clients[c.next.Add(1)%uint64(len(c.clients))]
		err := call.DoJSON(ctx, method, path, body, out, key...)
		if err == nil {
			return nil
		}
		var unreachable *client.TransportError
		down := errors.As(err, &unreachable) || client.StatusOf(err) >= 500
		if !down || time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s %s%s: %w", method, call.Server, path, err)
		}
		sleepCtx(ctx, 500*time.Millisecond)
	}
}

// load is what the run created, for the checker.
type load struct {
	startAt   time.Time // first tick of every schedule
	resting   []string  // the schedules that rest between fires
	rolloutID int64
	// wavesRolloutID is the progressive scenario's rollout (0: none).
	wavesRolloutID int64
	// externalRolloutID is the external executors' rollout (0: none).
	externalRolloutID int64
	deviceTask        []int64
	pcNames           []string
}

// createLoad creates the schedules, the rollout, the PCs, devices and device tasks.
func createLoad(ctx context.Context, c *apiClient, p Profile, targetQueue string, hooks *httpLoad) (*load, error) {
	// Every schedule starts at the same whole second, a little ahead, so its ticks are
	// start_at + n·interval and the checker can enumerate them.
	l := &load{startAt: time.Now().UTC().Truncate(time.Second).Add(15 * time.Second)}
	for i := 0; i < p.EventSchedules; i++ {
		body := map[string]any{
			"name": fmt.Sprintf("chaos-event-%03d", i),
			"spec": map[string]any{"interval": map[string]any{"every": 1, "unit": "SECONDS"}, "start_at": l.startAt.Format(time.RFC3339)},
			"action": map[string]any{"kind": "event", "topic": "chaos", "type": "tick",
				"data": map[string]any{"schedule": i}},
			"policies": map[string]any{"catchup_window": p.CatchupWindow.String()},
			"labels":   chaosLabel(),
		}
		if err := c.do(ctx, http.MethodPost, "/api/v1/schedules", body, nil); err != nil {
			return nil, err
		}
	}
	for i := 0; i < p.WorkflowSchedules; i++ {
		overlap := overlapPolicies[i%len(overlapPolicies)]
		input := TargetInput{MinMs: p.TargetMin.Milliseconds(), MaxMs: p.TargetMax.Milliseconds(), FailPercent: 10}
		if strings.HasPrefix(overlap, "buffer_") {
			input.MaxMs = p.BufferedTargetMax.Milliseconds()
		}
		body := map[string]any{
			"name": fmt.Sprintf("chaos-workflow-%02d-%s", i, overlap),
			"spec": map[string]any{"interval": p.WorkflowEvery.String(), "start_at": l.startAt.Format(time.RFC3339)},
			"action": map[string]any{"kind": "workflow", "workflow_type": TargetWorkflowName, "task_queue": targetQueue,
				"input": input},
			"policies": map[string]any{"overlap": overlap, "catchup_window": p.CatchupWindow.String()},
			"labels":   chaosLabel(),
		}
		if err := c.do(ctx, http.MethodPost, "/api/v1/schedules", body, nil); err != nil {
			return nil, err
		}
	}
	if err := hooks.create(ctx, c, p, l.startAt); err != nil {
		return nil, err
	}
	if err := createCapped(ctx, c, p, l, targetQueue); err != nil {
		return nil, err
	}
	if err := createCommandSchedules(ctx, c, p, l, targetQueue); err != nil {
		return nil, err
	}

	for i := 0; i < p.RestingSchedules; i++ {
		overlap := []string{"skip", "allow_all"}[i%2]
		name := fmt.Sprintf("chaos-resting-%02d-%s", i, overlap)
		body := map[string]any{
			"name": name,
			"spec": map[string]any{"interval": p.RestingEvery.String(), "start_at": l.startAt.Format(time.RFC3339)},
			"action": map[string]any{"kind": "workflow", "workflow_type": TargetWorkflowName, "task_queue": targetQueue,
				"input": TargetInput{MinMs: p.TargetMin.Milliseconds(), MaxMs: p.TargetMax.Milliseconds(), FailPercent: 10}},
			"policies": map[string]any{"overlap": overlap, "catchup_window": p.CatchupWindow.String()},
			"labels":   chaosLabel(),
		}
		if err := c.do(ctx, http.MethodPost, "/api/v1/schedules", body, nil); err != nil {
			return nil, err
		}
		l.resting = append(l.resting, name)
	}

	var rollout struct {
		ID int64 `json:"id"`
	}
	if err := c.do(ctx, http.MethodPost, "/api/v1/rollouts", rolloutRequest(p), &rollout); err != nil {
		return nil, err
	}
	l.rolloutID = rollout.ID
	if p.WaveDatabases > 0 {
		if err := c.do(ctx, http.MethodPost, "/api/v1/rollouts", wavesRolloutRequest(p), &rollout); err != nil {
			return nil, err
		}
		l.wavesRolloutID = rollout.ID
	}
	if p.ExternalTasks > 0 {
		if err := c.do(ctx, http.MethodPost, "/api/v1/rollouts", externalRolloutRequest(p), &rollout); err != nil {
			return nil, err
		}
		l.externalRolloutID = rollout.ID
	}

	for i := 0; i < p.PCs; i++ {
		pc := fmt.Sprintf("chaos-pc-%02d", i)
		l.pcNames = append(l.pcNames, pc)
		if err := c.do(ctx, http.MethodPost, "/api/v1/pcs", map[string]any{"name": pc}, nil); err != nil {
			return nil, err
		}
		for d := 0; d < p.DevicesPerPC; d++ {
			serial := fmt.Sprintf("%s-dev-%02d", pc, d)
			if err := c.do(ctx, http.MethodPost, "/api/v1/devices", map[string]any{"pc": pc, "serial": serial}, nil); err != nil {
				return nil, err
			}
		}
	}
	for i := 0; i < p.DeviceTasks; i++ {
		var task struct {
			ID int64 `json:"id"`
		}
		if err := c.do(ctx, http.MethodPost, "/api/v1/tasks", map[string]any{"payload": map[string]any{"chaos": i}}, &task); err != nil {
			return nil, err
		}
		l.deviceTask = append(l.deviceTask, task.ID)
	}
	return l, nil
}

// triggerResting sends a manual trigger to each resting schedule in turn, every
// p.TriggerEvery until ctx ends, as a user would through the API (each POST with an
// Idempotency-Key its resends keep: a trigger whose answer was lost is not fired twice). It
// answers how many were answered and how many failed.
func triggerResting(ctx context.Context, c *apiClient, p Profile, names []string, logf func(string, ...any)) (sent, failed int) {
	if len(names) == 0 || p.TriggerEvery <= 0 {
		return 0, 0
	}
	for i := 0; ; i++ {
		sleepCtx(ctx, p.TriggerEvery)
		if ctx.Err() != nil {
			return sent, failed
		}
		name := names[i%len(names)]
		if err := c.do(ctx, http.MethodPost, "/api/v1/schedules/"+name+"/trigger", map[string]any{}, nil); err != nil {
			if ctx.Err() != nil {
				return sent, failed
			}
			failed++
			logf("chaos: trigger %s: %v", name, err)
			continue
		}
		sent++
	}
}

// rolloutRequest spreads the tasks over the databases: per database, versions 1.0, 1.1, …
// in groups of four tasks sharing a version; a third of the groups are DDL (one at a time
// per database, R1), the rest DML (parallel, up to the rollout's limit, R3), and every
// group waits for the smaller versions on its database (R2). A few tasks have a run_at a
// little ahead (the run-at gate).
func rolloutRequest(p Profile) map[string]any {
	tasks := make([]map[string]any, 0, p.RolloutTasks)
	runAt := time.Now().UTC().Add(45 * time.Second).Format(time.RFC3339)
	for i := 0; i < p.RolloutTasks; i++ {
		db := i % p.RolloutDatabases
		n := i / p.RolloutDatabases // the task's index on its database
		group := n / 4
		typ := "DML"
		if group%3 == 0 {
			typ = "DDL"
		}
		t := map[string]any{
			"database": fmt.Sprintf("chaos_db_%02d", db), "type": typ, "version": fmt.Sprintf("1.%d", group),
			"executor": "noop", "payload": map[string]any{"sleep": fmt.Sprintf("%dms", 20+rand.IntN(150))}, // #nosec G404 -- a task's simulated duration
		}
		if i%97 == 0 {
			t["run_at"] = runAt
		}
		tasks = append(tasks, t)
	}
	return map[string]any{"name": "chaos-rollout", "parallel_limit": p.ParallelLimit, "tasks": tasks}
}

// TargetWorkflowName is the workflow the workflow-action schedules start; the chaos run
// serves it from its own worker.
const TargetWorkflowName = "ChaosTarget"

// TargetInput sizes one run of the target workflow.
type TargetInput struct {
	MinMs       int64 `json:"min_ms"`
	MaxMs       int64 `json:"max_ms"`
	FailPercent int   `json:"fail_percent"`
}

// TargetWorkflow sleeps a duration between MinMs and MaxMs and fails FailPercent of the
// time; both are derived from the workflow id, so replays decide the same.
func TargetWorkflow(ctx workflow.Context, in TargetInput) error {
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	sum := h.Sum64()
	d := time.Duration(in.MinMs) * time.Millisecond
	if span := in.MaxMs - in.MinMs; span > 0 {
		d += time.Duration(int64(sum%uint64(span))) * time.Millisecond // #nosec G115 -- sum % span is below span, an int64
	}
	if err := workflow.Sleep(ctx, d); err != nil {
		return err
	}
	if targetFails(id, in) {
		return temporal.NewApplicationError("simulated failure of a scheduled run", "ChaosFailure")
	}
	return nil
}
