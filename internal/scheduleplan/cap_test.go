package scheduleplan_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/scheduleplan"
	"github.com/tickgate/tickgate/internal/schedulespec"
)

var workflowAction = domain.Action{Kind: domain.ActionWorkflow, WorkflowType: "Report", TaskQueue: "reports"}

// everyTenSeconds is a workflow schedule ticking every 10 s from t0 under allow_all.
func everyTenSeconds(t *testing.T, t0 time.Time, maxConcurrent, running, waiting int) scheduleplan.Schedule {
	t.Helper()
	spec, err := schedulespec.Normalize(schedulespec.Spec{Interval: &schedulespec.Interval{Every: 10, Unit: "SECONDS"}, StartAt: &t0}, t0)
	require.NoError(t, err)
	return scheduleplan.Schedule{Name: "capped", Spec: spec, Action: workflowAction, Overlap: domain.OverlapAllowAll, Watermark: t0,
		MaxConcurrent: maxConcurrent, Running: running, Waiting: waiting, InFlight: running+waiting > 0}
}

// Room is the cap's one rule: max_concurrent less the runs in flight (armed ones among them)
// and the ticks waiting before; no cap without max_concurrent, under another policy than
// allow_all, or for an event action.
func TestRoomIsTheCapLessWhatRunsAndWaits(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		max, running, waiting int
		room                  int
	}{
		{3, 0, 0, 3}, {3, 1, 0, 2}, {3, 1, 1, 1}, {3, 3, 0, 0}, {3, 2, 5, 0}, {1, 0, 0, 1},
	} {
		room, capped := everyTenSeconds(t, t0, c.max, c.running, c.waiting).Room()
		require.True(t, capped)
		require.Equal(t, c.room, room, "%+v", c)
	}
	s := everyTenSeconds(t, t0, 0, 5, 0)
	_, capped := s.Room()
	require.False(t, capped, "no max_concurrent: no cap")
	s = everyTenSeconds(t, t0, 2, 0, 0)
	s.Overlap = domain.OverlapBufferAll
	_, capped = s.Room()
	require.False(t, capped, "the cap is allow_all's")
	s = everyTenSeconds(t, t0, 2, 0, 0)
	s.Action = domain.Action{Kind: domain.ActionEvent}
	_, capped = s.Room()
	require.False(t, capped, "an event action's run ends as it fires")
}

// The planner never arms past the cap: a capped allow_all schedule arms at most the cap's
// room of the fires in its reach (here 2 of 12), and none when it is full — then its
// workflow is woken before the next fire to buffer or skip it at its time. After arming, the
// planner looks again at the next fire's arming time, when it counts what runs then. Without
// a cap every fire in reach is armed, as before.
func TestArmNeverArmsPastTheCap(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	reach := int((scheduleplan.ArmLead + scheduleplan.ArmSpan) / (10 * time.Second))

	fires, _, _ := everyTenSeconds(t, t0, 0, 0, 0).Arm(t0)
	require.Len(t, fires, reach, "no cap: every fire in reach")

	s := everyTenSeconds(t, t0, 3, 1, 0)
	require.True(t, s.PlannerArms())
	fires, watermark, next := s.Arm(t0)
	require.Len(t, fires, 2, "room for 2 of 3")
	require.Equal(t, t0.Add(10*time.Second), fires[0].Tick)
	require.Equal(t, t0.Add(20*time.Second), fires[1].Tick)
	require.Equal(t, t0.Add(20*time.Second), watermark)
	require.Equal(t, scheduleplan.Arm, next.Action, "it looks again, to count what runs then")
	require.Equal(t, t0, *next.At, "the next tick (30s) is in reach already: the next round looks at once")

	full := everyTenSeconds(t, t0, 3, 2, 1)
	require.False(t, full.PlannerArms())
	fires, watermark, next = full.Arm(t0)
	require.Empty(t, fires, "full: nothing armed")
	require.Equal(t, t0, watermark)
	require.Equal(t, scheduleplan.Wake, next.Action, "its workflow decides the tick at its time")
	require.Equal(t, t0.Add(10*time.Second-scheduleplan.WakeLead), *next.At)
	require.Equal(t, scheduleplan.Wake, full.AtRest().Action)

	// A cap larger than the reach arms the reach.
	fires, _, _ = everyTenSeconds(t, t0, 100, 3, 0).Arm(t0)
	require.Len(t, fires, reach)
}

// Over a walk of the planner, never more fires are in flight than the cap allows: each
// round arms the room left by the runs in flight (armed or started), whatever ends or not.
func TestArmingRoundAfterRoundStaysUnderTheCap(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const maxConcurrent = 3
	s := everyTenSeconds(t, t0, maxConcurrent, 0, 0)
	type run struct{ start, end time.Time }
	var inFlight []run
	for now := t0; now.Before(t0.Add(10 * time.Minute)); now = now.Add(5 * time.Second) {
		var still []run
		for _, r := range inFlight {
			if r.end.After(now) {
				still = append(still, r)
			}
		}
		inFlight = still
		s.Running, s.InFlight = len(inFlight), len(inFlight) > 0
		fires, watermark, _ := s.Arm(now)
		for _, f := range fires {
			inFlight = append(inFlight, run{start: f.FireAt, end: f.FireAt.Add(45 * time.Second)})
		}
		require.LessOrEqual(t, len(inFlight), maxConcurrent, "at %s", now.Sub(t0))
		s.Watermark = watermark
	}
}
