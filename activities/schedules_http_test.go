package activities_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/internal/testing/testenv"
)

// Under allow_all the planner arms several fires of an http schedule, each queued for its
// first attempt (no delayed start: the worker that releases a fire sends it). A pause
// retracts every one not yet due, in its transaction: none is ever sent — no sender claims
// a retracted fire, even once the release frontier passes its time — and its queued row
// goes. (The chaos run's receiver once caught deliveries of retracted ticks.)
func TestAPauseRetractsEveryArmedHTTPFireUnsent(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	tc := testenv.TemporalClient(t)
	ctx := context.Background()
	queue := fmt.Sprintf("armed-http-%d", time.Now().UnixNano())
	acts := &activities.ScheduleActivities{Store: st, Temporal: tc, Schedules: &recordingStarter{}, TaskQueue: queue}
	e := &plannerEnv{t: t, st: st, acts: acts}
	name := fmt.Sprintf("armed-http-%d", time.Now().UnixNano())
	now := time.Now().UTC()
	row := e.create(name, schedulespec.Spec{Interval: &schedulespec.Interval{Every: 20, Unit: "SECONDS"}},
		domain.Action{Kind: domain.ActionHTTP, URL: "https://example.com/hook", Method: "POST", Timeout: schedulespec.Duration(time.Second)},
		api.SchedulePolicies{Overlap: domain.OverlapAllowAll}, now)
	_, err := acts.PlanRound(ctx, now.Add(30*time.Second)) // its plan comes: fires armed up to two minutes ahead
	require.NoError(t, err)
	var queued int
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT count(*) FROM http_first_attempts q JOIN schedule_runs r ON r.id = q.run_id
		WHERE r.schedule_id = $1`, row.ID).Scan(&queued))
	require.Greater(t, queued, 1, "several fires armed, each queued for its first attempt")
	ids, err := st.ArmedStartsNotDue(ctx, row.ID)
	require.NoError(t, err)
	require.Empty(t, ids, "no delayed start was made for any")

	r, err := acts.MirrorPaused(ctx, activities.PausedState{ScheduleID: row.ID, Paused: true, Note: "test"})
	require.NoError(t, err)
	require.Len(t, r.WorkflowIDs, queued, "every fire not yet due was retracted")

	later := now.Add(10 * time.Minute)
	_, err = st.ReleaseDueAsOf(ctx, &later, nil)
	require.NoError(t, err)
	claimed, err := st.ClaimFirstAttempts(ctx, "test-sender", time.Minute, 100)
	require.NoError(t, err)
	require.Empty(t, claimed, "a retracted fire is never sent")
	swept, err := st.SweepFirstAttempts(ctx, "test-sender", time.Minute, 100)
	require.NoError(t, err)
	require.EqualValues(t, queued, swept.Dropped, "their rows go")
}
