package store_test

import (
	"context"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/testing/tcpproxy"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

// TestAConnectionCutWhileIdleIsNotHandedOutWhenTheDatabaseIsBack: PostgreSQL goes away
// and comes back within a second of the pool's last statements. The statement that finds
// the outage fails; every statement after the return succeeds, although each of the
// pool's idle connections was cut (pgxpool alone pings only connections idle for more
// than a second, so it handed the cut ones out, one failed statement each).
func TestAConnectionCutWhileIdleIsNotHandedOutWhenTheDatabaseIsBack(t *testing.T) {
	ctx := context.Background()
	direct, err := url.Parse(testenv.DatabaseURL(t))
	require.NoError(t, err)
	proxy := tcpproxy.New(t, direct.Host)
	proxy.Start()
	proxied := *direct
	proxied.Host = proxy.Addr
	st, err := store.Open(ctx, proxied.String())
	require.NoError(t, err)
	defer st.Close()

	// Eight connections, each used and idle.
	const conns = 8
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := st.Pool.Exec(ctx, "SELECT pg_sleep(0.05)")
			require.NoError(t, err)
		}()
	}
	wg.Wait()
	require.GreaterOrEqual(t, st.Pool.Stat().IdleConns(), int32(2), "the pool holds idle connections")

	proxy.Stop()
	down, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, err = st.Pool.Exec(down, "SELECT 1")
	cancel()
	require.Error(t, err, "a statement during the outage fails")
	proxy.Start()

	for i := range 2 * conns {
		var one int
		require.NoError(t, st.Pool.QueryRow(ctx, "SELECT 1").Scan(&one), "statement %d after the return", i)
	}
}
