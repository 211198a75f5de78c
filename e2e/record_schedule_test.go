package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"

	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/worker"
	"github.com/tickgate/tickgate/workflows"
)

// TestArmedWindowHistoryReplays runs an every-second event schedule on the whole product
// until it has armed two windows of ticks, pauses it (retracting the armed fires not yet
// due), and replays the schedule workflow's history against the current code. With
// TICKGATE_RECORD_HISTORIES=1 it also writes the history to
// workflows/testdata/schedule_armed_windows.json, where TestReplayHistories keeps replaying
// it after later changes.
func TestArmedWindowHistoryReplays(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	rec := &recorder{t: t, tc: st.Temporal, dir: recordDir(t), recorded: map[string]*historypb.History{}}
	ctx := context.Background()

	created := time.Now()
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{
		"name": "armed-windows", "spec": map[string]any{"interval": "1s"},
		"action": map[string]any{"kind": "event", "topic": "record", "type": "tick"},
	}, http.StatusCreated, nil)
	row, err := st.Store.GetSchedule(ctx, "armed-windows")
	require.NoError(t, err)
	// The first window holds the ticks up to ~30 s after the creation; a tick beyond that
	// was armed by a second window.
	require.Eventually(t, func() bool {
		var last time.Time
		err := st.Store.Pool.QueryRow(ctx, `SELECT COALESCE(max(scheduled_at), '-infinity') FROM schedule_runs WHERE schedule_id = $1`, row.ID).Scan(&last)
		return err == nil && last.After(created.Add(35*time.Second))
	}, time.Minute, 200*time.Millisecond, "a second window was armed")
	st.JSON(t, http.MethodPost, "/api/v1/schedules/armed-windows/pause", map[string]any{"note": "recorded"}, http.StatusOK, nil)
	var armedAhead int
	require.NoError(t, st.Store.Pool.QueryRow(ctx, `SELECT count(*) FROM schedule_runs WHERE schedule_id = $1 AND armed AND visible_at > now()`, row.ID).Scan(&armedAhead))
	require.Zero(t, armedAhead, "the pause retracted the armed fires not yet due")

	id := workflows.ScheduleWorkflowID("armed-windows")
	rec.waitIdle(id)
	rec.write(id, workflows.ScheduleWorkflowType, "schedule_armed_windows")
	r, err := worker.NewReplayer()
	require.NoError(t, err)
	require.NoError(t, r.ReplayWorkflowHistory(nil, rec.recorded["schedule_armed_windows"]), "the armed windows' history does not replay")
}
