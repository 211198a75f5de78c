package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/client"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/worker"
	"github.com/tickgate/tickgate/workflows"
)

// capTarget is the target of the capped schedule: a run lasts 7 s, longer than the cap of
// 2 can keep up with at a tick every 2 s, so ticks wait.
func capTarget(ctx workflow.Context) error {
	return workflow.Sleep(ctx, 7*time.Second)
}

// span is when a target really ran, as Temporal saw it: from its start (a delayed start's
// execution time) to its close.
type span struct{ from, to time.Time }

// maxOverlap is the most spans covering one instant (a span ending as another begins does
// not overlap it).
func maxOverlap(spans []span) int {
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, s := range spans {
		edges = append(edges, edge{s.from, 1}, edge{s.to, -1})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
	n, most := 0, 0
	for _, e := range edges {
		n += e.delta
		most = max(most, n)
	}
	return most
}

// TestMaxConcurrentOnTheWholeProduct runs a capped schedule on the whole product, through
// the Go client: a tick every 2 s of a workflow whose runs last 7 s, max_concurrent 2. The planner arms
// up to the cap and wakes the workflow when it is full; ticks beyond wait BUFFERED, and the
// schedule's view shows them with their reason; a manual trigger while full waits too. What
// Temporal saw of the targets — when each really started and closed — never has more than 2
// at once, and every tick up to the pause has its row. The history (its version marker
// among it) must replay; with TICKGATE_RECORD_HISTORIES=1 it is written to
// workflows/testdata/schedule_cap.json.
func TestMaxConcurrentOnTheWholeProduct(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	queue := fmt.Sprintf("cap-targets-%d", time.Now().UnixNano())
	w := sdkworker.New(st.Temporal, queue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(capTarget, workflow.RegisterOptions{Name: "CapTarget"})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	rec := &recorder{t: t, tc: st.Temporal, dir: recordDir(t), recorded: map[string]*historypb.History{}}
	ctx := context.Background()

	c := st.Client(t)
	_, err := c.CreateScheduleWithBodyWithResponse(ctx, nil, "application/json", teststack.Body(t, map[string]any{
		"name": "capped", "spec": map[string]any{"interval": "2s"},
		"action":   map[string]any{"kind": "workflow", "workflow_type": "CapTarget", "task_queue": queue},
		"policies": map[string]any{"overlap": "allow_all", "max_concurrent": 2},
		"labels":   map[string]string{"cap": "e2e"},
	}))
	require.NoError(t, err)
	var reason string
	require.Eventually(t, func() bool {
		r, err := c.GetScheduleWithResponse(ctx, "capped")
		require.NoError(t, err)
		if w := r.JSON200.Waiting; w != nil && w.BufferedTicks != nil && len(*w.BufferedTicks) > 0 {
			reason = *(*w.BufferedTicks)[0].Reason
			return true
		}
		return false
	}, time.Minute, 200*time.Millisecond, "a tick waits for the cap")
	require.True(t, strings.HasPrefix(reason, "max_concurrent 2: 2 runs in flight"), reason)

	trig, err := c.TriggerScheduleWithResponse(ctx, "capped", nil, client.TriggerRequest{})
	require.NoError(t, err)
	require.Equal(t, "BUFFERED", *trig.JSON200.Status, "a manual run waits for the cap like a tick")
	require.Contains(t, *trig.JSON200.Reason, "max_concurrent 2:")

	row, err := st.Store.GetSchedule(ctx, "capped")
	require.NoError(t, err)
	count := func(query string) int {
		var n int
		require.NoError(t, st.Store.Pool.QueryRow(ctx, query, row.ID).Scan(&n))
		return n
	}
	require.Eventually(t, func() bool {
		return count(`SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND status = 'SUCCEEDED' AND trigger = 'manual'`) == 1
	}, 2*time.Minute, 200*time.Millisecond, "the manual run ran when a place freed")
	// (A 503 asks for a retry: a workflow that did not take its pause in time, on a loaded machine.)
	note := "enough"
	require.Eventually(t, func() bool {
		_, err := c.PauseSelectedSchedulesWithResponse(ctx, nil, client.BulkStateRequest{Selector: "cap=e2e", Note: &note})
		if err != nil {
			require.Equal(t, http.StatusServiceUnavailable, client.StatusOf(err), "%v", err)
		}
		return err == nil
	}, 2*time.Minute, time.Second, "paused by its label")
	require.Eventually(t, func() bool {
		return count(`SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND status = 'RUNNING'`) == 0
	}, time.Minute, 200*time.Millisecond, "the runs in flight end")

	// What Temporal saw.
	rows, err := st.Store.Pool.Query(ctx, `SELECT workflow_id FROM schedule_runs WHERE schedule_id = $1 AND fired_at IS NOT NULL AND workflow_id <> ''`, row.ID)
	require.NoError(t, err)
	var ids []string
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	rows.Close()
	require.GreaterOrEqual(t, len(ids), 4)
	var spans []span
	for _, id := range ids {
		d, err := st.Temporal.DescribeWorkflowExecution(ctx, id, "")
		require.NoError(t, err, id)
		info := d.GetWorkflowExecutionInfo()
		require.NotNil(t, info.GetCloseTime(), "%s closed", id)
		spans = append(spans, span{from: info.GetExecutionTime().AsTime(), to: info.GetCloseTime().AsTime()})
	}
	require.Equal(t, 2, maxOverlap(spans), "never more than max_concurrent targets running at once")

	// S2: every tick up to the pause has its row, 2 s apart.
	trows, err := st.Store.Pool.Query(ctx, `SELECT scheduled_at FROM schedule_runs WHERE schedule_id = $1 AND trigger IN ('scheduled', 'catchup')
		AND retracted_at IS NULL ORDER BY scheduled_at`, row.ID)
	require.NoError(t, err)
	var ticks []time.Time
	for trows.Next() {
		var at time.Time
		require.NoError(t, trows.Scan(&at))
		ticks = append(ticks, at)
	}
	trows.Close()
	for i := 1; i < len(ticks); i++ {
		require.Equal(t, 2*time.Second, ticks[i].Sub(ticks[i-1]), "no tick lost between %s and %s", ticks[i-1], ticks[i])
	}

	id := workflows.ScheduleWorkflowID("capped")
	rec.waitIdle(id)
	rec.write(id, workflows.ScheduleWorkflowType, "schedule_cap")
	r, err := worker.NewReplayer()
	require.NoError(t, err)
	require.NoError(t, r.ReplayWorkflowHistory(nil, rec.recorded["schedule_cap"]), "the capped schedule's history does not replay")
}
