package activities_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/internal/schedulespec"
)

// The planner's and the release's lag, as the metrics (and their alerts) read them: a
// schedule at rest whose plan_at has come waits for a planner round, and the fire the round
// armed, whose time has come, waits for its release. Each lag is how long the oldest has
// waited, and each is 0 once the planner, then the release, has done its work.
func TestPlannerAndReleaseLagFollowTheirWork(t *testing.T) {
	t.Parallel()
	e := newPlannerEnv(t)
	ctx := context.Background()
	now := time.Now().UTC()
	// An hourly schedule whose first tick came 5 minutes ago, created 10 minutes ago while no
	// planner ran: its plan_at (the fire less ArmLead) came 6.5 minutes ago.
	start := now.Add(-5 * time.Minute).Truncate(time.Second)
	e.create("overdue", schedulespec.Spec{Interval: every(1, "HOURS"), StartAt: &start}, event, api.SchedulePolicies{}, now.Add(-10*time.Minute))
	h, err := e.st.ReadEngineHealth(ctx)
	require.NoError(t, err)
	require.InDelta(t, (6*time.Minute + 30*time.Second).Seconds(), h.PlannerLag.Seconds(), 30, "the planner is behind")
	require.Zero(t, h.ReleaseLag, "nothing armed yet")

	_, err = e.acts.PlanRound(ctx, time.Now().UTC())
	require.NoError(t, err)
	h, err = e.st.ReadEngineHealth(ctx)
	require.NoError(t, err)
	require.Zero(t, h.PlannerLag, "the round looked at it")
	require.InDelta(t, (5 * time.Minute).Seconds(), h.ReleaseLag.Seconds(), 30, "its armed fire waits for its release")

	_, err = e.st.ReleaseDue(ctx, nil)
	require.NoError(t, err)
	h, err = e.st.ReadEngineHealth(ctx)
	require.NoError(t, err)
	require.Zero(t, h.ReleaseLag, "released")
	require.Len(t, e.runs("overdue"), 1)
}
