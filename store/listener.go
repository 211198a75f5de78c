package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The channels an API process listens on (migrations/00021_device_notifications.sql).
const (
	// channelTokenChanged carries the id of an API token that was revoked or changed.
	channelTokenChanged = "tickgate_token_changed" // #nosec G101 -- a LISTEN channel's name, no credential
	// channelTokenApplied carries "<token id>:<backend pid>": that listener has dropped
	// its cached tokens after hearing the change.
	channelTokenApplied = "tickgate_token_applied"
	// channelClaimable carries the id of a PC that has an execution to claim.
	channelClaimable = "tickgate_claimable"
	// channelFeed says the event feed has something new (migrations/00101_feed_notifications.sql).
	channelFeed = "tickgate_feed"
	// ListenerApplicationName names every listening connection in pg_stat_activity, so a
	// revocation can tell which listeners it must hear back from.
	ListenerApplicationName = "tickgate-listener"
)

// Listener is an API process's one listening connection to PostgreSQL. It keeps the
// process's token cache and wakes agents' long-polls, at no statement per request.
//
// The freshness rule: the cache is trusted only while the connection is up and a round
// trip on it (the LISTENs, or a ping every FreshFor/4) succeeded less than FreshFor ago.
// PostgreSQL delivers a connection's notifications before the answer to any later
// request on it, so a round trip that started after a revocation committed has applied
// it. A lost or silent connection thus stops the cache from answering within FreshFor,
// and a revocation that waits FreshFor for the listeners that do not acknowledge it
// (AwaitTokenChange) leaves no process trusting the token.
type Listener struct {
	cfg       *pgx.ConnConfig
	logf      func(string, ...any)
	freshFor  time.Duration
	pingEvery time.Duration
	cancel    context.CancelFunc
	done      chan struct{}

	mu        sync.Mutex
	closed    bool // Close was called: long-polls end at once
	connected bool
	freshAt   time.Time // when the last successful round trip started
	// epoch changes whenever cached tokens may be wrong: at every (re)connection and every
	// token change heard. A token read from the database under an older epoch is not kept.
	epoch  uint64
	tokens map[[32]byte]cachedToken
	acks   []string                      // token changes applied, to acknowledge
	heard  map[int64][]*TokenChangeWatch // token id → the revocations waiting for its acks
	// Claim wakeups: seq numbers every claimable notification (and reconnection), pcSeq
	// the last one per PC, resetSeq the last reconnection (notifications may be lost).
	seq, resetSeq uint64
	pcSeq         map[int64]uint64
	waiters       map[int64][]chan struct{}
	// feedChanged is closed, and replaced, at every feed notification and (re)connection.
	feedChanged chan struct{}
}

type cachedToken struct {
	row   Token
	epoch uint64
}

// ListenerOptions configure a Listener.
type ListenerOptions struct {
	// FreshFor is how long the token cache is trusted after the last round trip on the
	// listening connection (default 2 seconds).
	FreshFor time.Duration
	// Logf receives connection losses (default: none).
	Logf func(string, ...any)
}

// maxCachedTokens bounds the cache; past it the cache starts over.
const maxCachedTokens = 10000

