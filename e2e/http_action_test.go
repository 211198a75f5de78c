package e2e

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/client"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/dev/chaos/invariants"
	"github.com/tickgate/tickgate/internal/dev/receiver"
	"github.com/tickgate/tickgate/internal/outbound"
	"github.com/tickgate/tickgate/internal/testing/teststack"
)

// secrets keeps the signing secrets the create answers showed, for the receiver.
type secrets struct {
	mu sync.Mutex
	m  map[string]string
}

func (s *secrets) set(name, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[name] = secret
}

func (s *secrets) get(name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[name]
	return v, ok
}

// deliveries is the receiver's view in the invariants' terms.
func deliveries(r *receiver.Receiver) map[string]invariants.HTTPDelivery {
	out := map[string]invariants.HTTPDelivery{}
	for k, d := range r.Deliveries() {
		out[k] = invariants.HTTPDelivery{Key: k, Executions: d.Executions, BadSignatures: d.BadSignatures}
	}
	return out
}

// TestHTTPActionEndToEnd runs http actions on the whole product against a local receiver
// that verifies every signature. A schedule at rest fires every 2 s through the planner
// (armed with a start delay): each tick's first attempt is answered 503, its retry 200, so
// each run records both attempts and SUCCEEDED, and the receiver executed each tick's key
// once. A manual trigger of another schedule, whose receiver fails, ends FAILED with the
// reason and is listed in the dead letter; once the receiver is fixed, its redrive delivers
// the same key again and the run SUCCEEDED. The receiver's view and the runs agree
// (invariants.CheckHTTP).
func TestHTTPActionEndToEnd(t *testing.T) {
	t.Parallel()
	rcv, err := receiver.Start()
	require.NoError(t, err)
	t.Cleanup(rcv.Close)
	keys := &secrets{m: map[string]string{}}
	rcv.Secret = keys.get
	var failing atomic.Bool
	failing.Store(true)
	rcv.Answer = func(key string, attempt int) receiver.Answer {
		if strings.Contains(key, "@manual/") {
			if failing.Load() {
				return receiver.Answer{Status: http.StatusInternalServerError}
			}
			return receiver.Answer{}
		}
		if attempt == 1 {
			return receiver.Answer{Status: http.StatusServiceUnavailable}
		}
		return receiver.Answer{}
	}
	st := teststack.Start(t, teststack.Options{Configure: func(c *config.Config) {
		rule, err := outbound.Parse("127.0.0.1")
		require.NoError(t, err)
		c.HTTPAllow = rule
	}})
	ctx := context.Background()
	c := st.Client(t)
	create := func(name, spec string) client.CreatedSchedule {
		created := st.CreateSchedule(t, map[string]any{
			"name": name, "spec": map[string]any{"interval": spec},
			"action": map[string]any{"kind": "http", "url": rcv.URL() + "/hooks/" + name, "body": map[string]any{"schedule": name}},
			"retry":  map[string]any{"max_attempts": 3, "initial_backoff": "200ms", "max_backoff": "1s"},
		})
		require.NotEmpty(t, *created.SigningSecret)
		keys.set(name, *created.SigningSecret)
		return created
	}

	create("e2e-hook", "2s")
	row, err := st.Store.GetSchedule(ctx, "e2e-hook")
	require.NoError(t, err)
	var succeeded []api.RunView
	require.Eventually(t, func() bool {
		succeeded = nil
		for _, r := range listRuns(t, st, "e2e-hook") {
			if r.Status == domain.RunSucceeded {
				succeeded = append(succeeded, r)
			}
		}
		return len(succeeded) >= 2
	}, time.Minute, 200*time.Millisecond, "two ticks delivered")
	for _, r := range succeeded {
		require.Equal(t, domain.TriggerScheduled, r.Trigger)
		require.Len(t, r.Attempts, 2, "run %d: the 503, then the 200", r.ID)
		require.Equal(t, "retryable", r.Attempts[0].Outcome)
		require.Equal(t, 503, *r.Attempts[0].StatusCode)
		require.Equal(t, "succeeded", r.Attempts[1].Outcome)
		require.Equal(t, 200, *r.Attempts[1].StatusCode)
		d := rcv.Deliveries()[domain.TickKey(row.ID, r.ScheduledAt)]
		require.Equal(t, 2, d.Requests, "the tick's key came twice: its attempts")
		require.Equal(t, 1, d.Executions, "and was executed once")
		require.Zero(t, d.BadSignatures)
		require.Equal(t, "e2e-hook", d.Schedule)
		require.True(t, d.ScheduledAt.Equal(r.ScheduledAt))
	}

	// A manual run whose receiver fails: FAILED with the reason, in the dead letter.
	create("e2e-dead", "1h")
	var trig api.TriggerView
	tr, err := c.TriggerScheduleWithResponse(ctx, "e2e-dead", nil, client.TriggerRequest{})
	require.NoError(t, err)
	teststack.Decode(t, tr.Body, &trig)
	require.NotNil(t, trig.Run)
	runID := trig.Run.ID
	run := func() api.RunView {
		for _, r := range listRuns(t, st, "e2e-dead") {
			if r.ID == runID {
				return r
			}
		}
		t.Fatalf("run %d is not listed", runID)
		return api.RunView{}
	}
	require.Eventually(t, func() bool { return run().Status == domain.RunFailed }, time.Minute, 200*time.Millisecond)
	failed := run()
	require.Contains(t, failed.Error, "HTTP 500 Internal Server Error")
	require.Contains(t, failed.Error, "gave up after 3 attempts: max_attempts")
	require.Len(t, failed.Attempts, 3)
	var dead struct{ Items []api.ScheduleRunView }
	deadLetter := func(status string) {
		yes := true
		p := &client.ListRunsParams{DeadLetter: &yes}
		if status != "" {
			p.Status = &status
		}
		r, err := c.ListRunsWithResponse(ctx, p)
		require.NoError(t, err)
		teststack.Decode(t, r.Body, &dead)
	}
	deadLetter("FAILED")
	require.Len(t, dead.Items, 1)
	require.Equal(t, runID, dead.Items[0].ID)

	failing.Store(false)
	var redriven api.ScheduleRunView
	rd, err := c.RedriveRunWithResponse(ctx, int(runID), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, rd.StatusCode())
	teststack.Decode(t, rd.Body, &redriven)
	require.Equal(t, domain.RunRunning, redriven.Status)
	require.Eventually(t, func() bool { return run().Status == domain.RunSucceeded }, time.Minute, 200*time.Millisecond, "the redrive delivered")
	done := run()
	require.Len(t, done.Redrives, 1)
	require.Equal(t, failed.Error, done.Redrives[0].PreviousError)
	require.Len(t, done.Attempts, 4)
	require.Equal(t, 1, done.Attempts[3].Redrive)
	require.Equal(t, "succeeded", done.Attempts[3].Outcome)
	deadLetter("")
	require.Empty(t, dead.Items)
	var manual []receiver.Delivery
	for _, d := range rcv.Deliveries() {
		if d.Schedule == "e2e-dead" {
			manual = append(manual, d)
		}
	}
	require.Len(t, manual, 1, "the redrive delivered the run's own key again")
	require.Equal(t, 4, manual[0].Requests)
	require.Equal(t, 1, manual[0].Executions)

	before := deliveries(rcv)
	b, err := invariants.CheckHTTP(ctx, st.Store.Pool, rcv.URL(), before, func() map[string]invariants.HTTPDelivery { return deliveries(rcv) })
	require.NoError(t, err)
	require.Zero(t, b.Count(), "%+v", b)
}

// listRuns lists a schedule's runs, newest first, as the API answers them.
func listRuns(t *testing.T, st *teststack.Stack, name string) []api.RunView {
	t.Helper()
	limit := 500
	r, err := st.Client(t).ListScheduleRunsWithResponse(t.Context(), name, &client.ListScheduleRunsParams{Limit: &limit})
	require.NoError(t, err)
	var page struct{ Items []api.RunView }
	teststack.Decode(t, r.Body, &page)
	return page.Items
}
