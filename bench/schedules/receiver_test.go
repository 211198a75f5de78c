package main

import (
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
)

// The receiver counts each tick's key once, counts a second request with the same key as a
// duplicate, and leaves a key that never came +Inf; requests of one path are not another's.
func TestReceiverCountsEachKeyOnceAndTheRestAsDuplicates(t *testing.T) {
	rcv, err := startReceiver()
	require.NoError(t, err)
	t.Cleanup(rcv.stop)
	tick := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	post := func(path, key string) {
		req, err := http.NewRequest(http.MethodPost, rcv.url+path, strings.NewReader(`{"job":"bench"}`))
		require.NoError(t, err)
		if key != "" {
			req.Header.Set(domain.IdempotencyKeyHeader, key)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	post(receiverPathTickgate, domain.TickKey(7, tick))
	post(receiverPathTickgate, domain.TickKey(7, tick)) // a second delivery of the same tick
	post(receiverPathTickgate, domain.TickKey(8, tick))
	post(receiverPathTickgate, domain.TickKey(8, tick.Add(time.Minute)))
	post(receiverPathTickgate, "")
	post(receiverPathNative, "t00-nhttp-00000@"+tick.Format(time.RFC3339Nano))

	require.Equal(t, 2, rcv.received(receiverPathTickgate, tick))
	require.Equal(t, 1, rcv.received(receiverPathTickgate, tick.Add(time.Minute)))
	require.Equal(t, 1, rcv.received(receiverPathNative, tick))
	dups, unkeyed := rcv.duplicates(receiverPathTickgate)
	require.Equal(t, 1, dups)
	require.Equal(t, 1, unkeyed)
	dups, unkeyed = rcv.duplicates(receiverPathNative)
	require.Zero(t, dups)
	require.Zero(t, unkeyed)

	late := rcv.lateness(receiverPathTickgate, []string{"7", "8", "9"}, []time.Time{tick})
	require.Len(t, late, 3)
	require.Equal(t, 2, late.fired())
	require.True(t, math.IsInf(late[2].ms, 1), "schedule 9's key never came")
	require.Equal(t, 1, rcv.lateness(receiverPathNative, []string{"t00-nhttp-00000"}, []time.Time{tick}).fired())
}

// A phase whose window missed part of its work, or that never ran, has no CPU per fire.
func TestCPUPerFireIsNotAttributedToAnOverlappedOrUnmeasuredWindow(t *testing.T) {
	tick := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	b := &burstResult{window: time.Minute, late: lateness{{tick: tick, ms: 5}, {tick: tick, ms: 7}}}
	b.cpu.Temporal, b.cpu.Worker, b.cpu.Postgres = 40_000_000, 20_000_000, 10_000_000 // ns
	tm, w, p := b.cpuPerFire()
	require.Equal(t, []float64{20, 10, 5}, []float64{tm, w, p})

	b.overlapped = true
	tm, _, _ = b.cpuPerFire()
	require.True(t, math.IsNaN(tm))
	var none *burstResult
	tm, _, _ = none.cpuPerFire()
	require.True(t, math.IsNaN(tm))
	require.Equal(t, "x_cpu_ms_per_fire_temporal=na x_cpu_ms_per_fire_tickgate=na x_cpu_ms_per_fire_pg=na", cpuKeys("x_", none))
}
