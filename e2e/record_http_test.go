package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/dev/receiver"
	"github.com/tickgate/tickgate/internal/outbound"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/worker"
	"github.com/tickgate/tickgate/workflows"
)

// TestHTTPDeliveryHistoryReplays records the delivery workflows of two manual runs of an
// http action on the whole product: one whose receiver answers 429 with Retry-After: 1,
// then 200 (a retried attempt, its wait set by the receiver), and one whose receiver
// answers 404 (a final failure). Both take the delivery's present branch: it loads what it
// sends by its run (LoadHTTPDelivery) before its first attempt. Both histories must replay;
// with TICKGATE_RECORD_HISTORIES=1 they are written to workflows/testdata/http_delivery_retry.json
// and http_delivery_final.json (http_delivery_before_load_*.json keep the histories recorded
// before that change, whose input carried the whole delivery).
func TestHTTPDeliveryHistoryReplays(t *testing.T) {
	t.Parallel()
	rcv, err := receiver.Start()
	require.NoError(t, err)
	t.Cleanup(rcv.Close)
	rcv.Answer = func(key string, attempt int) receiver.Answer {
		if d := rcv.Deliveries()[key]; d.Schedule == "record-final" {
			return receiver.Answer{Status: http.StatusNotFound}
		}
		if attempt == 1 {
			return receiver.Answer{Status: http.StatusTooManyRequests, RetryAfter: "1"}
		}
		return receiver.Answer{}
	}
	st := teststack.Start(t, teststack.Options{Configure: func(c *config.Config) {
		rule, err := outbound.Parse("127.0.0.1")
		require.NoError(t, err)
		c.HTTPAllow = rule
	}})
	rec := &recorder{t: t, tc: st.Temporal, dir: recordDir(t), recorded: map[string]*historypb.History{}}
	record := func(name, scenario string, want domain.RunStatus) {
		st.CreateSchedule(t, map[string]any{
			"name": name, "spec": map[string]any{"interval": "1h"},
			"action": map[string]any{"kind": "http", "url": rcv.URL() + "/" + name, "body": map[string]any{"recorded": true}},
			"retry":  map[string]any{"max_attempts": 3, "initial_backoff": "200ms"},
		})
		trig := st.Trigger(t, name)
		require.NotNil(t, trig.Run)
		rec.waitClosed(trig.Run.WorkflowID)
		require.Eventually(t, func() bool {
			for _, r := range listRuns(t, st, name) {
				if r.ID == trig.Run.ID {
					return r.Status == want
				}
			}
			return false
		}, time.Minute, 100*time.Millisecond, "run of %s %s", name, want)
		rec.write(trig.Run.WorkflowID, workflows.HTTPDeliveryWorkflowType, scenario)
		r, err := worker.NewReplayer()
		require.NoError(t, err)
		require.NoError(t, r.ReplayWorkflowHistory(nil, rec.recorded[scenario]), fmt.Sprintf("the %s history does not replay", scenario))
	}
	record("record-retry", "http_delivery_retry", domain.RunSucceeded)
	record("record-final", "http_delivery_final", domain.RunFailed)

}

// TestHTTPDeliveryAfterFirstAttemptHistoryReplays records the delivery workflow of a fire the
// planner armed on the whole product: its first attempt, sent by the worker that released
// it, is answered 429 (Retry-After: 1), and its delivery workflow goes on from it — it waits
// the second, counts the attempt and sends attempt 2, answered 200. It takes the branch of
// http-delivery-after-first-attempt; with TICKGATE_RECORD_HISTORIES=1 it is written to
// workflows/testdata/http_delivery_after_first_attempt.json.
func TestHTTPDeliveryAfterFirstAttemptHistoryReplays(t *testing.T) {
	t.Parallel()
	rcv, err := receiver.Start()
	require.NoError(t, err)
	t.Cleanup(rcv.Close)
	rcv.Answer = func(key string, attempt int) receiver.Answer {
		if attempt == 1 {
			return receiver.Answer{Status: http.StatusTooManyRequests, RetryAfter: "1"}
		}
		return receiver.Answer{}
	}
	st := teststack.Start(t, teststack.Options{Configure: func(c *config.Config) {
		rule, err := outbound.Parse("127.0.0.1")
		require.NoError(t, err)
		c.HTTPAllow = rule
	}})
	rec := &recorder{t: t, tc: st.Temporal, dir: recordDir(t), recorded: map[string]*historypb.History{}}
	st.CreateSchedule(t, map[string]any{
		"name": "record-first", "spec": map[string]any{"interval": "1h", "start_at": time.Now().Add(-time.Hour + 3*time.Second).UTC().Format(time.RFC3339Nano)},
		"action": map[string]any{"kind": "http", "url": rcv.URL() + "/record-first", "body": map[string]any{"recorded": true}},
		"retry":  map[string]any{"max_attempts": 3, "initial_backoff": "200ms"},
	})
	var first api.RunView
	require.Eventually(t, func() bool {
		for _, r := range listRuns(t, st, "record-first") {
			if r.Status == domain.RunSucceeded {
				first = r
				return true
			}
		}
		return false
	}, 2*time.Minute, 100*time.Millisecond, "the armed fire delivered")
	require.Len(t, first.Attempts, 2)
	require.True(t, first.Attempts[0].Direct, "the first attempt was the releasing worker's")
	require.False(t, first.Attempts[1].Direct)
	require.Equal(t, 2, first.Attempts[1].Attempt)
	rec.waitClosed(first.WorkflowID)
	rec.write(first.WorkflowID, workflows.HTTPDeliveryWorkflowType, "http_delivery_after_first_attempt")
	r, err := worker.NewReplayer()
	require.NoError(t, err)
	require.NoError(t, r.ReplayWorkflowHistory(nil, rec.recorded["http_delivery_after_first_attempt"]), "the after-first-attempt history does not replay")
}
