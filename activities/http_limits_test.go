package activities_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// A host never has more requests in flight than its limit, whoever asks: two hundred
// requests at once, under the default limit of one host and an action's own narrower limit
// of another, each hold their turn while they "send"; every one gets its turn, in the end.
func TestHostLimiterKeepsEachHostWithinItsLimitInFlight(t *testing.T) {
	t.Parallel()
	l := &activities.HostLimiter{Limits: domain.HostLimits{Hosts: map[string]domain.HostLimit{"api.example.com": {MaxInFlight: 7}}}}
	own := &domain.HostLimit{MaxInFlight: 3}
	type host struct {
		name           string
		lim            domain.HostLimit
		inFlight, peak atomic.Int32
		done           atomic.Int32
	}
	hosts := []*host{
		{name: "api.example.com", lim: l.LimitOf("api.example.com", nil)},
		{name: "hooks.example.org", lim: l.LimitOf("hooks.example.org", own)},
	}
	require.Equal(t, 7, hosts[0].lim.MaxInFlight, "the operator's limit of the host")
	require.Equal(t, 3, hosts[1].lim.MaxInFlight, "the action's own, narrower than the default 100")
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		h := hosts[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			slot, err := l.Acquire(context.Background(), h.name, h.lim)
			if !assertNoError(t, err) {
				return
			}
			n := h.inFlight.Add(1)
			for {
				p := h.peak.Load()
				if n <= p || h.peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(time.Millisecond) // the request in flight
			h.inFlight.Add(-1)
			slot.Release()
			h.done.Add(1)
		}()
	}
	wg.Wait()
	for _, h := range hosts {
		require.EqualValues(t, 100, h.done.Load(), h.name)
		require.LessOrEqual(t, h.peak.Load(), int32(h.lim.MaxInFlight), "%s: in flight never above its limit", h.name)
		require.Greater(t, h.peak.Load(), int32(1), "%s: requests did go out side by side", h.name)
		require.Zero(t, l.InFlight(h.name))
	}
}

func assertNoError(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Errorf("acquire: %v", err)
		return false
	}
	return true
}

// A request that waited for its turn says why: the host at its limit in flight.
func TestHostLimiterSaysWhyARequestWaited(t *testing.T) {
	t.Parallel()
	l := &activities.HostLimiter{}
	lim := domain.HostLimit{MaxInFlight: 1}
	first, err := l.Acquire(context.Background(), "api.example.com", lim)
	require.NoError(t, err)
	require.Empty(t, first.Why, "the first had its turn at once")
	got := make(chan *activities.HostSlot)
	go func() {
		s, err := l.Acquire(context.Background(), "api.example.com", lim)
		assertNoError(t, err)
		got <- s
	}()
	select {
	case <-got:
		t.Fatal("a second request went out while the first was in flight")
	case <-time.After(50 * time.Millisecond):
	}
	first.Release()
	second := <-got
	require.Equal(t, "host api.example.com at its limit of 1 in flight", second.Why)
	second.Release()
}

// A 429 or 503 with Retry-After slows the whole host, not only the request that got it:
// until the wait is over no request to the host starts, while other hosts go on; then they
// do, and say what held them.
func TestRetryAfterSlowsTheWholeHost(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	l := &activities.HostLimiter{Now: clock.Now}
	lim := l.LimitOf("api.example.com", nil)
	require.True(t, activities.SlowsHost(429, 30*time.Second))
	require.True(t, activities.SlowsHost(503, 30*time.Second))
	require.False(t, activities.SlowsHost(500, 30*time.Second), "a 500 says nothing of the host")
	require.False(t, activities.SlowsHost(429, 0), "no Retry-After: nothing to honour")
	l.SlowDown("api.example.com", 429, 30*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := l.Acquire(ctx, "api.example.com", lim)
	require.ErrorIs(t, err, context.DeadlineExceeded, "no request to the host before its Retry-After is over")
	other, err := l.Acquire(context.Background(), "hooks.example.org", lim)
	require.NoError(t, err, "another host is not slowed")
	other.Release()

	clock.Add(30 * time.Second)
	slot, err := l.Acquire(context.Background(), "api.example.com", lim)
	require.NoError(t, err, "the wait is over")
	slot.Release()
}

// An action's rate limit spaces its requests: a second's worth go at once, the next waits
// for its place in the minute.
func TestHostRatePerMinuteSpacesRequests(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	l := &activities.HostLimiter{Now: clock.Now}
	lim := l.LimitOf("api.example.com", &domain.HostLimit{PerMinute: 120}) // 2 a second
	for i := 0; i < 2; i++ {
		s, err := l.Acquire(context.Background(), "api.example.com", lim)
		require.NoError(t, err, "request %d: within the second's burst", i)
		require.Empty(t, s.Why)
		s.Release()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := l.Acquire(ctx, "api.example.com", lim)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the third waits for its place (half a second on)")
}
