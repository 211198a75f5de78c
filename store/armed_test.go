package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

// armedFire is fireAt(s, tick) armed: visible at tick.
func armedFire(s store.Schedule, tick time.Time) store.Fire {
	f := fireAt(s, tick)
	visible := tick
	f.VisibleAt = &visible
	return f
}

func feedIDs(t *testing.T, st *store.Store, after int64) []int64 {
	t.Helper()
	rows, err := st.EventFeed(context.Background(), after, "", 100)
	require.NoError(t, err)
	ids := []int64{}
	for _, r := range rows {
		ids = append(ids, r.ID)
	}
	return ids
}

// feedOf waits until the feed after `after` holds want events (its horizon waits for every
// transaction of the cluster older than a row, and other tests run beside this one), then
// returns them.
func feedOf(t *testing.T, st *store.Store, after int64, want int) []int64 {
	t.Helper()
	var ids []int64
	require.Eventually(t, func() bool { ids = feedIDs(t, st, after); return len(ids) >= want }, 20*time.Second, 20*time.Millisecond)
	return ids
}

// The feed never shows an armed fire before its release, and a cursor taken before the
// release still gets it after: the release gives it a position after everything the
// cursor could have seen. Until then no read reports it (runs, counters, last_run_at).
func TestArmedFireIsHiddenUntilReleasedAndNeverSkipped(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	a, b := newSchedule(t, st, "armed-a"), newSchedule(t, st, "plain-b")
	tick := time.Now().UTC().Add(time.Hour).Truncate(time.Second)

	armed, created, err := st.RecordFire(ctx, armedFire(a, tick))
	require.NoError(t, err)
	require.True(t, created)
	// A plain fire commits after the arming (a newer transaction): the consumer reads it.
	_, _, err = st.RecordFire(ctx, fireAt(b, tick.Add(-time.Hour)))
	require.NoError(t, err)
	seen := feedOf(t, st, 0, 1)
	require.Len(t, seen, 1, "only the plain fire: the armed one is not visible")
	cursor := seen[0]

	runs, err := st.ListRuns(ctx, a.ID, 0, 10)
	require.NoError(t, err)
	require.Empty(t, runs, "an armed run is not listed")
	_, err = st.GetRun(ctx, a.ID, armed.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	row, err := st.GetSchedule(ctx, "armed-a")
	require.NoError(t, err)
	require.Zero(t, row.FiredCount)
	require.Nil(t, row.LastRunAt)
	require.Equal(t, tick, row.NextRunAt.UTC(), "the armed tick is still the next fire")

	released, err := st.ReleaseDue(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, released, "not due yet")
	require.Empty(t, feedIDs(t, st, cursor))

	released, err = st.ReleaseDueAsOf(ctx, &tick, nil)
	require.NoError(t, err)
	require.Len(t, released, 1)
	after := feedOf(t, st, cursor, 1)
	require.Equal(t, []int64{armedEventID(t, st, armed.ID)}, after, "the cursor taken before the release gets the released fire")

	runs, err = st.ListRuns(ctx, a.ID, 0, 10)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, tick, runs[0].FiredAt.UTC(), "fired when released")
	row, err = st.GetSchedule(ctx, "armed-a")
	require.NoError(t, err)
	require.Equal(t, int64(1), row.FiredCount)
	require.Equal(t, tick, row.LastRunAt.UTC())
	require.Equal(t, tick.Add(time.Minute), row.NextRunAt.UTC(), "the release applies the tick after")

	// Retrying the arming after the release changes nothing (S1).
	again, created, err := st.RecordFire(ctx, armedFire(a, tick))
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, armed.ID, again.ID)
	_, _, _, err = st.SetPaused(ctx, store.PauseChange{ID: a.ID, Paused: true, Actor: "test", Door: domain.DoorAPI})
	require.NoError(t, err)
	runs, err = st.ListRuns(ctx, a.ID, 0, 10)
	require.NoError(t, err)
	require.Len(t, runs, 1, "a pause does not retract a released fire")
}

