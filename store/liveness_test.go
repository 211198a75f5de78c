package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

func recordAlive(t *testing.T, st *store.Store, id string, from, to time.Time) {
	t.Helper()
	_, err := st.Pool.Exec(context.Background(),
		"INSERT INTO worker_liveness (worker_id, started_at, beat_at) VALUES ($1, $2, $3)", id, from, to)
	require.NoError(t, err)
}

// Outages are the spans no worker covered, each worker alive from its start to its last
// beat plus the grace: overlapping workers cover each other, a gap between them is an
// outage, and so are the spans before the first and after the last.
func TestOutagesAreTheSpansNoWorkerCovered(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	g := store.LivenessGrace
	recordAlive(t, st, "a", t0.Add(10*time.Minute), t0.Add(20*time.Minute))
	recordAlive(t, st, "b", t0.Add(15*time.Minute), t0.Add(30*time.Minute)) // overlaps a
	recordAlive(t, st, "c", t0.Add(40*time.Minute), t0.Add(50*time.Minute))

	got, err := st.Outages(ctx, t0, t0.Add(time.Hour), 90*time.Second)
	require.NoError(t, err)
	require.Equal(t, []store.Outage{
		{From: t0, Until: t0.Add(10 * time.Minute),
			MissedReason: "missed: no tickgate worker was running from 2026-03-01T12:00:00Z to 2026-03-01T12:10:00Z, and the tick is older than the catch-up window (1m30s)"},
		{From: t0.Add(30*time.Minute + g), Until: t0.Add(40 * time.Minute),
			MissedReason: "missed: no tickgate worker was running from 2026-03-01T12:30:15Z to 2026-03-01T12:40:00Z, and the tick is older than the catch-up window (1m30s)"},
		{From: t0.Add(50*time.Minute + g), Until: t0.Add(time.Hour),
			MissedReason: "missed: no tickgate worker was running from 2026-03-01T12:50:15Z to 2026-03-01T13:00:00Z, and the tick is older than the catch-up window (1m30s)"},
	}, got)

	covered, err := st.Outages(ctx, t0.Add(12*time.Minute), t0.Add(30*time.Minute), 0)
	require.NoError(t, err)
	require.Empty(t, covered, "a and b cover 12:12 to 12:30 between them")
}

// S2 for armed fires: released on time, or late while a worker ran, an armed fire is true
// as scheduled; released late after an outage, it obeys the catch-up window like any tick
// — a catch-up fire inside it, MISSED beyond it (its event gone, the reason naming the
// outage, counted missed, never in the feed).
func TestAReleaseAfterAnOutageObeysTheCatchupWindow(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	tick := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	release := tick.Add(89 * time.Second) // the whole stack was stopped for 88 s
	arm := func(name string, windowMs int64) store.Schedule {
		s := newSchedule(t, st, name)
		_, err := st.Pool.Exec(ctx, "UPDATE schedules SET catchup_window_ms = $1 WHERE id = $2", windowMs, s.ID)
		require.NoError(t, err)
		_, created, err := st.RecordFire(ctx, armedFire(s, tick))
		require.NoError(t, err)
		require.True(t, created)
		return s
	}
	noWindow := arm("no-window", 0)
	caughtUp := arm("caught-up", (2 * time.Minute).Milliseconds())
	missed := arm("missed", (30 * time.Second).Milliseconds())

	// A worker alive until 2 s before the tick, the next from the release on: an outage
	// from 12:00:13 (its last beat plus the grace) to the release.
	recordAlive(t, st, "before", tick.Add(-time.Hour), tick.Add(-2*time.Second))
	recordAlive(t, st, "after", release, release)
	fires, err := st.ReleaseDueAsOf(ctx, &release, nil)
	require.NoError(t, err)
	require.Len(t, fires, 3)
	byName := map[int64]store.ReleasedFire{}
	for _, f := range fires {
		byName[f.ScheduleID] = f
	}
	require.Equal(t, domain.RunSucceeded, byName[caughtUp.ID].Status)
	require.Equal(t, domain.TriggerCatchup, byName[caughtUp.ID].Trigger, "inside the 2m window: a catch-up fire")
	require.Equal(t, domain.RunMissed, byName[missed.ID].Status, "beyond the 30s window: MISSED")
	require.Equal(t, domain.RunMissed, byName[noWindow.ID].Status, "window 0, and tickgate was down")

	run := onlyRun(t, st, missed.ID)
	require.Equal(t, domain.RunMissed, run.Status)
	require.Nil(t, run.FiredAt)
	require.Equal(t, "missed: no tickgate worker was running from 2026-03-01T12:00:13Z to 2026-03-01T12:01:29Z, "+
		"and the tick is older than the catch-up window (30s)", run.Reason)
	var events int
	require.NoError(t, st.Pool.QueryRow(ctx, "SELECT count(*) FROM event_store WHERE schedule_run_id = $1", run.ID).Scan(&events))
	require.Zero(t, events, "a missed fire's event never happened")
	row, err := st.GetSchedule(ctx, "missed")
	require.NoError(t, err)
	require.Equal(t, int64(1), row.MissedCount)
	require.Zero(t, row.FiredCount)
	require.Nil(t, row.LastRunAt)
	row, err = st.GetSchedule(ctx, "caught-up")
	require.NoError(t, err)
	require.Equal(t, int64(1), row.FiredCount)
	require.Equal(t, release, row.LastRunAt.UTC())
}

// Late while a worker ran (a releaser behind, not a stopped one): the fire is true as
// scheduled, its lateness in fired_at.
func TestALateReleaseWhileTickgateRanIsAScheduledFire(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	tick := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	release := tick.Add(5 * time.Minute)
	s := newSchedule(t, st, "behind")
	_, _, err := st.RecordFire(ctx, armedFire(s, tick))
	require.NoError(t, err)
	recordAlive(t, st, "busy", tick.Add(-time.Hour), release)
	fires, err := st.ReleaseDueAsOf(ctx, &release, nil)
	require.NoError(t, err)
	require.Len(t, fires, 1)
	run := onlyRun(t, st, s.ID)
	require.Equal(t, domain.RunSucceeded, run.Status)
	require.Equal(t, domain.TriggerScheduled, run.Trigger)
	require.Equal(t, release, run.FiredAt.UTC(), "fired late, and says how late")
}

func onlyRun(t *testing.T, st *store.Store, scheduleID int64) store.ScheduleRun {
	t.Helper()
	runs, err := st.ListRuns(context.Background(), scheduleID, 0, 10)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	return runs[0]
}
