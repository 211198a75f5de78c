package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPoolCarriesTheNetworkTimeouts(t *testing.T) {
	cfg, err := poolConfig("postgres://u@db.example:5432/tickgate?sslmode=disable")
	require.NoError(t, err)
	require.Equal(t, ConnectTimeout, cfg.ConnConfig.ConnectTimeout)
	require.Equal(t, PingTimeout, cfg.PingTimeout)
	require.Equal(t, HealthCheckPeriod, cfg.HealthCheckPeriod)
	require.NotNil(t, cfg.ConnConfig.DialFunc)
	for k, v := range serverSideTimeouts {
		require.Equal(t, v, cfg.ConnConfig.RuntimeParams[k], k)
	}
	require.Equal(t, "30s", cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"])
}

func TestPoolKeepsTheTimeoutsTheURLSets(t *testing.T) {
	for _, url := range []string{
		"postgres://u@db.example/tickgate?connect_timeout=3&idle_in_transaction_session_timeout=5min&pool_ping_timeout=1s&pool_health_check_period=2m",
		"host=db.example user=u dbname=tickgate connect_timeout=3 idle_in_transaction_session_timeout=5min pool_ping_timeout=1s pool_health_check_period=2m",
	} {
		cfg, err := poolConfig(url)
		require.NoError(t, err)
		require.Equal(t, 3*time.Second, cfg.ConnConfig.ConnectTimeout, url)
		require.Equal(t, "5min", cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"], url)
		require.Equal(t, time.Second, cfg.PingTimeout, url)
		require.Equal(t, 2*time.Minute, cfg.HealthCheckPeriod, url)
		require.Equal(t, "15", cfg.ConnConfig.RuntimeParams["tcp_keepalives_idle"], url)
	}
}
