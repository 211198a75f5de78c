package activities

import (
	"context"
	"errors"
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
	// queue is the line of requests waiting for their turn, in the order they joined it;
	// told of them, from its head, were told they are near their turn.
	queue []*hostWaiter
	told  int
	// tat is the rate's theoretical arrival time (GCRA): the next send is due at tat − burst.
	tat time.Time
	// pausedUntil: no request near its turn, and none sent, before then, at the host's word
	// (Retry-After).
	pausedUntil time.Time
	pauseWhy    string
	pauseTimer  *time.Timer
	// The host's pace: turns had in the second that began at paceStart, and in the one
	// before it.
	paceStart         time.Time
	paceNow, pacePrev int
}

type hostWaiter struct {
	max, perMinute int
	// why the waiter waits: the host at its limit in flight, or slowed by its Retry-After.
	why string
	// near is closed once the waiter is within its host's window (a new one is made when a
	// Retry-After recalls it); recall is closed when a Retry-After slows the host after the
	// waiter was told it was near; ready once it has its turn (counted in flight).
	near, recall, ready chan struct{}
	// recalls counts the recalls: a ticket told it was near before the last one was
	// recalled, whenever it comes to Turn.
	recalls int
}

// paceWindow is how far ahead of its turn a request is near it: the turns its host has in
// this much time.
const paceWindow = time.Second

// ErrHostSlowed is Turn's answer when the host was slowed by its Retry-After after the
// request was told it was near its turn: it keeps its place, and is told again (Near) when
// the wait is over.
var ErrHostSlowed = errors.New("host slowed by its Retry-After")

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

// Acquire waits for a turn to send a request to host under lim (LimitOf), until ctx ends:
// Join and Turn at once.
func (l *HostLimiter) Acquire(ctx context.Context, host string, lim domain.HostLimit) (*HostSlot, error) {
	t, err := l.Join(ctx, host, lim)
	if err != nil {
		return nil, err
	}
	for {
		slot, err := t.Turn(ctx)
		if !errors.Is(err, ErrHostSlowed) {
			return slot, err
		}
		if err := t.Near(ctx); err != nil {
			return nil, err
		}
	}
}

// HostTicket is a request's place in its host's line. It is near its turn once it is within
// the host's window (see hostGate.window): no more requests ahead of it than the host had
// turns in the last second, or its in-flight limit if more, and the host not slowed by its
// Retry-After. What must be done before a request leaves (a first attempt's record as being
// sent) is done once it is near, while the requests ahead of it are in flight, rather than
// while it holds a turn. Turn then waits for the turn itself.
type HostTicket struct {
	l     *HostLimiter
	host  string
	lim   domain.HostLimit
	began time.Time
	// w is the ticket's place in the line; nil once it had its turn or left, or when it had
	// one at once (granted).
	w       *hostWaiter
	granted bool
	// recalls is its waiter's count of recalls when it was last told it was near.
	recalls int
}

// Join puts a request to host under lim (LimitOf) in the host's line and waits, until ctx
// ends, for it to be near its turn. Turn must follow, or Leave.
func (l *HostLimiter) Join(ctx context.Context, host string, lim domain.HostLimit) (*HostTicket, error) {
	t := &HostTicket{l: l, host: host, lim: lim, began: l.now()}
	limit := lim.MaxInFlight
	if limit <= 0 {
		limit = domain.DefaultHostMaxInFlight
	}
	l.mu.Lock()
	g := l.gate(host)
	now := l.now()
	if len(g.queue) == 0 && g.inFlight < limit && !now.Before(g.pausedUntil) {
		g.inFlight++
		g.countTurn(now)
		t.granted = true
		l.mu.Unlock()
		return t, nil
	}
	w := &hostWaiter{max: limit, perMinute: lim.PerMinute, near: make(chan struct{}), recall: make(chan struct{}), ready: make(chan struct{})}
	w.why = fmt.Sprintf("host %s at its limit of %d in flight", host, limit)
	if now.Before(g.pausedUntil) {
		w.why = g.pauseWhy
	}
	g.queue = append(g.queue, w)
	t.w = w
	g.tell(now)
	l.mu.Unlock()
	if err := t.Near(ctx); err != nil {
		return nil, err
	}
	return t, nil
}

// Near waits, until ctx ends, for the ticket to be near its turn (at once for one that had
// its turn); on ctx's end the ticket leaves the line.
func (t *HostTicket) Near(ctx context.Context) error {
	t.l.mu.Lock()
	w := t.w
	var near chan struct{}
	if w != nil {
		near, t.recalls = w.near, w.recalls
	}
	t.l.mu.Unlock()
	if near == nil {
		return nil
	}
	select {
	case <-near:
		return nil
	case <-ctx.Done():
		t.Leave()
		return ctx.Err()
	}
}

