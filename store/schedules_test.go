package store_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

func newSchedule(t *testing.T, st *store.Store, name string) store.Schedule {
	t.Helper()
	s, err := st.CreateSchedule(context.Background(), store.NewSchedule{
		Name: name, Spec: json.RawMessage(`{"cron":"* * * * *"}`),
		Action: json.RawMessage(`{"kind":"event","topic":"t","type":"x"}`), Overlap: "skip",
	})
	require.NoError(t, err)
	return s
}

func fireAt(s store.Schedule, tick time.Time) store.Fire {
	next := tick.Add(time.Minute)
	return store.Fire{
		ScheduleID: s.ID, ScheduledAt: tick, FiredAt: tick.Add(10 * time.Millisecond), Trigger: domain.TriggerScheduled,
		Status: domain.RunSucceeded, IdempotencyKey: domain.TickKey(s.ID, tick),
		Event: &domain.Event{Topic: "t", Type: "x", Data: json.RawMessage(`{"n":1}`)}, NextRunAt: &next,
	}
}

func TestDuplicateNameIsConflict(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	newSchedule(t, st, "dup")
	_, err := st.CreateSchedule(context.Background(), store.NewSchedule{
		Name: "dup", Spec: json.RawMessage(`{}`), Action: json.RawMessage(`{"kind":"event"}`), Overlap: "skip",
	})
	require.ErrorIs(t, err, store.ErrConflict)
}

func TestCheckConstraintsRejectImpossibleRows(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	_, err := st.CreateSchedule(ctx, store.NewSchedule{Name: "bad-overlap", Spec: json.RawMessage(`{}`),
		Action: json.RawMessage(`{"kind":"event"}`), Overlap: "sometimes"})
	require.Error(t, err)
	_, err = st.CreateSchedule(ctx, store.NewSchedule{Name: "bad-action", Spec: json.RawMessage(`{}`),
		Action: json.RawMessage(`{"kind":"email"}`), Overlap: "skip"})
	require.Error(t, err)
	_, err = st.CreateSchedule(ctx, store.NewSchedule{Name: "bad name!", Spec: json.RawMessage(`{}`),
		Action: json.RawMessage(`{"kind":"event"}`), Overlap: "skip"})
	require.Error(t, err)
	s := newSchedule(t, st, "ok")
	_, err = st.Pool.Exec(ctx, `INSERT INTO schedule_runs (schedule_id, scheduled_at, trigger, status, idempotency_key)
		VALUES ($1, now(), 'scheduled', 'SKIPPED', 'k')`, s.ID)
	require.Error(t, err, "a SKIPPED run without a reason is impossible")
	_, err = st.Pool.Exec(ctx, `INSERT INTO schedule_runs (schedule_id, scheduled_at, trigger, status, idempotency_key, fired_at)
		VALUES ($1, now(), 'scheduled', 'DONE', 'k2', now())`, s.ID)
	require.Error(t, err, "unknown status")
}

func TestRecordFireCommitsRunEventOutboxAndSchedule(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	s := newSchedule(t, st, "fire")
	tick := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	run, created, err := st.RecordFire(ctx, fireAt(s, tick))
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, domain.RunSucceeded, run.Status)

	got, err := st.GetSchedule(ctx, "fire")
	require.NoError(t, err)
	require.Equal(t, int64(1), got.FiredCount)
	require.Equal(t, tick.Add(time.Minute), got.NextRunAt.UTC())
	require.Equal(t, tick.Add(10*time.Millisecond), got.LastRunAt.UTC())

	feed := eventually(t, st, 1)
	require.Equal(t, "fire", feed[0].AggregateID)
	require.JSONEq(t, `{"n":1}`, string(feed[0].Data))
}

