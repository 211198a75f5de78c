package config_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/config"
)

// The bounds on clients and tenants read from the environment, with their defaults, and a
// malformed value stops the start naming its variable.
func TestBoundsFromTheEnvironment(t *testing.T) {
	c, err := config.FromEnv()
	require.NoError(t, err)
	require.Zero(t, c.APIReadTimeout, "unset: the API's defaults")
	require.Zero(t, c.APIAuthFailures)
	require.Empty(t, c.APITrustedProxies)
	require.Equal(t, domain.DefaultSQLStatementTimeout, c.SQLStatementTimeout)
	require.Equal(t, domain.DefaultSQLLockTimeout, c.SQLLockTimeout)

	t.Setenv("TICKGATE_API_READ_TIMEOUT", "5s")
	t.Setenv("TICKGATE_API_WRITE_TIMEOUT", "2m")
	t.Setenv("TICKGATE_API_IDLE_TIMEOUT", "90s")
	t.Setenv("TICKGATE_API_AUTH_FAILURES", "-1")
	t.Setenv("TICKGATE_API_TRUSTED_PROXIES", "10.0.0.0/8, 192.0.2.7 ,2001:db8::/32")
	t.Setenv("TICKGATE_SQL_STATEMENT_TIMEOUT", "15m")
	t.Setenv("TICKGATE_SQL_LOCK_TIMEOUT", "3s")
	t.Setenv("TICKGATE_SQL_PROBE_TARGETS", `{"billing": "postgres://health_probe@db/billing"}`)
	c, err = config.FromEnv()
	require.NoError(t, err)
	require.Equal(t, []time.Duration{5 * time.Second, 2 * time.Minute, 90 * time.Second}, []time.Duration{c.APIReadTimeout, c.APIWriteTimeout, c.APIIdleTimeout})
	require.Equal(t, -1, c.APIAuthFailures)
	require.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.7/32"), netip.MustParsePrefix("2001:db8::/32")}, c.APITrustedProxies)
	require.Equal(t, 15*time.Minute, c.SQLStatementTimeout)
	require.Equal(t, 3*time.Second, c.SQLLockTimeout)
	require.Equal(t, map[string]string{"billing": "postgres://health_probe@db/billing"}, c.SQLProbeTargets)

	for name, bad := range map[string]string{
		"TICKGATE_API_READ_TIMEOUT": "-5s", "TICKGATE_API_WRITE_TIMEOUT": "soon", "TICKGATE_API_AUTH_FAILURES": "0",
		"TICKGATE_API_TRUSTED_PROXIES": "10.0.0.0/33", "TICKGATE_SQL_LOCK_TIMEOUT": "0s", "TICKGATE_SQL_PROBE_TARGETS": "[]",
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, bad)
			_, err := config.FromEnv()
			require.ErrorContains(t, err, name)
		})
	}
}
