package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"

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
