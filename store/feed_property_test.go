package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

// feedConsumer is one reader of the outbox feed: a topic filter ("" reads every topic), a
// page size, how eagerly it reads (its lag), its cursor and what it read, in order.
type feedConsumer struct {
	topic  string
	limit  int
	eager  float64 // the chance it reads a page at each step
	cursor store.FeedPosition
	read   []int64
}

// step reads one page and moves the cursor on, as a consumer does.
func (c *feedConsumer) step(t *testing.T, st *store.Store) int {
	t.Helper()
	page, err := st.ReadFeed(context.Background(), c.cursor, c.topic, c.limit)
	require.NoError(t, err)
	for _, e := range page.Events {
		c.read = append(c.read, e.ID)
	}
	c.cursor = page.Next
	return len(page.Events)
}

// TestFeedReadsEveryEventOnceWhateverTheLag is the feed's promise as a property: over
// random topics, page sizes, lags, immediate writes, armed fires (some armed after a
// release passed their time) and releases, every consumer reads every event of its filter
// exactly once, in position order, however far behind it falls.
func TestFeedReadsEveryEventOnceWhateverTheLag(t *testing.T) {
	st := testenv.Store(t)
	ctx := context.Background()
	topics := []string{"fa", "fb", "fc"}
	// A worker is alive throughout, so a fire released late fires late rather than MISSED.
	_, err := st.Pool.Exec(ctx, `INSERT INTO worker_liveness (worker_id, started_at, beat_at) VALUES ('feed-property', now() - interval '1 day', now() + interval '1 day')`)
	require.NoError(t, err)

	for round := 0; round < 6; round++ {
		seed := uint64(time.Now().UnixNano())
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, uint64(round)))
			s := newSchedule(t, st, fmt.Sprintf("feed-prop-%d-%d", round, seed%100000))
			// The simulated clock the releases run as of: after every earlier round's.
			frontier, err := st.Q.ReleaseFrontier(ctx)
			require.NoError(t, err)
			clock := frontier.Frontier.UTC().Add(time.Hour)
			if real := time.Now().UTC(); clock.Before(real) {
				clock = real
			}
			clock = clock.Truncate(time.Second)
			tick := clock.Add(-time.Hour)
			var consumers []*feedConsumer
			// Each consumer starts at the end of the feed as it stands, so earlier rounds'
			// events are not its business.
			for i := 0; i < 8; i++ {
				start, err := st.FeedEndNow(ctx)
				require.NoError(t, err)
				consumers = append(consumers, &feedConsumer{
					topic: []string{"", "fa", "fb", "fc"}[rng.IntN(4)], limit: []int{1, 2, 3, 7, 50}[rng.IntN(5)],
					eager: []float64{0.05, 0.3, 0.9}[rng.IntN(3)], cursor: start,
				})
			}
			startedAfter := maxEventID(t, st)
			for op := 0; op < 250; op++ {
				switch k := rng.IntN(10); {
				case k < 3: // a fire recorded at its time: its position is its transaction
					tick = tick.Add(time.Second)
					recordFeedFire(t, st, s, tick, topics[rng.IntN(len(topics))], nil)
				case k < 6: // a fire armed ahead — or, late, behind the release frontier
					tick = tick.Add(time.Second)
					visible := clock.Add(time.Duration(rng.IntN(90)-30) * time.Second)
					recordFeedFire(t, st, s, tick, topics[rng.IntN(len(topics))], &visible)
				case k < 8: // a release as of the clock, which moves on
					clock = clock.Add(time.Duration(rng.IntN(20)) * time.Second)
					_, err := st.ReleaseDueAsOf(ctx, &clock, nil)
					require.NoError(t, err)
				default: // consumers read, each as eager as it is
					for _, c := range consumers {
						if rng.Float64() < c.eager {
							c.step(t, st)
						}
					}
				}
			}
			// Release everything armed, then every consumer reads to the end.
			clock = clock.Add(10 * time.Minute)
			_, err = st.ReleaseDueAsOf(ctx, &clock, nil)
			require.NoError(t, err)
			for i, c := range consumers {
				want := feedInPositionOrder(t, st, startedAfter, c.topic)
				// The feed's horizon waits for every older transaction of the cluster (other
				// tests run beside this one): read until the consumer has all or time is up.
				for deadline := time.Now().Add(30 * time.Second); len(c.read) < len(want) && time.Now().Before(deadline); {
					if c.step(t, st) == 0 {
						time.Sleep(20 * time.Millisecond)
					}
				}
				require.Equal(t, want, c.read, "consumer %d (topic %q, limit %d): every event of its filter once, in position order", i, c.topic, c.limit)
			}
		})
	}
}

