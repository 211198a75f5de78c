package api

import (
	"crypto/sha256"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// Failed authentication costs bounded work, whoever sends it (docs/security.md):
//
//   - A token the database did not know (or knows revoked) is remembered, so showing it
//     again costs no statement. A token is random and a revocation final, so a bad token
//     never turns good: the memory needs no expiry, only a bound (maxBadTokens, oldest out).
//   - Each client address (an IPv6 address by its /64) may fail authentication
//     AuthFailures times a minute; past that, it is answered 429 with Retry-After until
//     its minute ends, before anything is looked up, for every token this process does not
//     already hold in its cache (so agents behind the same address as a broken client go on
//     working). The addresses are bounded too (maxFailingAddrs).
//
// The client address is the connection's peer, or, with TrustedProxies, the nearest
// address in X-Forwarded-For that is not a trusted proxy (clientIPExtractor).

// DefaultAuthFailures is how many failed authentications a minute a client address may
// make before it is answered 429 (TICKGATE_API_AUTH_FAILURES).
const DefaultAuthFailures = 30

// authFailureWindow is the period the failures of an address are counted over.
const authFailureWindow = time.Minute

const (
	// maxBadTokens bounds the bad tokens remembered.
	maxBadTokens = 10000
	// maxFailingAddrs bounds the client addresses whose failures are counted.
	maxFailingAddrs = 10000
)

// authGuard holds the bad tokens and the failures per address.
type authGuard struct {
	// limit is the failures an address may make per window; negative: no limit.
	limit int
	now   func() time.Time

	mu      sync.Mutex
	bad     map[[32]byte]struct{}
	badRing [][32]byte // the bad tokens in the order they were remembered
	badNext int        // where the next one goes in badRing (over the oldest, once full)
	addrs   map[netip.Prefix]*addrFailures
}

// addrFailures counts an address's failures in the window that began at start.
type addrFailures struct {
	start time.Time
	n     int
}

func newAuthGuard(limit int, now func() time.Time) *authGuard {
	if limit == 0 {
		limit = DefaultAuthFailures
	}
	return &authGuard{limit: limit, now: now, bad: map[[32]byte]struct{}{}, addrs: map[netip.Prefix]*addrFailures{}}
}

// knownBad reports whether token was found bad before.
func (g *authGuard) knownBad(token string) bool {
	h := sha256.Sum256([]byte(token))
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.bad[h]
	return ok
}

// rememberBad remembers token as bad, forgetting the oldest one when full.
func (g *authGuard) rememberBad(token string) {
	h := sha256.Sum256([]byte(token))
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.bad[h]; ok {
		return
	}
	if len(g.badRing) < maxBadTokens {
		g.badRing = append(g.badRing, h)
	} else {
		delete(g.bad, g.badRing[g.badNext])
		g.badRing[g.badNext] = h
		g.badNext = (g.badNext + 1) % maxBadTokens
	}
	g.bad[h] = struct{}{}
}

// blocked reports whether addr has used up its failures, and how long until its window ends.
func (g *authGuard) blocked(addr netip.Prefix) (time.Duration, bool) {
	if g.limit < 0 {
		return 0, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	f, ok := g.addrs[addr]
	if !ok || f.n < g.limit {
		return 0, false
	}
	left := f.start.Add(authFailureWindow).Sub(g.now())
	if left <= 0 {
		delete(g.addrs, addr)
		return 0, false
	}
	return left, true
}

// failed counts a failed authentication from addr.
func (g *authGuard) failed(addr netip.Prefix) {
	if g.limit < 0 {
		return
	}
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	f, ok := g.addrs[addr]
	if ok && now.Sub(f.start) >= authFailureWindow {
		f.start, f.n = now, 0
	}
	if !ok {
		g.makeRoom(now)
		f = &addrFailures{start: now}
		g.addrs[addr] = f
	}
	f.n++
}

// makeRoom keeps the counted addresses under maxFailingAddrs: it drops the ended windows
// among a few entries (the map's own random order), or else one entry.
func (g *authGuard) makeRoom(now time.Time) {
	if len(g.addrs) < maxFailingAddrs {
		return
	}
	var victim netip.Prefix
	seen := 0
	for addr, f := range g.addrs {
		if now.Sub(f.start) >= authFailureWindow {
			delete(g.addrs, addr)
		}
		victim = addr
		if seen++; seen == 64 {
			break
		}
	}
	if len(g.addrs) >= maxFailingAddrs {
		delete(g.addrs, victim)
	}
}

// tooManyFailures answers an address that failed authentication too often.
func tooManyFailures(c echo.Context, wait time.Duration) *Problem {
	secs := int(math.Ceil(wait.Seconds()))
	c.Response().Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
	return NewProblem(http.StatusTooManyRequests, "Authorization",
		"too many failed authentications from this address: try again in %ds", max(secs, 1))
}

// clientKey is the address a request's failures are counted under: the client's IPv4
// address, or its IPv6 address's /64 (one host may hold a whole /64). Unreadable
// addresses share one key.
func clientKey(c echo.Context) netip.Prefix {
	ip, err := netip.ParseAddr(c.RealIP())
	if err != nil {
		return netip.Prefix{}
	}
	ip = ip.Unmap()
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.Prefix(bits)
	return p
}

// clientIPExtractor takes the client's address from the connection, or, when the API
// runs behind proxies, from X-Forwarded-For: the nearest address that is not one of
// trusted. Nothing is trusted by default (not even loopback or private addresses), so a
// client cannot pick its own address by sending the header.
func clientIPExtractor(trusted []netip.Prefix) echo.IPExtractor {
	if len(trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, p := range trusted {
		p = p.Masked()
		opts = append(opts, echo.TrustIPRange(&net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}))
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}
