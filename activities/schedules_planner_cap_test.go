package activities_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/scheduleplan"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/internal/testing/testenv"
)

// inFlight counts the schedule's runs RUNNING (armed ones among them).
func (e *plannerEnv) inFlight(name string) int {
	e.t.Helper()
	var n int
	require.NoError(e.t, e.st.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND status = 'RUNNING'", e.row(name).ID).Scan(&n))
	return n
}

// The planner arms a capped allow_all schedule only up to its cap: of the twelve fires in
// its reach it arms as many as max_concurrent less the runs in flight, and when the cap is
// full it arms none and wakes the schedule's workflow, which decides the next tick at its
// time. A run that ends makes room, which the next round fills. At no point are more than
// max_concurrent runs committed.
func TestPlannerArmsACappedScheduleOnlyUpToItsCap(t *testing.T) {
	t.Parallel()
	e := newPlannerEnv(t)
	tc := testenv.TemporalClient(t)
	e.acts.Temporal = tc
	queue := fmt.Sprintf("capped-targets-%d", time.Now().UnixNano())
	name := fmt.Sprintf("capped-%d", time.Now().UnixNano())
	t0 := time.Now().UTC().Truncate(time.Second).Add(time.Hour) // ahead: the targets wait on their start delay
	start := t0
	three := 3
	e.create(name, schedulespec.Spec{Interval: every(10, "SECONDS"), StartAt: &start},
		domain.Action{Kind: domain.ActionWorkflow, WorkflowType: "Report", TaskQueue: queue},
		api.SchedulePolicies{Overlap: domain.OverlapAllowAll, MaxConcurrent: &three, OverlapWhenFull: domain.WhenFullBuffer}, t0)
	t.Cleanup(func() {
		rows, _ := e.st.Pool.Query(context.Background(), "SELECT workflow_id FROM schedule_runs WHERE workflow_id <> ''")
		for rows.Next() {
			var id string
			_ = rows.Scan(&id)
			_ = tc.TerminateWorkflow(context.Background(), id, "", "test over")
		}
		rows.Close()
	})

	res := e.at(t0)
	require.Equal(t, 3, res.Armed, "armed up to the cap, not the 12 fires in reach")
	require.Equal(t, 3, e.inFlight(name))
	require.Empty(t, e.wakes.wakes())
	row := e.row(name)
	require.Equal(t, scheduleplan.Arm, *row.PlanAction, "it looks again, to count what runs then")

	// The next round: full — nothing armed, its workflow woken to decide the 40s tick.
	res = e.at(t0.Add(time.Second))
	require.Zero(t, res.Armed)
	require.Equal(t, []string{name}, e.wakes.wakes())
	require.Equal(t, 3, e.inFlight(name), "never more than max_concurrent committed")

	// The first run ends, and the schedule is at rest again with its plan to arm (as its
	// workflow leaves it when it rests): the planner arms the room, one fire.
	require.NoError(t, e.st.FinishRun(context.Background(), e.firstRunID(name), domain.RunSucceeded, ""))
	_, err := e.st.Pool.Exec(context.Background(), "UPDATE schedules SET plan_at = $1, plan_action = 'arm' WHERE name = $2", t0.Add(2*time.Second), name)
	require.NoError(t, err)
	res = e.at(t0.Add(2 * time.Second))
	require.Equal(t, 1, res.Armed, "one run ended: room for one")
	require.Equal(t, 3, e.inFlight(name))
	var ticks []time.Time
	rows, err := e.st.Pool.Query(context.Background(), "SELECT scheduled_at FROM schedule_runs WHERE schedule_id = $1 ORDER BY scheduled_at", e.row(name).ID)
	require.NoError(t, err)
	for rows.Next() {
		var at time.Time
		require.NoError(t, rows.Scan(&at))
		ticks = append(ticks, at.UTC())
	}
	rows.Close()
	require.Equal(t, []time.Time{t0.Add(10 * time.Second), t0.Add(20 * time.Second), t0.Add(30 * time.Second), t0.Add(40 * time.Second)}, ticks,
		"the fires in tick order, each once")
}

// firstRunID is the id of the schedule's oldest run.
func (e *plannerEnv) firstRunID(name string) int64 {
	e.t.Helper()
	var id int64
	require.NoError(e.t, e.st.Pool.QueryRow(context.Background(), "SELECT min(id) FROM schedule_runs WHERE schedule_id = $1", e.row(name).ID).Scan(&id))
	return id
}
