package activities_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

// slowWakes is a planner's starter whose wakes each take a while, as on a busy Temporal
// server; it counts them.
type slowWakes struct {
	mu    sync.Mutex
	woken int
}

func (s *slowWakes) WakeSchedule(context.Context, int64, string) error {
	time.Sleep(20 * time.Millisecond)
	s.mu.Lock()
	s.woken++
	s.mu.Unlock()
	return nil
}

func (s *slowWakes) StopSchedule(context.Context, string, string) error { return nil }

func (s *slowWakes) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.woken
}

// A bulk create of resident schedules plans a wake of each at once: a planner round then
// wakes a thousand schedules, which on a busy Temporal server takes longer than the planner's
// heartbeat timeout. The round heartbeats as its wakes go, not only between rounds (it was
// cancelled mid-round, again and again, in bench-scale -resident).
func TestPlannerRoundHeartbeatsWhileItWakes(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	const n = 400
	for i := range n {
		row, err := st.CreateSchedule(ctx, store.NewSchedule{Name: fmt.Sprintf("wake-%03d", i), Spec: json.RawMessage(`{"cron":"0 * * * *"}`),
			Action: json.RawMessage(`{"kind":"event","topic":"t","type":"x"}`), Overlap: "skip"})
		require.NoError(t, err)
		_, err = st.Pool.Exec(ctx, "UPDATE schedules SET plan_at = now(), plan_action = 'wake' WHERE id = $1", row.ID)
		require.NoError(t, err)
	}
	wakes := &slowWakes{}
	acts := &activities.ScheduleActivities{Store: st, Schedules: wakes}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	var mu sync.Mutex
	var wokenAtBeats []int
	env.SetOnActivityHeartbeatListener(func(*activity.Info, converter.EncodedValues) {
		mu.Lock()
		wokenAtBeats = append(wokenAtBeats, wakes.count())
		mu.Unlock()
	})
	env.RegisterActivityWithOptions(func(ctx context.Context) (activities.RoundResult, error) {
		return acts.PlanRound(ctx, time.Now())
	}, activity.RegisterOptions{Name: "Round"})
	v, err := env.ExecuteActivity("Round")
	require.NoError(t, err)
	var res activities.RoundResult
	require.NoError(t, v.Get(&res))
	require.Equal(t, n, res.Woken)
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, wokenAtBeats, "the round heartbeat")
	require.Less(t, wokenAtBeats[len(wokenAtBeats)/2], n, "while its wakes were under way: %v", wokenAtBeats)
}