// A retraction racing the release has exactly one winner per fire: either the fire is
// released (run, event in the feed, counted) or it is gone entirely, and the command's
// answer says which.
func TestRetractionAndReleaseHaveOneWinner(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	const n = 40
	tick := time.Now().UTC().Add(time.Hour).Truncate(time.Second)
	var scheds []store.Schedule
	for i := 0; i < n; i++ {
		s := newSchedule(t, st, "race-"+string(rune('a'+i%26))+string(rune('a'+i/26)))
		_, _, err := st.RecordFire(ctx, armedFire(s, tick))
		require.NoError(t, err)
		scheds = append(scheds, s)
	}
	retracted := make([]bool, n)
	var wg sync.WaitGroup
	for i, s := range scheds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The retraction's clock (now()) is an hour before the fire; the releaser's is
			// at it: both may take it.
			var r store.Retraction
			var err error
			if i%2 == 0 {
				_, _, r, err = st.SetPaused(ctx, store.PauseChange{ID: s.ID, Paused: true, Note: "race", Actor: "test", Door: domain.DoorAPI})
			} else {
				next := tick.Add(time.Hour)
				r, err = st.Reschedule(ctx, s.ID, &next)
			}
			require.NoError(t, err)
			retracted[i] = len(r.Ticks) == 1
		}()
	}
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := st.ReleaseDueAsOf(ctx, &tick, nil)
			require.NoError(t, err)
		}()
	}
	wg.Wait()
	_, err := st.ReleaseDueAsOf(ctx, &tick, nil) // whatever a skipped lock left
	require.NoError(t, err)

	var released int
	for _, r := range retracted {
		if !r {
			released++
		}
	}
	inFeed := map[string]bool{}
	require.Eventually(t, func() bool {
		rows, err := st.EventFeed(ctx, 0, "", 1000)
		require.NoError(t, err)
		for _, r := range rows {
			inFeed[r.AggregateID] = true
		}
		return len(rows) >= released
	}, 20*time.Second, 20*time.Millisecond)
	var wins [2]int
	for i, s := range scheds {
		runs, err := st.ListRuns(ctx, s.ID, 0, 10)
		require.NoError(t, err)
		var events int
		require.NoError(t, st.Pool.QueryRow(ctx, `SELECT count(*) FROM event_store WHERE aggregate_id = $1`, s.Name).Scan(&events))
		row, err := st.GetSchedule(ctx, s.Name)
		require.NoError(t, err)
		if retracted[i] {
			wins[0]++
			require.Empty(t, runs, "%s: retracted, yet its run is listed", s.Name)
			require.Zero(t, events, "%s: retracted, yet its event remains", s.Name)
			require.Zero(t, row.FiredCount)
		} else {
			wins[1]++
			require.Len(t, runs, 1, "%s: not retracted, so released", s.Name)
			require.True(t, inFeed[s.Name], "%s: released, so in the feed", s.Name)
			require.Equal(t, int64(1), row.FiredCount)
		}
	}
	t.Logf("retracted %d, released %d", wins[0], wins[1])
	var armedLeft int
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT count(*) FROM schedule_runs WHERE armed`).Scan(&armedLeft))
	require.Zero(t, armedLeft)
}

func armedEventID(t *testing.T, st *store.Store, runID int64) int64 {
	t.Helper()
	var id int64
	require.NoError(t, st.Pool.QueryRow(context.Background(), `SELECT id FROM event_store WHERE schedule_run_id = $1`, runID).Scan(&id))
	return id
}

// Deleting a schedule takes its armed fire's event and outbox message with it.
func TestDeleteTakesTheArmedFireWithIt(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	s := newSchedule(t, st, "armed-gone")
	_, _, err := st.RecordFire(ctx, armedFire(s, time.Now().UTC().Add(time.Hour)))
	require.NoError(t, err)
	_, _, err = st.DeleteSchedule(ctx, "armed-gone")
	require.NoError(t, err)
	var events, outbox int
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM event_store), (SELECT count(*) FROM outbox_messages)`).Scan(&events, &outbox))
	require.Zero(t, events)
	require.Zero(t, outbox)
}
