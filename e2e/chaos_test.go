package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/dev/chaos"
	"github.com/tickgate/tickgate/internal/dev/devstack"
)

// testWriter sends the run's progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestChaosShortProfile is `make chaos` scaled to a few minutes: on its own PostgreSQL
// cluster and Temporal dev server, two worker processes and the API under schedules, a
// rollout and device dispatch, it puts every link through a fault proxy (latency, a
// bandwidth limit, blackhole partitions from PostgreSQL and from Temporal, reset
// connections, a worker cut from one but not the other), kills workers and the API with
// SIGKILL and restarts PostgreSQL and Temporal, sampling the invariants throughout; the
// clients' histories (device executions, schedule commands, external rollout tasks) must
// be linearizable. Nothing may be fired twice,
// lost, left unfinished or break S1–S2, R1–R4, D1–D3; each http action's tick is delivered
// under its run's key and executed once, retries counting as one. A tenant migration in
// three waves runs through the faults; its second wave's health check fails on the tenant
// the migration broke: the rollout must pause there, and no task of its third wave may
// start (W1 and the scenario's own check, sampled throughout).
func TestChaosShortProfile(t *testing.T) {
	t.Parallel()
	bin := buildTickgate(t)
	root, err := devstack.RepoRoot()
	require.NoError(t, err)
	// Under the checkout, kept when the run fails. Its PostgreSQL cluster is placed where the
	// postgres user can reach it (devstack.ClusterDir) when that user cannot enter the checkout.
	dir := filepath.Join(root, ".dev", "test", "chaos-"+time.Now().UTC().Format("20060102-150405.000"))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	p := chaos.Short
	r, err := chaos.Run(ctx, p, chaos.Options{Binary: bin, Dir: dir, Out: testWriter{t}})
	require.NoError(t, err)
	var report strings.Builder
	r.Print(&report)
	t.Log(report.String())

	injected := map[string]int{}
	for _, f := range r.Faults {
		injected[f.Kind]++
		require.NoError(t, f.Err, "fault %s on %s was not recovered from", f.Kind, f.Target)
	}
	require.Equal(t, p.Faults(), len(r.Faults), "every planned fault injected: %v", injected)
	require.Len(t, injected, 11, "every kind of fault, on the wire too: %v", injected)
	require.Zero(t, r.Breaches, "no invariant broken in any sample")
	for _, c := range r.Checks {
		require.Positive(t, c.Samples, "invariant %q was sampled", c.Name)
	}
	require.Zero(t, r.Final.Duplicates, "S1: no tick fired twice")
	require.Positive(t, r.Final.ExpectedTicks)
	require.Zero(t, r.Final.LostTicks, "S2: every tick up to the cutoff ran or is recorded with its reason")
	require.Positive(t, r.Final.Fires)
	require.Equal(t, int64(p.RolloutTasks), r.Final.TasksDone, "every task run of the rollout done")
	require.Positive(t, r.Final.DeviceExecutions)
	require.Equal(t, r.Final.DeviceExecutions, r.Final.DeviceSucceeded+r.Final.DeviceFailed, "every device execution succeeded or failed finally")
	require.Zero(t, r.Unfinished(), "nothing left unfinished")
	w := r.Final.Waves
	require.Zero(t, w.LaterWaveStarted, "no task of wave 3 started")
	require.Equal(t, []string{"PASSED", "FAILED", "WAITING"}, w.WaveStatuses)
	require.Equal(t, "PAUSED", w.Status)
	require.Contains(t, w.Reason, "wave 2: health check failed on chaos_wave_")
	require.Equal(t, w.TasksBeforeFailure, w.DoneBeforeFailure, "waves 1 and 2 ran to the end")
	require.True(t, w.Held(p), "the waves rollout paused at its failed wave: %+v", w)
	require.Positive(t, r.Final.HTTPExecuted, "the http actions delivered")
	require.Zero(t, r.Final.HTTPBreaches, "each http tick's key is its run's, executed once, signed; the runs tell the truth")
	require.Equal(t, p.CappedSchedules, r.Capped.Schedules)
	require.Zero(t, r.Capped.OverCap, "never more targets of a capped schedule at once than its cap, as Temporal saw them")
	require.LessOrEqual(t, r.Capped.MostAtOnce, p.CappedMax)
	require.Zero(t, r.Capped.Unread, "every capped run's target is known to Temporal and closed")
	require.Positive(t, r.Capped.Manual, "the capped schedules ran manual triggers")
	require.Positive(t, r.Capped.Backfill, "and backfill ticks")
	require.Zero(t, r.Final.Missed, "no outage outlasts the catch-up window: no tick MISSED")
	require.Equal(t, int64(p.ExternalTasks), r.Final.ExternalDone, "every external task done on a result reported through the API")
	require.Len(t, r.Histories, 3)
	for _, h := range r.Histories {
		require.Positive(t, h.Ops, "history %s recorded", h.Name)
		require.True(t, h.Passed(), "%s", h)
	}
	require.True(t, r.Linearizable())
	require.True(t, r.Passed())
	// Kept only when the run fails, for its logs.
	_ = devstack.RemoveClusterDir(filepath.Join(dir, "pg"))
	_ = os.RemoveAll(dir)
}
