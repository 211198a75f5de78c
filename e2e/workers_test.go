package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/dev/devstack"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

// buildTickgate compiles the binary once for this test binary.
func buildTickgate(t *testing.T) string {
	t.Helper()
	root, err := devstack.RepoRoot()
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "tickgate")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/tickgate")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// startTickgate runs `tickgate <args>` as its own process group, killed at cleanup, and
// returns it with its log file (printed when the test fails).
func startTickgate(t *testing.T, bin, name string, env []string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logFile.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("tickgate %s log:\n%s", name, b)
		}
	})
	return cmd, logPath
}

// TestTwoWorkerProcessesFireEachTickExactlyOnce runs two `tickgate worker` processes on one
// dev server, with every-second schedules, and kills one of them with SIGKILL half-way:
// every tick is recorded exactly once (S1) and none inside the window is lost (S2).
func TestTwoWorkerProcessesFireEachTickExactlyOnce(t *testing.T) {
	t.Parallel()
	bin := buildTickgate(t)
	dbURL := testenv.DatabaseURL(t)
	address := testenv.TemporalAddress(t)
	queue := fmt.Sprintf("two-workers-%d", time.Now().UnixNano())
	// A namespace of its own: the workers' planners and dispatcher are singletons per
	// namespace, and the other tests' rows are not in this test's database.
	ns := newNamespace(t)
	env := []string{"DATABASE_URL=" + dbURL, "TEMPORAL_ADDRESS=" + address, "TEMPORAL_NAMESPACE=" + ns, "TICKGATE_TASK_QUEUE=" + queue}
	first, _ := startTickgate(t, bin, "worker-1", env, "worker")
	startTickgate(t, bin, "worker-2", env, "worker")

	ctx := context.Background()
	st, err := store.Open(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(st.Close)
	tc, err := client.Dial(client.Options{HostPort: address, Namespace: ns})
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	const schedules = 10
	for i := 0; i < schedules; i++ {
		name := fmt.Sprintf("every-second-%d", i)
		start := time.Now().UTC().Truncate(time.Second)
		compiled, err := schedulespec.Normalize(schedulespec.Spec{Interval: &schedulespec.Interval{Every: 1, Unit: "SECONDS"}, StartAt: &start}, start)
		require.NoError(t, err)
		_, err = st.CreateSchedule(ctx, api.NewScheduleRow(api.CreateScheduleRequest{Name: name, Spec: compiled.Spec,
			Action: domain.Action{Kind: domain.ActionEvent, Topic: "load", Type: "tick"}}, compiled,
			api.SchedulePolicies{Overlap: domain.OverlapSkip, CatchupWindow: schedulespec.Duration(time.Minute)}, time.Now().UTC()))
		require.NoError(t, err)
	}
	countRuns := func() int {
		var n int
		require.NoError(t, st.Pool.QueryRow(ctx, "SELECT count(*) FROM schedule_runs").Scan(&n))
		return n
	}
	require.Eventually(t, func() bool { return countRuns() >= schedules*4 }, 60*time.Second, 200*time.Millisecond)
	require.NoError(t, first.Process.Signal(syscall.SIGKILL)) // the other worker takes over
	before := countRuns()
	require.Eventually(t, func() bool { return countRuns() >= before+schedules*4 }, 90*time.Second, 200*time.Millisecond)

	duplicates, err := st.CountDuplicateTicks(ctx)
	require.NoError(t, err)
	require.Zero(t, duplicates, "no tick recorded twice")
	// No gaps: between each schedule's first and last recorded tick, every second is there
	// (fired, or recorded with its reason).
	var gaps int
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT coalesce(sum(expected - got), 0) FROM (
		SELECT schedule_id, extract(epoch FROM max(scheduled_at) - min(scheduled_at))::int + 1 AS expected, count(*) AS got
		FROM schedule_runs WHERE trigger IN ('scheduled','catchup') GROUP BY schedule_id) g`).Scan(&gaps))
	require.Zero(t, gaps, "no tick lost")
	var events, fired int
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM event_store),
		(SELECT count(*) FROM schedule_runs WHERE fired_at IS NOT NULL)`).Scan(&events, &fired))
	require.Equal(t, fired, events, "one event per fire")
}
