package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

// tokenLookups counts the statements that look a token up.
type tokenLookups struct{ n atomic.Int64 }

func (c *tokenLookups) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if strings.Contains(data.SQL, "GetActiveTokenByHash") {
		c.n.Add(1)
	}
	return ctx
}

func (c *tokenLookups) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// authFailureApp is the API on a store whose token lookups are counted.
type authFailureApp struct {
	e       *echo.Echo
	st      *store.Store
	lookups *tokenLookups
	clock   *clock
}

func newAuthFailureApp(t *testing.T, configure func(*api.Server)) *authFailureApp {
	t.Helper()
	lookups := &tokenLookups{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := store.Open(ctx, testenv.DatabaseURL(t), store.WithQueryTracer(lookups))
	require.NoError(t, err)
	t.Cleanup(st.Close)
	clk := &clock{now: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
	s := &api.Server{Store: st, Logf: t.Logf, Now: clk.Now}
	if configure != nil {
		configure(s)
	}
	return &authFailureApp{e: api.New(s), st: st, lookups: lookups, clock: clk}
}

// get sends GET /api/v1/schedules from the client address from (with X-Forwarded-For xff
// when given) with token.
func (a *authFailureApp) get(t *testing.T, from, token, xff string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/api/v1/schedules", nil)
	req.RemoteAddr = netip.AddrPortFrom(netip.MustParseAddr(from), 40000).String()
	req.Header.Set("Authorization", "Bearer "+token)
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	rec := httptest.NewRecorder()
	a.e.ServeHTTP(rec, req)
	return rec
}

var badTokens atomic.Int64

// badToken is a token of the right shape that no one holds.
func badToken() string { return "tg_not-a-real-token-" + strconv.FormatInt(badTokens.Add(1), 10) }

// A bad token is looked up once: shown again (from any address), it costs no statement.
// Before, each showing cost a database query.
func TestABadTokenCostsOneLookup(t *testing.T) {
	t.Parallel()
	a := newAuthFailureApp(t, func(s *api.Server) { s.AuthFailures = 1000 })
	bad := badToken()
	for i := range 20 {
		rec := a.get(t, "192.0.2.1", bad, "")
		require.Equal(t, http.StatusUnauthorized, rec.Code, "attempt %d: %s", i, rec.Body)
	}
	require.EqualValues(t, 1, a.lookups.n.Load(), "the token was looked up once")
	require.Equal(t, http.StatusUnauthorized, a.get(t, "198.51.100.1", bad, "").Code)
	require.EqualValues(t, 1, a.lookups.n.Load(), "from another address too")

	// A revoked token is remembered as bad once its revocation is seen.
	row, tok, err := a.st.CreateToken(context.Background(), store.NewToken{Role: domain.RoleViewer})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, a.get(t, "192.0.2.1", tok, "").Code)
	_, err = a.st.RevokeToken(context.Background(), row.ID)
	require.NoError(t, err)
	before := a.lookups.n.Load()
	for range 5 {
		require.Equal(t, http.StatusUnauthorized, a.get(t, "192.0.2.1", tok, "").Code)
	}
	require.Equal(t, before+1, a.lookups.n.Load())
}

// requireTooMany checks a 429: problem+json naming Authorization, with Retry-After.
func requireTooMany(t *testing.T, rec *httptest.ResponseRecorder, retryAfter int) {
	t.Helper()
	require.Equal(t, http.StatusTooManyRequests, rec.Code, "%s", rec.Body)
	require.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"))
	require.Equal(t, strconv.Itoa(retryAfter), rec.Header().Get("Retry-After"))
	var p api.Problem
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &p))
	require.Equal(t, http.StatusTooManyRequests, p.Status)
	require.Equal(t, "Authorization", p.Field)
	require.Equal(t, "https://tickgate.dev/problems/too-many-requests", p.Type)
}

