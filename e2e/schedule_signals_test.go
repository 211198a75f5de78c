package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/client"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// TestScheduleSignalsFromAnotherService sends each signal the schedule workflow documents
// (workflows/schedule_contract.go: pause, resume, trigger, refresh, reschedule, backfill)
// through a real Temporal client to a schedule created through the API, as another service
// would — with signal-with-start, since the schedule rests between them — and checks each
// one's effect in PostgreSQL.
func TestScheduleSignalsFromAnotherService(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	ctx := context.Background()
	const name = "signalled"
	st.CreateSchedule(t, map[string]any{
		"name": name, "spec": map[string]any{"cron": "0 * * * *"},
		"action": map[string]any{"kind": "event", "topic": "t", "type": "x"},
	})
	signal := func(signalName string, arg any) {
		t.Helper()
		require.NoError(t, signalSchedule(ctx, st, name, signalName, arg), signalName)
	}
	row := func() store.Schedule {
		t.Helper()
		r, err := st.Store.GetSchedule(ctx, name)
		require.NoError(t, err)
		return r
	}
	runs := func(trigger domain.Trigger) []store.ScheduleRun {
		t.Helper()
		all, err := st.Store.ListRuns(ctx, row().ID, 0, 1000)
		require.NoError(t, err)
		var out []store.ScheduleRun
		for _, r := range all {
			if r.Trigger == trigger {
				out = append(out, r)
			}
		}
		return out
	}
	const wait, tick = 30 * time.Second, 100 * time.Millisecond

	// trigger: a manual run is recorded, once per request id.
	signal(workflows.ScheduleTrigger, workflows.TriggerRequest{RequestID: "billing-1"})
	signal(workflows.ScheduleTrigger, workflows.TriggerRequest{RequestID: "billing-1"})
	require.Eventually(t, func() bool { return len(runs(domain.TriggerManual)) == 1 }, wait, tick, "trigger records a manual run")

	// pause: paused with the note, no next fire.
	signal(workflows.SchedulePause, workflows.PauseRequest{Note: "by billing"})
	require.Eventually(t, func() bool { r := row(); return r.Paused && r.PauseNote == "by billing" && r.NextRunAt == nil }, wait, tick, "pause")

	// resume: running again, next fire at the next hour.
	signal(workflows.ScheduleResume, nil)
	nextHour := time.Now().UTC().Truncate(time.Hour).Add(time.Hour)
	require.Eventually(t, func() bool {
		r := row()
		return !r.Paused && r.NextRunAt != nil && r.NextRunAt.Equal(nextHour)
	}, wait, tick, "resume")

	// reschedule: the next fire moves to the given time and happens there.
	at := time.Now().UTC().Add(3 * time.Second).Truncate(time.Second)
	signal(workflows.ScheduleReschedule, workflows.RescheduleRequest{NextRunAt: at})
	require.Eventually(t, func() bool {
		for _, r := range runs(domain.TriggerScheduled) {
			if r.ScheduledAt.Equal(at) && r.Status == domain.RunSucceeded {
				return true
			}
		}
		return false
	}, wait, tick, "the rescheduled fire happens at next_run_at")

	// backfill: yesterday's 24 hourly ticks run, though the schedule was created today; a
	// range whose end comes before its start is refused and changes nothing.
	yesterday := time.Now().UTC().Truncate(24 * time.Hour).Add(-24 * time.Hour)
	signal(workflows.ScheduleBackfill, workflows.BackfillRequest{Start: yesterday.Add(time.Hour), End: yesterday})
	signal(workflows.ScheduleBackfill, workflows.BackfillRequest{Start: yesterday, End: yesterday.Add(24*time.Hour - time.Second)})
	require.Eventually(t, func() bool { return len(runs(domain.TriggerBackfill)) == 24 }, wait, tick, "backfill runs yesterday's ticks")
	for _, r := range runs(domain.TriggerBackfill) {
		require.Equal(t, yesterday, r.ScheduledAt.UTC().Truncate(24*time.Hour), "only yesterday's ticks")
		require.Zero(t, r.ScheduledAt.UTC().Minute())
	}

	// refresh: the definition changed in PostgreSQL is reloaded; next_run_at follows it.
	_, err := st.Store.UpdateSchedule(ctx, store.ScheduleChange{
		Name: name, Spec: json.RawMessage(`{"cron":"30 0 1 1 *","timezone":"UTC"}`),
		Action: json.RawMessage(`{"kind":"event","topic":"t","type":"x"}`), Overlap: "skip",
	})
	require.NoError(t, err)
	signal(workflows.ScheduleRefresh, nil)
	newYear := time.Date(time.Now().UTC().Year()+1, 1, 1, 0, 30, 0, 0, time.UTC)
	require.Eventually(t, func() bool { r := row(); return r.NextRunAt != nil && r.NextRunAt.Equal(newYear) }, wait, tick, "refresh")
}

