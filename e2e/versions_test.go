package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/internal/version"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/worker"
	"github.com/tickgate/tickgate/workflows"
)

// TestVersionsReportCountsRunsThatMayNeedAnOldBranch: `tickgate versions`
// (starter.ChangeReport) counts, per workflow change, the open runs that lack the change's
// marker. A rollout workflow started by the current code pins its changes at its start and
// never needs an old branch; a run of the same type started by an older worker (here: one
// that no worker has picked up yet, so it carries no marker) may.
func TestVersionsReportCountsRunsThatMayNeedAnOldBranch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	tc, err := client.Dial(client.Options{HostPort: testenv.TemporalAddress(t), Namespace: ns})
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	st := testenv.Store(t)
	queue := "versions-" + time.Now().Format("150405.000000")
	w, err := worker.New(worker.Deps{Config: config.Config{TaskQueue: queue}, Store: st, Temporal: tc})
	require.NoError(t, err)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	s := &starter.Starter{Client: tc, TaskQueue: queue}

	// A rollout whose external task keeps its workflow open.
	r, err := st.CreateRollout(ctx, "versions", 1, []store.NewTaskRun{{Database: "db", Type: "DML", Version: "1",
		VersionKey: version.MustKey("1"), Executor: domain.ExecutorExternal, Payload: json.RawMessage(`{}`)}})
	require.NoError(t, err)
	require.NoError(t, s.StartRollout(ctx, r.ID))
	// A run of an older worker: on a queue nobody polls, it never ran a workflow task.
	_, err = tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "rollout/older", TaskQueue: queue + "-older"},
		workflows.RolloutWorkflowType, workflows.RolloutInput{RolloutID: 0})
	require.NoError(t, err)

	var runner starter.ChangeUse
	require.Eventually(t, func() bool {
		report, err := s.ChangeReport(ctx)
		require.NoError(t, err)
		for _, u := range report {
			if u.Change.ID == "rollout-runner" {
				runner = u
			}
		}
		return runner.Open == 2 && runner.NeedOld == 1
	}, 30*time.Second, 200*time.Millisecond, "rollout-runner: want 2 open, 1 needing the old branch; got %+v", runner)
}