// Turn waits, until ctx ends, for the ticket's turn — room among the host's requests in
// flight, then its place under the host's rate when it has one — and answers it. When the
// host is slowed by its Retry-After first, Turn answers ErrHostSlowed and the ticket keeps
// its place: Near, then Turn again. On ctx's end the ticket leaves the line.
func (t *HostTicket) Turn(ctx context.Context) (*HostSlot, error) {
	l := t.l
	l.mu.Lock()
	w := t.w
	var recall chan struct{}
	if w != nil {
		if w.recalls != t.recalls {
			l.mu.Unlock()
			return nil, ErrHostSlowed // recalled while what comes before its turn was done
		}
		recall = w.recall
	}
	l.mu.Unlock()
	why := ""
	if w != nil {
		select {
		case <-w.ready: // the turn was handed over: counted in flight already
		case <-recall:
			return nil, ErrHostSlowed
		case <-ctx.Done():
			t.Leave()
			return nil, ctx.Err()
		}
		l.mu.Lock()
		why, t.w, t.granted = w.why, nil, true
		l.mu.Unlock()
	}
	if !t.granted {
		return nil, fmt.Errorf("host %s: the request left its line", t.host)
	}
	t.granted = false
	host := t.host
	slot := &HostSlot{Why: why, release: func() { l.release(host) }}
	if t.lim.PerMinute > 0 {
		if wait := l.reserveRate(host, t.lim.PerMinute); wait > 0 {
			slot.Why = fmt.Sprintf("host %s at its limit of %d requests a minute", host, t.lim.PerMinute)
			if err := sleepCtx(ctx, wait); err != nil {
				slot.Release()
				return nil, err
			}
		}
	}
	slot.Waited = l.now().Sub(t.began)
	if slot.Waited <= 0 {
		slot.Why = ""
	}
	return slot, nil
}

// Leave gives the ticket's place back: out of the line, or its turn back if it had one and
// did not take it. A ticket whose Turn answered a slot has nothing to leave (the slot is
// released instead).
func (t *HostTicket) Leave() {
	l := t.l
	l.mu.Lock()
	g := l.gate(t.host)
	if w := t.w; w != nil {
		t.w = nil
		if i := indexOf(g.queue, w); i >= 0 {
			if i < g.told {
				g.told--
			}
			g.queue = append(g.queue[:i], g.queue[i+1:]...)
			g.tell(l.now())
			l.mu.Unlock()
			return
		}
		t.granted = true // handed its turn as it left: give it back
	}
	granted := t.granted
	t.granted = false
	l.mu.Unlock()
	if granted {
		l.release(t.host)
	}
}

// countTurn counts a turn had at now in the host's pace.
func (g *hostGate) countTurn(now time.Time) {
	if since := now.Sub(g.paceStart); since >= paceWindow {
		g.pacePrev = 0
		if since < 2*paceWindow {
			g.pacePrev = g.paceNow
		}
		g.paceStart, g.paceNow = now, 0
	}
	g.paceNow++
}

// window is how many waiters from the head of the line are near their turn, for w: as many
// as the host had turns in the last second, or w's limit in flight if more — at most a
// second's worth of w's rate when it has one.
func (g *hostGate) window(w *hostWaiter) int {
	n := max(g.paceNow, g.pacePrev, w.max)
	if w.perMinute > 0 {
		n = min(n, max(w.perMinute/60, 1))
	}
	return n
}

// tell tells the waiters within their window that they are near their turn, in order; none
// while the host is slowed.
func (g *hostGate) tell(now time.Time) {
	if now.Before(g.pausedUntil) {
		return
	}
	for g.told < len(g.queue) {
		w := g.queue[g.told]
		if g.told >= g.window(w) {
			return
		}
		close(w.near)
		g.told++
	}
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
// slowed, and tells those now within their window that they are near.
func (l *HostLimiter) grant(g *hostGate) {
	now := l.now()
	if now.Before(g.pausedUntil) {
		return
	}
	for len(g.queue) > 0 && g.inFlight < g.queue[0].max {
		w := g.queue[0]
		g.queue = g.queue[1:]
		if g.told > 0 {
			g.told--
		} else {
			close(w.near)
		}
		g.inFlight++
		g.countTurn(now)
		close(w.ready)
	}
	g.tell(now)
}

// SlowDown holds every request to host not yet sent until the host's Retry-After (wait)
// is over: a 429 or 503 says the host, not only one request, needs the time. The requests
// told they were near their turn are recalled (see ErrHostSlowed).
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
	for i, w := range g.queue {
		w.why = g.pauseWhy
		if i < g.told {
			close(w.recall)
			w.near, w.recall = make(chan struct{}), make(chan struct{})
			w.recalls++
		}
	}
	g.told = 0
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