// After AuthFailures failed authentications in a minute, a client address is answered 429
// with Retry-After until its minute ends, before any token is looked up — a good token
// too, unless this process holds it already (below). Other addresses are not affected; an
// IPv6 client counts by its /64. Before, every failure cost a query, without end.
func TestRepeatedFailuresFromAnAddressAreAnswered429(t *testing.T) {
	t.Parallel()
	a := newAuthFailureApp(t, func(s *api.Server) { s.AuthFailures = 5 })
	_, good, err := a.st.CreateToken(context.Background(), store.NewToken{Role: domain.RoleViewer})
	require.NoError(t, err)

	for range 5 {
		require.Equal(t, http.StatusUnauthorized, a.get(t, "192.0.2.10", badToken(), "").Code)
	}
	lookups := a.lookups.n.Load()
	requireTooMany(t, a.get(t, "192.0.2.10", badToken(), ""), 60)
	requireTooMany(t, a.get(t, "192.0.2.10", good, ""), 60)
	require.Equal(t, lookups, a.lookups.n.Load(), "a refused address costs no lookup")
	// The header does not pick the address: without trusted proxies it is ignored.
	requireTooMany(t, a.get(t, "192.0.2.10", good, "198.51.100.200"), 60)

	// Other addresses go on.
	require.Equal(t, http.StatusOK, a.get(t, "192.0.2.11", good, "").Code)
	require.Equal(t, http.StatusUnauthorized, a.get(t, "192.0.2.11", badToken(), "").Code)

	// IPv6: one /64 is one client.
	for range 5 {
		require.Equal(t, http.StatusUnauthorized, a.get(t, "2001:db8::1", badToken(), "").Code)
	}
	requireTooMany(t, a.get(t, "2001:db8::ffff", good, ""), 60)
	require.Equal(t, http.StatusOK, a.get(t, "2001:db8:0:1::1", good, "").Code)

	// The minute ends: the address is heard again.
	a.clock.Add(45 * time.Second)
	requireTooMany(t, a.get(t, "192.0.2.10", good, ""), 15)
	a.clock.Add(15 * time.Second)
	require.Equal(t, http.StatusOK, a.get(t, "192.0.2.10", good, "").Code)
	require.Equal(t, http.StatusUnauthorized, a.get(t, "192.0.2.10", badToken(), "").Code)
}

// Behind proxies (TrustedProxies), the client is the nearest X-Forwarded-For address that
// is not a trusted proxy: clients behind one proxy are told apart, and one cannot escape
// its count by prepending addresses of its own.
func TestTrustedProxiesNameTheClient(t *testing.T) {
	t.Parallel()
	a := newAuthFailureApp(t, func(s *api.Server) {
		s.AuthFailures = 3
		s.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}
	})
	_, good, err := a.st.CreateToken(context.Background(), store.NewToken{Role: domain.RoleViewer})
	require.NoError(t, err)
	for range 3 {
		require.Equal(t, http.StatusUnauthorized, a.get(t, "10.0.0.1", badToken(), "198.51.100.7").Code)
	}
	requireTooMany(t, a.get(t, "10.0.0.2", good, "198.51.100.7"), 60)
	requireTooMany(t, a.get(t, "10.0.0.1", good, "203.0.113.9, 198.51.100.7"), 60)
	require.Equal(t, http.StatusOK, a.get(t, "10.0.0.1", good, "198.51.100.8").Code, "another client behind the same proxy")
	// A peer that is not a trusted proxy is the client, whatever it forwards.
	for range 3 {
		require.Equal(t, http.StatusUnauthorized, a.get(t, "192.0.2.20", badToken(), "198.51.100.30").Code)
	}
	requireTooMany(t, a.get(t, "192.0.2.20", good, "198.51.100.31"), 60)
}

// With the process's token cache (the listener), a token it already holds goes on working
// from an address that is answered 429: agents behind the same address as a client with a
// revoked token are not locked out with it.
func TestAKnownTokenPassesARefusedAddress(t *testing.T) {
	t.Parallel()
	var listener *store.Listener
	a := newAuthFailureApp(t, func(s *api.Server) {
		s.AuthFailures = 3
		listener = s.Store.StartListener(store.ListenerOptions{Logf: t.Logf})
		s.Listener = listener
	})
	t.Cleanup(listener.Close)
	require.Eventually(t, listener.Fresh, 10*time.Second, 10*time.Millisecond)
	_, known, err := a.st.CreateToken(context.Background(), store.NewToken{Role: domain.RoleViewer})
	require.NoError(t, err)
	_, unknown, err := a.st.CreateToken(context.Background(), store.NewToken{Role: domain.RoleViewer})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, a.get(t, "192.0.2.30", known, "").Code) // now in the cache
	for range 3 {
		require.Equal(t, http.StatusUnauthorized, a.get(t, "192.0.2.30", badToken(), "").Code)
	}
	requireTooMany(t, a.get(t, "192.0.2.30", unknown, ""), 60)
	require.Eventually(t, listener.Fresh, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, http.StatusOK, a.get(t, "192.0.2.30", known, "").Code)
}