// recordFeedFire records a fire of s at tick with an event on topic: at its time, or armed
// to be visible at visible.
func recordFeedFire(t *testing.T, st *store.Store, s store.Schedule, tick time.Time, topic string, visible *time.Time) {
	t.Helper()
	next := tick.Add(time.Second)
	f := store.Fire{
		ScheduleID: s.ID, ScheduledAt: tick, FiredAt: tick, Trigger: domain.TriggerScheduled, Status: domain.RunSucceeded,
		IdempotencyKey: domain.TickKey(s.ID, tick), NextRunAt: &next, VisibleAt: visible,
		Event: &domain.Event{Topic: topic, Type: "x", Data: json.RawMessage(`{}`)},
	}
	if visible != nil {
		f.FiredAt = *visible
	}
	_, created, err := st.RecordFire(context.Background(), f)
	require.NoError(t, err)
	require.True(t, created)
}

func maxEventID(t *testing.T, st *store.Store) int64 {
	t.Helper()
	var id int64
	require.NoError(t, st.Pool.QueryRow(context.Background(), `SELECT COALESCE(max(id), 0) FROM event_store`).Scan(&id))
	return id
}

// feedInPositionOrder is every event after afterID that has a feed position (written at
// its fire, or released), of topic ("" all), in position order: (its transaction — the
// release's for an armed fire —, its visible time — none for one written at its fire —, id).
func feedInPositionOrder(t *testing.T, st *store.Store, afterID int64, topic string) []int64 {
	t.Helper()
	rows, err := st.Pool.Query(context.Background(), `
		SELECT o.event_id
		FROM outbox_messages o
		LEFT JOIN LATERAL (SELECT f.tx_id FROM feed_releases f WHERE o.tx_id IS NULL AND f.released_until >= o.visible_at
		                   ORDER BY f.released_until LIMIT 1) rel ON true
		WHERE o.event_id > $1 AND ($2 = '' OR o.topic = $2) AND (o.tx_id IS NOT NULL OR rel.tx_id IS NOT NULL)
		ORDER BY COALESCE(o.tx_id, rel.tx_id), CASE WHEN o.tx_id IS NULL THEN o.visible_at END NULLS FIRST, o.event_id`, afterID, topic)
	require.NoError(t, err)
	ids := []int64{}
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	return ids
}

// A fire armed after a release already passed its time (a planner back after an outage,
// behind the releasers) is released by the transaction that arms it, at that transaction's
// position: a consumer that read past the release reads it, and it is judged as a late fire.
func TestFireArmedBehindTheReleaseReachesAConsumerPastIt(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	_, err := st.Pool.Exec(ctx, `INSERT INTO worker_liveness (worker_id, started_at, beat_at) VALUES ('straggler', now() - interval '1 day', now() + interval '1 day')`)
	require.NoError(t, err)
	s := newSchedule(t, st, "straggler")
	clock := time.Now().UTC().Truncate(time.Second)
	tick := clock.Add(-time.Hour)
	_, err = st.ReleaseDueAsOf(ctx, &clock, nil)
	require.NoError(t, err)
	recordFeedFire(t, st, s, tick, "fa", nil) // written after the release
	c := &feedConsumer{cursor: store.FeedStart, limit: 10}
	for deadline := time.Now().Add(20 * time.Second); len(c.read) == 0 && time.Now().Before(deadline); {
		if c.step(t, st) == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	require.Len(t, c.read, 1, "the consumer read past the release")

	visible := clock.Add(-10 * time.Second) // behind the release frontier
	recordFeedFire(t, st, s, tick.Add(time.Second), "fa", &visible)
	for deadline := time.Now().Add(20 * time.Second); len(c.read) == 1 && time.Now().Before(deadline); {
		if c.step(t, st) == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	require.Len(t, c.read, 2, "the fire armed behind the release is in the feed after the consumer's cursor")
	runs, err := st.ListRuns(ctx, s.ID, 0, 10)
	require.NoError(t, err)
	require.Len(t, runs, 2)
	require.False(t, runs[0].Armed, "released by the transaction that armed it")
	require.Equal(t, domain.RunSucceeded, runs[0].Status, "late while a worker was alive: fired late")
}
