package activities_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/internal/testing/testenv"
)

// Under allow_all the planner arms several fires of an http schedule, each delivery started
// with its own start delay. A pause retracts every one not yet due, and every one of those
// delayed starts is stopped first: a retracted tick is never delivered. (The chaos run's
// receiver caught deliveries of retracted ticks when only the last fire's start was
// stopped.)
func TestAPauseStopsTheDelayedStartOfEveryRetractedFire(t *testing.T) {
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
	ids, err := st.ArmedStartsNotDue(ctx, row.ID)
	require.NoError(t, err)
	require.Greater(t, len(ids), 1, "several fires armed, each with its delayed start")
	for _, id := range ids {
		d, err := tc.DescribeWorkflowExecution(ctx, id, "")
		require.NoError(t, err, "the delayed start of %s was made", id)
		require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, d.GetWorkflowExecutionInfo().GetStatus())
	}

	r, err := acts.MirrorPaused(ctx, activities.PausedState{ScheduleID: row.ID, Paused: true, Note: "test"})
	require.NoError(t, err)
	require.ElementsMatch(t, ids, r.WorkflowIDs, "every fire not yet due was retracted")
	for _, id := range ids {
		d, err := tc.DescribeWorkflowExecution(ctx, id, "")
		require.NoError(t, err)
		require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, d.GetWorkflowExecutionInfo().GetStatus(), "%s never runs", id)
	}
}