// StartListener opens the listening connection to the database at s's pool's address and
// keeps it open (reconnecting with backoff) until Close.
func (s *Store) StartListener(opts ListenerOptions) *Listener {
	if opts.FreshFor <= 0 {
		opts.FreshFor = 2 * time.Second
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Listener{
		cfg: s.Pool.Config().ConnConfig.Copy(), logf: opts.Logf, freshFor: opts.FreshFor, pingEvery: opts.FreshFor / 4,
		cancel: cancel, done: make(chan struct{}),
		tokens: map[[32]byte]cachedToken{}, heard: map[int64][]*TokenChangeWatch{},
		pcSeq: map[int64]uint64{}, waiters: map[int64][]chan struct{}{}, feedChanged: make(chan struct{}),
	}
	go l.run(ctx)
	return l
}

// Close stops listening: the cache stops answering, and long-polls answer at once (close
// it before the HTTP server waits for its requests).
func (l *Listener) Close() {
	l.mu.Lock()
	l.closed = true
	l.wakeAll()
	l.mu.Unlock()
	l.cancel()
	<-l.done
}

func (l *Listener) run(ctx context.Context) {
	defer close(l.done)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		up, err := l.session(ctx)
		l.lost()
		if ctx.Err() != nil {
			return
		}
		if up {
			backoff = 100 * time.Millisecond
		}
		l.logf("listener: %v (reconnecting in %s; tokens are read from the database meanwhile)", err, backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// session is one listening connection's life; up reports whether it got to listen.
func (l *Listener) session(ctx context.Context) (up bool, err error) {
	cfg := l.cfg.Copy()
	cfg.OnNotification = l.onNotification
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["application_name"] = ListenerApplicationName
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := pgx.ConnectConfig(cctx, cfg)
	cancel()
	if err != nil {
		return false, fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.Background())
	started := time.Now()
	lctx, cancel := context.WithTimeout(ctx, l.freshFor)
	_, err = conn.Exec(lctx, "LISTEN "+channelTokenChanged+"; LISTEN "+channelTokenApplied+"; LISTEN "+channelClaimable+"; LISTEN "+channelFeed)
	cancel()
	if err != nil {
		return false, fmt.Errorf("listen: %w", err)
	}
	pid := conn.PgConn().PID()
	l.up(started)
	nextPing := started.Add(l.pingEvery)
	for {
		wctx, cancel := context.WithDeadline(ctx, nextPing)
		err := conn.PgConn().WaitForNotification(wctx)
		cancel()
		if ctx.Err() != nil {
			return true, ctx.Err()
		}
		if err != nil && !pgconn.Timeout(err) {
			return true, fmt.Errorf("wait: %w", err)
		}
		for _, id := range l.takeAcks() {
			actx, cancel := context.WithTimeout(ctx, l.freshFor)
			_, err := conn.Exec(actx, "SELECT pg_notify($1, $2)", channelTokenApplied, id+":"+strconv.FormatUint(uint64(pid), 10))
			cancel()
			if err != nil {
				return true, fmt.Errorf("acknowledge token change: %w", err)
			}
		}
		if now := time.Now(); !now.Before(nextPing) {
			pctx, cancel := context.WithTimeout(ctx, l.freshFor/2)
			err := conn.Ping(pctx)
			cancel()
			if err != nil {
				return true, fmt.Errorf("ping: %w", err)
			}
			l.markFresh(now)
			nextPing = now.Add(l.pingEvery)
		}
	}
}

// up starts a listening session: whatever was cached, and whatever a long-poll was
// waiting for, may have changed unheard while no connection listened.
func (l *Listener) up(at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.connected, l.freshAt = true, at
	l.epoch++
	clear(l.tokens)
	l.seq++
	l.resetSeq = l.seq
	l.wakeAll()
}

// lost ends a session: the cache stops answering until the next one.
func (l *Listener) lost() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.connected = false
	l.epoch++
	clear(l.tokens)
	l.acks = nil
	l.seq++
	l.resetSeq = l.seq
	l.wakeAll()
}

func (l *Listener) markFresh(at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.connected {
		l.freshAt = at
	}
}

func (l *Listener) takeAcks() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	acks := l.acks
	l.acks = nil
	return acks
}

// onNotification runs on the listening connection's goroutine, inside its reads.
func (l *Listener) onNotification(_ *pgconn.PgConn, n *pgconn.Notification) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch n.Channel {
	case channelTokenChanged:
		l.epoch++
		clear(l.tokens)
		l.acks = append(l.acks, n.Payload)
	case channelTokenApplied:
		idText, pidText, ok := strings.Cut(n.Payload, ":")
		id, err1 := strconv.ParseInt(idText, 10, 64)
		pid, err2 := strconv.ParseUint(pidText, 10, 32)
		if !ok || err1 != nil || err2 != nil {
			return
		}
		for _, w := range l.heard[id] {
			w.acked[uint32(pid)] = true
			close(w.changed)
			w.changed = make(chan struct{})
		}
	case channelClaimable:
		pc, err := strconv.ParseInt(n.Payload, 10, 64)
		if err != nil {
			return
		}
		l.seq++
		l.pcSeq[pc] = l.seq
		for _, w := range l.waiters[pc] {
			close(w)
		}
		delete(l.waiters, pc)
	case channelFeed:
		l.feedChange()
	}
}

func (l *Listener) wakeAll() {
	l.feedChange()
	for pc, ws := range l.waiters {
		for _, w := range ws {
			close(w)
		}
		delete(l.waiters, pc)
	}
}

// Fresh reports whether the token cache may answer now (the freshness rule).
func (l *Listener) Fresh() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.connected && time.Since(l.freshAt) < l.freshFor
}

// Known returns the token's row when this process's cache holds it and may answer now (the
// freshness rule), at no statement; false sends the caller to Authenticate.
func (l *Listener) Known(token string) (Token, bool) {
	if !validTokenShape(token) {
		return Token{}, false
	}
	h := tokenHash(token)
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.tokens[h]
	if !ok || c.epoch != l.epoch || !l.connected || time.Since(l.freshAt) >= l.freshFor {
		return Token{}, false
	}
	return c.row, true
}

