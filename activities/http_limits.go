package activities

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/tickgate/tickgate/domain"
)

// HostLimiter keeps an http action's deliveries kind to their receivers: per destination
// host, at most a number of requests in flight (domain.HostLimit.MaxInFlight, 100 unless
// set), at most a number sent a minute when one is set, and none sent while the host asked to
// be left alone (a 429 or 503 with Retry-After slows the whole host, not only the request
// that got it). Requests wait their turn in the order they asked.
//
// The limits hold per worker process: every delivery a process sends — the first attempts
// its sender sends, the retries its delivery activities make — waits in this process's
// limiter, and W worker processes send at most W times the limit to a host (docs/schedules.md
// says so). A Retry-After is heard by the process whose request got it.
type HostLimiter struct {
	// Limits are the operator's (TICKGATE_HTTP_HOST_LIMITS); an action's own limits narrow
	// them for its requests.
	Limits domain.HostLimits
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	mu    sync.Mutex
	hosts map[string]*hostGate
}

// hostGate is one host's state.
type hostGate struct {
	inFlight int
	queue    []*hostWaiter
	// tat is the rate's theoretical arrival time (GCRA): the next send is due at tat − burst.
	tat time.Time
	// pausedUntil: no new request before then, at the host's word (Retry-After).
	pausedUntil time.Time
	pauseWhy    string
	pauseTimer  *time.Timer
}

type hostWaiter struct {
	max   int
	ready chan struct{}
}

// HostSlot is a turn to send one request to a host: its Release must be called once the
// answer came (or none will).
type HostSlot struct {
	// Waited is how long the request waited for its turn, and Why, when it waited, what
	// made it: the host at its limit in flight, at its rate, or slowed by a Retry-After.
	Waited time.Duration
	Why    string

	release func()
}

// Release gives the turn back.
func (s *HostSlot) Release() {
	if s != nil && s.release != nil {
		s.release()
		s.release = nil
	}
}

func (l *HostLimiter) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *HostLimiter) gate(host string) *hostGate {
	if l.hosts == nil {
		l.hosts = map[string]*hostGate{}
	}
	g := l.hosts[host]
	if g == nil {
		g = &hostGate{}
		l.hosts[host] = g
	}
	return g
}

// LimitOf is the limit that applies to a request to host by an action with the limits own
// (nil: none of its own).
func (l *HostLimiter) LimitOf(host string, own *domain.HostLimit) domain.HostLimit {
	lim := l.Limits.Of(host)
	if own != nil {
		lim = lim.Narrowed(*own)
	}
	return lim
}

// Acquire waits for a turn to send a request to host under lim (LimitOf), until ctx ends.
func (l *HostLimiter) Acquire(ctx context.Context, host string, lim domain.HostLimit) (*HostSlot, error) {
	began := l.now()
	slot := &HostSlot{}
	l.mu.Lock()
	g := l.gate(host)
	for {
		// Slowed by the host itself: no request starts before its Retry-After is over.
		if wait := g.pausedUntil.Sub(l.now()); wait > 0 {
			slot.Why = g.pauseWhy
			l.mu.Unlock()
			if err := sleepCtx(ctx, wait); err != nil {
				return nil, err
			}
			l.mu.Lock()
			continue
		}
		break
	}
	limit := lim.MaxInFlight
	if limit <= 0 {
		limit = domain.DefaultHostMaxInFlight
	}
	if len(g.queue) == 0 && g.inFlight < limit {
		g.inFlight++
		l.mu.Unlock()
	} else {
		w := &hostWaiter{max: limit, ready: make(chan struct{})}
		g.queue = append(g.queue, w)
		slot.Why = fmt.Sprintf("host %s at its limit of %d in flight", host, limit)
		l.mu.Unlock()
		select {
		case <-w.ready: // the turn was handed over: counted in flight already
		case <-ctx.Done():
			l.mu.Lock()
			if i := indexOf(g.queue, w); i >= 0 {
				g.queue = append(g.queue[:i], g.queue[i+1:]...)
				l.mu.Unlock()
			} else {
				l.mu.Unlock()
				l.release(host) // handed over as ctx ended: give it back
			}
			return nil, ctx.Err()
		}
	}
	slot.release = func() { l.release(host) }
	if lim.PerMinute > 0 {
		if wait := l.reserveRate(host, lim.PerMinute); wait > 0 {
			slot.Why = fmt.Sprintf("host %s at its limit of %d requests a minute", host, lim.PerMinute)
			if err := sleepCtx(ctx, wait); err != nil {
				slot.Release()
				return nil, err
			}
		}
	}
	slot.Waited = l.now().Sub(began)
	if slot.Waited <= 0 {
		slot.Why = ""
	}
	return slot, nil
}

// reserveRate books the next send to host at perMinute (GCRA, a burst of a second's worth)
// and answers how long until it is due.
func (l *HostLimiter) reserveRate(host string, perMinute int) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.gate(host)
	interval := time.Minute / time.Duration(perMinute)
	burst := time.Duration(max(perMinute/60, 1)-1) * interval
	now := l.now()
	tat := g.tat
	if tat.Before(now) {
		tat = now
	}
	at := tat.Add(-burst)
	g.tat = tat.Add(interval)
	if at.Before(now) {
		return 0
	}
	return at.Sub(now)
}

// release ends a request in flight to host, and hands the turn to the next waiting one.
func (l *HostLimiter) release(host string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.gate(host)
	g.inFlight--
	l.grant(g)
}

// grant hands turns to the waiting requests, in order, while the host has room and is not
// slowed.
func (l *HostLimiter) grant(g *hostGate) {
	if l.now().Before(g.pausedUntil) {
		return
	}
	for len(g.queue) > 0 && g.inFlight < g.queue[0].max {
		w := g.queue[0]
		g.queue = g.queue[1:]
		g.inFlight++
		close(w.ready)
	}
}

// SlowDown holds every request to host not yet sent until the host's Retry-After (wait)
// is over: a 429 or 503 says the host, not only one request, needs the time.
func (l *HostLimiter) SlowDown(host string, status int, wait time.Duration) {
	if wait <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.gate(host)
	until := l.now().Add(wait)
	if !until.After(g.pausedUntil) {
		return
	}
	g.pausedUntil = until
	g.pauseWhy = fmt.Sprintf("host %s slowed by its Retry-After (HTTP %d %s) until %s", host, status, http.StatusText(status),
		until.UTC().Format(time.RFC3339))
	if g.pauseTimer != nil {
		g.pauseTimer.Stop()
	}
	g.pauseTimer = time.AfterFunc(wait, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.grant(g)
	})
}

// InFlight is how many requests to host are in flight now (tests, metrics).
func (l *HostLimiter) InFlight(host string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gate(host).inFlight
}

// SlowsHost reports whether a request's answer slows its whole host: a 429 or 503 that says
// when to come back.
func SlowsHost(status int, retryAfter time.Duration) bool {
	return retryAfter > 0 && (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable)
}

func indexOf(q []*hostWaiter, w *hostWaiter) int {
	for i, x := range q {
		if x == w {
			return i
		}
	}
	return -1
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
