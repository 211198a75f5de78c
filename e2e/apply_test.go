package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/client"
	"github.com/tickgate/tickgate/internal/testing/teststack"
)

// applyState is what an apply that changes nothing must leave as it was: each schedule's
// version and last write, its history, and the fires the planner armed ahead.
type applyState struct {
	versions  map[string]string // name → version@updated_at
	history   map[string]int
	armed     map[int64]string // armed run id → schedule@tick, ticks at least 20 s ahead of the snapshot
	retracted int              // armed workflow fires retracted (rows kept as SKIPPED)
}

func snapshot(t *testing.T, st *teststack.Stack, c *client.Client, names []string, ahead time.Time) applyState {
	t.Helper()
	ctx := context.Background()
	s := applyState{versions: map[string]string{}, history: map[string]int{}, armed: map[int64]string{}}
	for _, n := range names {
		r, err := c.GetScheduleWithResponse(ctx, n)
		require.NoError(t, err)
		s.versions[n] = fmt.Sprintf("%d@%s", *r.JSON200.Version, r.JSON200.UpdatedAt.UTC().Format(time.RFC3339Nano))
		for _, err := range c.ScheduleHistory(ctx, n, nil) {
			require.NoError(t, err)
			s.history[n]++
		}
	}
	rows, err := st.Store.Pool.Query(ctx, `SELECT r.id, s.name, r.scheduled_at FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id
		WHERE s.name = ANY($1) AND r.armed AND r.retracted_at IS NULL AND r.scheduled_at > $2`, names, ahead)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var id int64
		var name string
		var at time.Time
		require.NoError(t, rows.Scan(&id, &name, &at))
		s.armed[id] = name + "@" + at.UTC().Format(time.RFC3339)
	}
	require.NoError(t, rows.Err())
	require.NoError(t, st.Store.Pool.QueryRow(ctx, `SELECT count(*) FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id
		WHERE s.name = ANY($1) AND r.retracted_at IS NOT NULL`, names).Scan(&s.retracted))
	return s
}

// TestApplyTwiceChangesNothing: on the whole product, schedules as code applied twice. The
// second apply reports 0 changes and changes nothing: the same versions and last writes, no
// history entry, and every fire the planner armed ahead still armed, the same rows (none
// retracted and armed again). An apply that does change a schedule is shown to move all
// three, so the comparison would catch an apply that wrote what it should not.
func TestApplyTwiceChangesNothing(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	c, err := client.New(st.URL, client.WithToken(st.AdminToken), client.WithHTTP(teststack.ContractClient(t)))
	require.NoError(t, err)
	start := time.Now().UTC().Truncate(time.Second).Format(time.RFC3339)
	dir := t.TempDir()
	manifests := fmt.Sprintf(`kind: Calendar
name: e2e-apply-holidays
dates: ["2030-12-25"]
---
kind: Schedule
name: e2e-apply-beat
labels: {team: e2e}
spec: {interval: 5s, start_at: "%s", exclude_calendars: [e2e-apply-holidays]}
action: {kind: event, topic: e2e-apply, type: beat, data: {n: 1}}
---
kind: Schedule
name: e2e-apply-cron
spec: {cron: "* * * * *", timezone: Europe/Berlin}
action: {kind: event, topic: e2e-apply, type: minute}
policies: {overlap: skip, catchup_window: 1m}
---
kind: Schedule
name: e2e-apply-drift
spec: {interval: 7s}
action: {kind: event, topic: e2e-apply, type: drift}
`, start)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "e2e.yaml"), []byte(manifests), 0o644))
	names := []string{"e2e-apply-beat", "e2e-apply-cron", "e2e-apply-drift"}

	out := cliOK(t, st, "apply", "-f", dir, "--set", "e2e")
	require.Contains(t, out, "set e2e: 4 created, 0 updated, 0 unchanged")
	// The planner arms each schedule's fires ahead; wait until it has, well past now.
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, st.Store.Pool.QueryRow(t.Context(), `SELECT count(DISTINCT s.name) FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id
			WHERE s.name = ANY($1) AND r.armed AND r.scheduled_at > now() + interval '40 seconds'`, names).Scan(&n))
		return n == 3
	}, time.Minute, 100*time.Millisecond, "the planner armed fires ahead for every schedule")

	ahead := time.Now().UTC().Add(20 * time.Second)
	before := snapshot(t, st, c, names, ahead)
	require.NotEmpty(t, before.armed)
	require.Zero(t, before.retracted)
	for _, n := range names {
		require.Zero(t, before.history[n], n)
	}

	out = cliOK(t, st, "apply", "-f", dir, "--set", "e2e")
	require.Contains(t, out, "set e2e: 0 created, 0 updated, 4 unchanged, 0 deleted, 0 conflict(s), 0 error(s)")
	after := snapshot(t, st, c, names, ahead)
	require.Equal(t, before.versions, after.versions, "no new version, no write")
	require.Equal(t, before.history, after.history, "no history entry")
	require.Equal(t, before.armed, after.armed, "the same armed fires: none retracted, none armed again")
	require.Zero(t, after.retracted)

	// The control: an apply that changes the beat's action retracts its armed fires (they
	// carried the old event) and gives it a new version and a history entry.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "e2e.yaml"), []byte(strings.Replace(manifests, "data: {n: 1}", "data: {n: 2}", 1)), 0o644))
	out = cliOK(t, st, "apply", "-f", dir, "--set", "e2e")
	require.Contains(t, out, "set e2e: 0 created, 1 updated, 3 unchanged")
	changed := snapshot(t, st, c, names, ahead)
	require.NotEqual(t, before.versions["e2e-apply-beat"], changed.versions["e2e-apply-beat"])
	require.Equal(t, 1, changed.history["e2e-apply-beat"])
	require.Equal(t, before.versions["e2e-apply-cron"], changed.versions["e2e-apply-cron"], "the others untouched")
	beatTicks := 0
	for _, tick := range before.armed {
		if strings.HasPrefix(tick, "e2e-apply-beat@") {
			beatTicks++
		}
	}
	require.Positive(t, beatTicks)
	require.Eventually(t, func() bool {
		now := snapshot(t, st, c, names, ahead)
		kept := 0
		for id := range before.armed {
			if _, ok := now.armed[id]; ok {
				kept++
			}
		}
		return kept == len(before.armed)-beatTicks
	}, 30*time.Second, 100*time.Millisecond, "the beat's armed fires were retracted (the workflow reloads it), the others' kept")
}
