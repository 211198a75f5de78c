package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/tickgate/tickgate/store"
)

// fire is one (schedule, tick) the bench expected: its lateness in milliseconds, +Inf when
// it never fired within the drain timeout (a figure no percentile may hide).
type fire struct {
	tick time.Time
	ms   float64
}

type lateness []fire

func (l lateness) fired() int {
	n := 0
	for _, f := range l {
		if !math.IsInf(f.ms, 1) {
			n++
		}
	}
	return n
}

func (l lateness) firedAt(tick time.Time) int {
	n := 0
	for _, f := range l {
		if f.tick.Equal(tick) && !math.IsInf(f.ms, 1) {
			n++
		}
	}
	return n
}

// maxAt is the latest fire of tick in milliseconds (+Inf if one never came).
func (l lateness) maxAt(tick time.Time) float64 {
	m := math.Inf(-1)
	for _, f := range l {
		if f.tick.Equal(tick) {
			m = max(m, f.ms)
		}
	}
	return m
}

// pct is the p-th percentile (nearest rank), +Inf when it falls on a fire that never came.
func (l lateness) pct(p float64) float64 {
	if len(l) == 0 {
		return math.NaN()
	}
	ms := make([]float64, len(l))
	for i, f := range l {
		ms[i] = f.ms
	}
	slices.Sort(ms)
	i := int(math.Ceil(p/100*float64(len(ms)))) - 1
	return ms[min(max(i, 0), len(ms)-1)]
}

// commitLateness reads, for each schedule of ids and each tick, when its fire became what a
// user sees: the commit of the transaction that wrote the run and its event
// (pg_xact_commit_timestamp of the event row's xmin; event rows are never updated, so xmin
// is that transaction). With armed fires (outbox_messages.visible_at, migration 00008) it is
// the commit of the transaction that gave the fire's outbox message its feed position — the
// fire's own for a fire recorded at its tick, the release's for an armed one (the outbox
// row's xmin: the release is the only update it gets) — and never earlier than a
// visible_at; a fire not yet released is not seen. Lateness is that moment − the nominal
// tick, unclamped; ticks without a fire seen are +Inf.
func commitLateness(ctx context.Context, st *store.Store, ids []int64, ticks []time.Time) (lateness, error) {
	felt, joins, err := feltExpr(ctx, st)
	if err != nil {
		return nil, err
	}
	rows, err := st.Pool.Query(ctx, `
		SELECT r.schedule_id, r.scheduled_at, min(extract(epoch FROM (`+felt+` - r.scheduled_at)) * 1000)
		FROM schedule_runs r JOIN event_store e ON e.schedule_run_id = r.id `+joins+`
		WHERE r.schedule_id = ANY($1) AND r.scheduled_at = ANY($2) AND r.fired_at IS NOT NULL
		GROUP BY r.schedule_id, r.scheduled_at`, ids, ticks)
	if err != nil {
		return nil, fmt.Errorf("read commit times: %w", err)
	}
	defer rows.Close()
	got := map[fireKey[int64]]float64{}
	for rows.Next() {
		var id int64
		var tick time.Time
		var ms *float64
		if err := rows.Scan(&id, &tick, &ms); err != nil {
			return nil, err
		}
		if ms == nil {
			continue // an armed fire not yet released: not seen (track_commit_timestamp is on: benchstack.Options)
		}
		got[fireKey[int64]{id, tick.UnixNano()}] = *ms
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return collect(ids, ticks, got), nil
}

// fireKey names one schedule's fire of one tick (the tick as UnixNano, a comparable key).
type fireKey[ID comparable] struct {
	id   ID
	tick int64
}

// collect lists the lateness of every (schedule, tick) pair; a pair not in got never fired
// and is +Inf.
func collect[ID comparable](ids []ID, ticks []time.Time, got map[fireKey[ID]]float64) lateness {
	var out lateness
	for _, tick := range ticks {
		for _, id := range ids {
			ms, ok := got[fireKey[ID]{id, tick.UnixNano()}]
			if !ok {
				ms = math.Inf(1)
			}
			out = append(out, fire{tick: tick, ms: ms})
		}
	}
	return out
}

// feltExpr is the SQL for the moment a fire is seen: the commit of the transaction that
// gave its outbox message its feed position — the fire's own for a fire recorded at its
// tick, the release's for an armed one (feed_releases: the release whose range covers its
// visible_at; a fire released late takes a position of its own) — never before visible_at.
func feltExpr(context.Context, *store.Store) (expr, joins string, err error) {
	joins = `JOIN outbox_messages o ON o.event_id = e.id
		LEFT JOIN LATERAL (SELECT f.xmin FROM feed_releases f WHERE o.tx_id IS NULL AND f.released_until >= o.visible_at
		                   ORDER BY f.released_until LIMIT 1) rel ON true`
	expr = `CASE WHEN o.tx_id IS NULL AND rel.xmin IS NULL THEN NULL ELSE GREATEST(pg_xact_commit_timestamp(e.xmin),
		COALESCE(pg_xact_commit_timestamp(rel.xmin), pg_xact_commit_timestamp(o.xmin)), o.visible_at, r.visible_at) END`
	return expr, joins, nil
}