// Authenticate is Store.Authenticate answered from this process's cache when the cache is
// fresh; a token read from the database is kept only if no change was heard meanwhile.
func (l *Listener) Authenticate(ctx context.Context, s *Store, token string) (Token, error) {
	if !validTokenShape(token) {
		return Token{}, ErrNotFound
	}
	h := tokenHash(token)
	l.mu.Lock()
	epoch, fresh := l.epoch, l.connected && time.Since(l.freshAt) < l.freshFor
	if c, ok := l.tokens[h]; ok && fresh && c.epoch == epoch {
		l.mu.Unlock()
		return c.row, nil
	}
	l.mu.Unlock()
	row, err := s.Authenticate(ctx, token)
	if err != nil || !fresh {
		return row, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.epoch == epoch && l.connected {
		if len(l.tokens) >= maxCachedTokens {
			clear(l.tokens)
		}
		l.tokens[h] = cachedToken{row: row, epoch: epoch}
	}
	return row, nil
}

// TokenChangeWatch collects the listeners' acknowledgements of one token's change.
type TokenChangeWatch struct {
	l       *Listener
	id      int64
	acked   map[uint32]bool // listener pids that acknowledged (guarded by l.mu)
	changed chan struct{}   // closed and replaced on each acknowledgement (guarded by l.mu)
}

// WatchTokenChange starts collecting acknowledgements of a change of token id; take it
// before the change commits, so none is missed, and Stop it when done.
func (l *Listener) WatchTokenChange(id int64) *TokenChangeWatch {
	w := &TokenChangeWatch{l: l, id: id, acked: map[uint32]bool{}, changed: make(chan struct{})}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.heard[id] = append(l.heard[id], w)
	return w
}

// Stop ends the collection.
func (w *TokenChangeWatch) Stop() {
	l := w.l
	l.mu.Lock()
	defer l.mu.Unlock()
	ws := l.heard[w.id]
	for i, x := range ws {
		if x == w {
			l.heard[w.id] = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(l.heard[w.id]) == 0 {
		delete(l.heard, w.id)
	}
}

// Await returns once every API process listening now has dropped its cached tokens after
// the change (committed before the call), or once FreshFor (and a margin) has passed,
// after which a listener that did not acknowledge has stopped trusting its cache (the
// freshness rule). It returns the listeners (backend pids) that did not acknowledge.
func (w *TokenChangeWatch) Await(ctx context.Context, s *Store) ([]uint32, error) {
	l := w.l
	timer := time.NewTimer(l.freshFor + l.freshFor/4)
	defer timer.Stop()
	pids, err := s.Q.ListenerPIDs(ctx, ListenerApplicationName)
	if err != nil {
		return nil, fmt.Errorf("listeners: %w", mapErr(err))
	}
	for {
		l.mu.Lock()
		var missing []uint32
		for _, pid := range pids {
			if !w.acked[uint32(pid)] { // #nosec G115 -- a backend's pid is positive (pg_stat_activity), as the notifications' uint32 says
				missing = append(missing, uint32(pid)) // #nosec G115 -- a backend's pid is positive
			}
		}
		changed := w.changed
		l.mu.Unlock()
		if len(missing) == 0 {
			return nil, nil
		}
		select {
		case <-changed:
		case <-timer.C:
			return missing, nil
		case <-ctx.Done():
			return missing, ctx.Err()
		}
	}
}

// ClaimMark is taken before a claim that may come back empty: WaitClaimable(mark) then
// returns at once if an execution became claimable on the PC after it.
func (l *Listener) ClaimMark() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}

// deafPoll is how often a long-poll claims again while no connection listens.
const deafPoll = time.Second

// WaitClaimable waits until an execution of PC pcID may have become claimable since mark
// (a notification, or a reconnection after which one may have been missed), or ctx ends;
// it reports whether the caller should claim again. While no connection listens it
// waits at most deafPoll.
func (l *Listener) WaitClaimable(ctx context.Context, pcID int64, mark uint64) bool {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return false
	}
	if l.pcSeq[pcID] > mark || l.resetSeq > mark {
		l.mu.Unlock()
		return true
	}
	var deaf <-chan time.Time
	if !l.connected {
		t := time.NewTimer(deafPoll)
		defer t.Stop()
		deaf = t.C
	}
	w := make(chan struct{})
	l.waiters[pcID] = append(l.waiters[pcID], w)
	l.mu.Unlock()
	select {
	case <-w:
		l.mu.Lock()
		defer l.mu.Unlock()
		return !l.closed
	case <-deaf:
		l.dropWaiter(pcID, w)
		return true
	case <-ctx.Done():
		l.dropWaiter(pcID, w)
		return false
	}
}

func (l *Listener) dropWaiter(pcID int64, w chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ws := l.waiters[pcID]
	for i, x := range ws {
		if x == w {
			l.waiters[pcID] = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(l.waiters[pcID]) == 0 {
		delete(l.waiters, pcID)
	}
}