func TestRecordFireTwiceRecordsTheTickOnce(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	s := newSchedule(t, st, "once")
	tick := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	// Many concurrent writers of the same tick (retries, a second worker): one run.
	var wg sync.WaitGroup
	createdCount := make(chan bool, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, created, err := st.RecordFire(ctx, fireAt(s, tick))
			require.NoError(t, err)
			createdCount <- created
		}()
	}
	wg.Wait()
	close(createdCount)
	n := 0
	for c := range createdCount {
		if c {
			n++
		}
	}
	require.Equal(t, 1, n)
	var runs, events, outbox int
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM schedule_runs), (SELECT count(*) FROM event_store),
		(SELECT count(*) FROM outbox_messages)`).Scan(&runs, &events, &outbox))
	require.Equal(t, []int{1, 1, 1}, []int{runs, events, outbox})
	got, err := st.GetSchedule(ctx, "once")
	require.NoError(t, err)
	require.Equal(t, int64(1), got.FiredCount)
}

func TestRecordFireOfDeletedScheduleIsNotFound(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	s := newSchedule(t, st, "gone")
	_, _, err := st.DeleteSchedule(ctx, "gone")
	require.NoError(t, err)
	_, _, err = st.RecordFire(ctx, fireAt(s, time.Now()))
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestEventFeedPagesWithCursorAndTopic(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	s := newSchedule(t, st, "feed")
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 5; i++ {
		f := fireAt(s, base.Add(time.Duration(i)*time.Minute))
		if i%2 == 1 {
			f.Event.Topic = "odd"
		}
		_, _, err := st.RecordFire(ctx, f)
		require.NoError(t, err)
	}
	eventually(t, st, 5)
	page1, err := st.EventFeed(ctx, 0, "", 3)
	require.NoError(t, err)
	require.Len(t, page1, 3)
	page2, err := st.EventFeed(ctx, page1[2].ID, "", 3)
	require.NoError(t, err)
	require.Len(t, page2, 2)
	require.Greater(t, page2[0].ID, page1[2].ID)
	odd, err := st.EventFeed(ctx, 0, "odd", 10)
	require.NoError(t, err)
	require.Len(t, odd, 2)
}

func TestEventFeedHidesRowsUntilOlderTransactionsFinish(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	s := newSchedule(t, st, "order")
	// An open transaction that started first holds back every later outbox row, so a
	// consumer that has read past them can never miss it when it commits.
	tx, err := st.Pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck
	_, err = tx.Exec(ctx, "SELECT pg_current_xact_id()")
	require.NoError(t, err)
	_, _, err = st.RecordFire(ctx, fireAt(s, time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)))
	require.NoError(t, err)
	feed, err := st.EventFeed(ctx, 0, "", 10)
	require.NoError(t, err)
	require.Empty(t, feed)
	require.NoError(t, tx.Rollback(ctx))
	eventually(t, st, 1)
}

// eventually waits for the feed to hold n events: the feed lags behind every transaction
// still running in the cluster, and parallel tests run transactions of their own.
func eventually(t *testing.T, st *store.Store, n int) []store.FeedEvent {
	t.Helper()
	var feed []store.FeedEvent
	require.Eventually(t, func() bool {
		var err error
		feed, err = st.EventFeed(context.Background(), 0, "", 100)
		require.NoError(t, err)
		return len(feed) == n
	}, 10*time.Second, 20*time.Millisecond)
	return feed
}

func TestUpdateScheduleIsOptimistic(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	s := newSchedule(t, st, "opt")
	change := store.ScheduleChange{Name: "opt", ExpectedVersion: s.Version, Spec: json.RawMessage(`{"cron":"*/5 * * * *"}`),
		Action: s.Action, Overlap: "allow_all"}
	updated, err := st.UpdateSchedule(ctx, change)
	require.NoError(t, err)
	require.Equal(t, s.Version+1, updated.Version)
	require.Equal(t, domain.OverlapAllowAll, updated.Overlap)
	// A second writer that read the old version loses, and changes nothing.
	change.Overlap = "skip"
	_, err = st.UpdateSchedule(ctx, change)
	require.ErrorIs(t, err, store.ErrStale)
	got, err := st.GetSchedule(ctx, "opt")
	require.NoError(t, err)
	require.Equal(t, domain.OverlapAllowAll, got.Overlap)
	change.Name = "missing"
	_, err = st.UpdateSchedule(ctx, change)
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestBackfillRunsAMissedTickButNeverRepeatsARun(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	s := newSchedule(t, st, "bf")
	missedTick := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	_, created, err := st.RecordFire(ctx, store.Fire{ScheduleID: s.ID, ScheduledAt: missedTick, Trigger: domain.TriggerScheduled,
		Status: domain.RunMissed, Reason: "outage", IdempotencyKey: domain.TickKey(s.ID, missedTick)})
	require.NoError(t, err)
	require.True(t, created)
	ranTick := missedTick.Add(time.Minute)
	_, _, err = st.RecordFire(ctx, fireAt(s, ranTick))
	require.NoError(t, err)

	backfill := func(tick time.Time) (store.ScheduleRun, bool) {
		f := fireAt(s, tick)
		f.Trigger = domain.TriggerBackfill
		run, created, err := st.RecordFire(ctx, f)
		require.NoError(t, err)
		return run, created
	}
	run, created := backfill(missedTick)
	require.True(t, created, "the missed tick runs now")
	require.Equal(t, domain.TriggerBackfill, run.Trigger)
	require.Equal(t, domain.RunSucceeded, run.Status)
	_, created = backfill(ranTick)
	require.False(t, created, "a tick that ran is not run again")
	_, created = backfill(missedTick)
	require.False(t, created, "nor is the backfilled one")
	var runs int
	require.NoError(t, st.Pool.QueryRow(ctx, "SELECT count(*) FROM schedule_runs").Scan(&runs))
	require.Equal(t, 2, runs)
}

func TestRecordMissedWritesEachTickOnceInOneTransaction(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	s := newSchedule(t, st, "missed")
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ticks := []time.Time{base, base.Add(time.Minute), base.Add(2 * time.Minute)}
	next := base.Add(3 * time.Minute)
	n, _, err := st.RecordMissed(ctx, s.ID, ticks, "outage", &next, nil)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	n, _, err = st.RecordMissed(ctx, s.ID, append(ticks, next), "outage", &next, nil)
	require.NoError(t, err)
	require.Equal(t, 1, n, "ticks recorded before are not recorded again")
	got, err := st.GetSchedule(ctx, "missed")
	require.NoError(t, err)
	require.Equal(t, int64(4), got.MissedCount)
	require.Equal(t, next, got.NextRunAt.UTC())
}