// TestBackfillBeforeCreationThroughTheAPI: a schedule created now and backfilled over
// yesterday runs the ticks its spec gives there (an interval's grid extended backwards);
// a range that holds no tick is a 422 saying why, and records nothing.
func TestBackfillBeforeCreationThroughTheAPI(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	ctx := context.Background()
	api := st.Client(t)
	yesterday := time.Now().UTC().Truncate(24 * time.Hour).Add(-24 * time.Hour)
	for _, c := range []struct {
		name string
		spec map[string]any
	}{{"hourly-cron", map[string]any{"cron": "0 * * * *"}}, {"hourly-interval", map[string]any{"interval": "1h"}}} {
		name, spec := c.name, c.spec
		st.CreateSchedule(t, map[string]any{
			"name": name, "spec": spec, "action": map[string]any{"kind": "event", "topic": "t", "type": "x"},
		})
		bf, err := api.BackfillScheduleWithResponse(ctx, name, client.BackfillRequest{Start: yesterday, End: yesterday.Add(24*time.Hour - time.Second)})
		require.NoError(t, err)
		require.Equal(t, http.StatusAccepted, bf.StatusCode())
		require.Equal(t, 24, *bf.JSON202.Ticks, name)
		row, err := st.Store.GetSchedule(ctx, name)
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			runs, err := st.Store.ListRuns(ctx, row.ID, 0, 1000)
			require.NoError(t, err)
			n := 0
			for _, r := range runs {
				if r.Trigger == domain.TriggerBackfill && r.Status == domain.RunSucceeded {
					n++
				}
			}
			return n == 24
		}, 30*time.Second, 100*time.Millisecond, "%s: yesterday's ticks ran", name)
	}

	st.CreateSchedule(t, map[string]any{
		"name": "yearly", "spec": map[string]any{"cron": "0 0 1 1 *"}, "action": map[string]any{"kind": "event", "topic": "t", "type": "x"},
	})
	// A mid-year hour of last year: yesterday would hold the yearly tick on January 2nd.
	midYear := time.Date(time.Now().UTC().Year()-1, 6, 15, 0, 0, 0, 0, time.UTC)
	_, err := api.BackfillScheduleWithResponse(ctx, "yearly", client.BackfillRequest{Start: midYear, End: midYear.Add(time.Hour)})
	var refused *client.Error
	require.ErrorAs(t, err, &refused)
	require.Equal(t, http.StatusUnprocessableEntity, refused.Status)
	require.Contains(t, refused.Detail, `no tick of cron "0 0 1 1 *"`)
	require.Equal(t, "start", refused.Field)
	row, err := st.Store.GetSchedule(ctx, "yearly")
	require.NoError(t, err)
	runs, err := st.Store.ListRuns(ctx, row.ID, 0, 10)
	require.NoError(t, err)
	require.Empty(t, runs, "a refused backfill records nothing")
}
