package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/scheduleplan"
	"github.com/tickgate/tickgate/internal/testing/teststack"
)

// With TICKGATE_SCHEDULES_RESIDENT=true a new schedule — one, a bulk create's, a paused one
// — is planned to be woken at once: the planner's first look starts its workflow, which then
// stays open. Without it, the first look arms the first fire ahead of it (the default).
func TestResidentSchedulesAreWokenAtTheirCreation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	event := map[string]any{"kind": "event", "topic": "resident", "type": "tick"}
	plan := func(st *teststack.Stack, name string) (string, time.Time) {
		row, err := st.Store.GetSchedule(ctx, name)
		require.NoError(t, err)
		require.NotNil(t, row.PlanAt, name)
		require.Nil(t, row.Owner, name)
		return *row.PlanAction, *row.PlanAt
	}

	st := teststack.Start(t, teststack.Options{NoWorker: true, Configure: func(c *config.Config) { c.SchedulesResident = true }})
	before := time.Now()
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{"name": "resident-one", "spec": map[string]any{"cron": "0 3 * * *"},
		"action": event}, http.StatusCreated, nil)
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{"name": "resident-paused", "spec": map[string]any{"cron": "0 3 * * *"},
		"action": event, "paused": true}, http.StatusCreated, nil)
	st.JSON(t, http.MethodPost, "/api/v1/schedules/bulk", map[string]any{"items": []any{
		map[string]any{"name": "resident-bulk", "spec": map[string]any{"interval": "1h"}, "action": event},
	}}, http.StatusCreated, nil)
	for _, name := range []string{"resident-one", "resident-paused", "resident-bulk"} {
		action, at := plan(st, name)
		require.Equal(t, scheduleplan.Wake, action, name)
		require.WithinRange(t, at, before.Add(-time.Second), time.Now().Add(time.Second), "%s: woken at once", name)
	}

	atRest := teststack.Start(t, teststack.Options{NoWorker: true})
	atRest.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{"name": "at-rest-one", "spec": map[string]any{"interval": "1h"},
		"action": event}, http.StatusCreated, nil)
	action, at := plan(atRest, "at-rest-one")
	require.Equal(t, scheduleplan.Arm, action)
	require.True(t, at.After(time.Now().Add(time.Minute)), "armed ahead of its first fire, not woken")
}
