package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

// A fire that starts a run is recorded on its premise — the runs in flight its decider
// counted — only when PostgreSQL holds no other run of the schedule in flight; otherwise
// nothing is recorded and the answer names the runs the premise missed. The fire's own tick
// recorded before, a redrive, a run that ended and a fire that starts nothing are not
// checked against it.
func TestRecordFireChecksThePremiseOfAStart(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	s := newSchedule(t, st, "premise")
	tick := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	start := func(at time.Time, key string, premise *store.FirePremise) store.Fire {
		f := fireAt(s, at)
		f.Status, f.Event, f.IdempotencyKey, f.WorkflowID, f.Premise = domain.RunRunning, nil, key, "schedule/premise/run/"+key, premise
		return f
	}
	runs := func() int {
		var n int
		require.NoError(t, st.Pool.QueryRow(ctx, "SELECT count(*) FROM schedule_runs WHERE schedule_id = $1", s.ID).Scan(&n))
		return n
	}

	// A run recorded by a fire whose answer the decider lost: it has no premise to meet.
	lost, created, err := st.RecordFire(ctx, start(tick, "lost", nil))
	require.NoError(t, err)
	require.True(t, created)

	_, _, err = st.RecordFire(ctx, start(tick.Add(time.Minute), "next", &store.FirePremise{}))
	var stale *store.StalePremise
	require.True(t, errors.As(err, &stale), "the premise missed the lost run: %v", err)
	require.Len(t, stale.Runs, 1)
	require.Equal(t, lost.ID, stale.Runs[0].ID)
	require.Equal(t, domain.RunRunning, stale.Runs[0].Status)
	require.Equal(t, 1, runs(), "nothing recorded")

	// Counted, it does not stand in the way.
	next, created, err := st.RecordFire(ctx, start(tick.Add(time.Minute), "next", &store.FirePremise{Running: []int64{lost.ID}}))
	require.NoError(t, err)
	require.True(t, created)
	// A retry of that record (its answer lost) is the run recorded before: the fire's own
	// run, which its premise does not count, is its answer, not a run it missed.
	again, created, err := st.RecordFire(ctx, start(tick.Add(time.Minute), "next", &store.FirePremise{Running: []int64{lost.ID}}))
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, next.ID, again.ID)

	// Fires that start nothing are not checked: a SKIPPED or BUFFERED tick.
	skip := fireAt(s, tick.Add(2*time.Minute))
	skip.Status, skip.Reason, skip.Event, skip.Premise = domain.RunSkipped, "overlap skip", nil, &store.FirePremise{}
	_, created, err = st.RecordFire(ctx, skip)
	require.NoError(t, err)
	require.True(t, created)
	buffered := fireAt(s, tick.Add(3*time.Minute))
	buffered.Status, buffered.Reason, buffered.Event, buffered.Premise = domain.RunBuffered, "waits", nil, &store.FirePremise{}
	_, created, err = st.RecordFire(ctx, buffered)
	require.NoError(t, err)
	require.True(t, created)

	// A run that ended, and a redrive (outside the overlap policy and the cap), do not count.
	require.NoError(t, st.FinishRun(ctx, lost.ID, domain.RunSucceeded, ""))
	_, err = st.Pool.Exec(ctx, "UPDATE schedule_runs SET redrives = 1 WHERE id = $1", next.ID)
	require.NoError(t, err)
	_, created, err = st.RecordFire(ctx, start(tick.Add(4*time.Minute), "after", &store.FirePremise{}))
	require.NoError(t, err)
	require.True(t, created, "nothing counted is in flight")
}
