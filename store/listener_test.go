package store_test

import (
	"context"
	"io"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

// silencer is a TCP proxy to PostgreSQL that can go silent: once silenced it forwards
// nothing more, in either direction, and closes nothing (a connection whose peer vanished
// without a word, as behind a dead NAT or a partition).
type silencer struct {
	ln     net.Listener
	target string
	silent chan struct{}
}

func newSilencer(t *testing.T, target string) *silencer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &silencer{ln: ln, target: target, silent: make(chan struct{})}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

func (s *silencer) serve(c net.Conn) {
	up, err := net.Dial("tcp", s.target)
	if err != nil {
		_ = c.Close()
		return
	}
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			select {
			case <-s.silent:
				<-make(chan struct{}) // hold the connection open, forward nothing
			default:
			}
			if n > 0 {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				if err != io.EOF {
					_ = dst.Close()
				}
				return
			}
		}
	}
	go pipe(up, c)
	go pipe(c, up)
}

func (s *silencer) silence() { close(s.silent) }

// revokeUnheard revokes a token without the trigger's notification (an operator's SQL with
// triggers disabled for its session), so only the freshness rule can stop the cache.
func revokeUnheard(t *testing.T, st *store.Store, id int64) {
	t.Helper()
	ctx := context.Background()
	conn, err := st.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, `SET session_replication_role = replica`)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `UPDATE api_tokens SET revoked_at = now() WHERE id = $1`, id)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `RESET session_replication_role`)
	require.NoError(t, err)
}

// The token cache answers without the database while its listening connection is fresh,
// and stops answering once that connection has said nothing for FreshFor — even when it
// is not closed, only silent — so a revocation it could not hear is honoured from then on.
func TestTokenCacheTrustsOnlyAFreshListeningConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := testenv.DatabaseURL(t)
	st, err := store.Open(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(st.Close)
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	proxy := newSilencer(t, u.Host)
	u.Host = proxy.ln.Addr().String()
	viaProxy, err := store.Open(ctx, u.String())
	require.NoError(t, err)
	t.Cleanup(viaProxy.Close)
	l := viaProxy.StartListener(store.ListenerOptions{FreshFor: time.Second, Logf: t.Logf})
	t.Cleanup(l.Close)

	row, token, err := st.CreateToken(ctx, store.NewToken{Role: domain.RoleViewer})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := l.Authenticate(ctx, st, token)
		require.NoError(t, err)
		return l.Fresh()
	}, 30*time.Second, 10*time.Millisecond, "the listener never came up")
	_, err = l.Authenticate(ctx, st, token) // cached now
	require.NoError(t, err)

	revokeUnheard(t, st, row.ID)
	got, err := l.Authenticate(ctx, st, token)
	require.NoError(t, err, "answered from the cache, without the database")
	require.Equal(t, row.ID, got.ID)

	proxy.silence()
	requireRefusedOnceStale(t, l, st, token, "a silent listening connection kept the cache answering")
}

// requireRefusedOnceStale waits until the cache no longer answers for token, which the
// database no longer knows.
func requireRefusedOnceStale(t *testing.T, l *store.Listener, st *store.Store, token, why string) {
	t.Helper()
	ctx := context.Background()
	require.Eventually(t, func() bool {
		_, err := l.Authenticate(ctx, st, token)
		return err != nil
	}, 30*time.Second, 10*time.Millisecond, why)
	_, err := l.Authenticate(ctx, st, token)
	require.ErrorIs(t, err, store.ErrNotFound)
}

// A lost listening connection drops the cache: what a new connection did not hear is read
// from the database again.
func TestTokenCacheIsDroppedWithItsListeningConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testenv.Store(t)
	l := st.StartListener(store.ListenerOptions{Logf: t.Logf})
	t.Cleanup(l.Close)
	row, token, err := st.CreateToken(ctx, store.NewToken{Role: domain.RoleViewer})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return l.Fresh() }, 30*time.Second, 10*time.Millisecond)
	_, err = l.Authenticate(ctx, st, token)
	require.NoError(t, err)

	revokeUnheard(t, st, row.ID)
	_, err = l.Authenticate(ctx, st, token)
	require.NoError(t, err, "cached")
	_, err = st.Pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE application_name = $1 AND datname = current_database()`, store.ListenerApplicationName)
	require.NoError(t, err)
	requireRefusedOnceStale(t, l, st, token, "the cache outlived its connection")
}

// A revocation heard through the trigger empties the cache at once, and the revoker hears
// every listener acknowledge it.
func TestTokenRevocationIsAcknowledgedByEveryListener(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := testenv.DatabaseURL(t)
	var stores []*store.Store
	var listeners []*store.Listener
	for i := 0; i < 2; i++ {
		st, err := store.Open(ctx, dbURL)
		require.NoError(t, err)
		t.Cleanup(st.Close)
		l := st.StartListener(store.ListenerOptions{Logf: t.Logf})
		t.Cleanup(l.Close)
		stores, listeners = append(stores, st), append(listeners, l)
	}
	row, token, err := stores[0].CreateToken(ctx, store.NewToken{Role: domain.RoleOperator})
	require.NoError(t, err)
	for i, l := range listeners {
		require.Eventually(t, func() bool { return l.Fresh() }, 30*time.Second, 10*time.Millisecond)
		_, err := l.Authenticate(ctx, stores[i], token)
		require.NoError(t, err)
	}
	watch := listeners[0].WatchTokenChange(row.ID)
	defer watch.Stop()
	_, err = stores[0].RevokeToken(ctx, row.ID)
	require.NoError(t, err)
	missing, err := watch.Await(ctx, stores[0])
	require.NoError(t, err)
	require.Empty(t, missing, "every listener acknowledged")
	for i, l := range listeners {
		_, err := l.Authenticate(ctx, stores[i], token)
		require.ErrorIs(t, err, store.ErrNotFound, "listener %d", i)
	}
}
