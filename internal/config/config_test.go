package config_test

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/config"
)

// The outbound rule's allowed addresses and the task queues a workflow action may name come
// from the environment; a bad allow list is an error naming the variable.
func TestTrustSettingsFromEnv(t *testing.T) {
	t.Setenv("TICKGATE_HTTP_ALLOW", "127.0.0.1, 10.0.0.0/8")
	t.Setenv("TICKGATE_WORKFLOW_TASK_QUEUES", " reports, billing ,,")
	c, err := config.FromEnv()
	require.NoError(t, err)
	require.Equal(t, []string{"reports", "billing"}, c.WorkflowTaskQueues)
	require.True(t, c.HTTPAllow.Allowed(netip.MustParseAddr("10.1.2.3")))
	require.False(t, c.HTTPAllow.Allowed(netip.MustParseAddr("100.64.0.1")))

	t.Setenv("TICKGATE_WORKFLOW_TASK_QUEUES", "")
	c, err = config.FromEnv()
	require.NoError(t, err)
	require.Empty(t, c.WorkflowTaskQueues, "unset: any queue but tickgate's own")

	t.Setenv("TICKGATE_HTTP_ALLOW", "not-an-address")
	_, err = config.FromEnv()
	require.ErrorContains(t, err, "TICKGATE_HTTP_ALLOW")
}

// TICKGATE_HTTP_HOST_LIMITS sets the limits per destination host (and, under *, of every
// other host); unset, every host may have 100 requests in flight and no rate; a bad entry is
// an error naming the variable.
func TestHTTPHostLimitsFromEnv(t *testing.T) {
	t.Setenv("TICKGATE_HTTP_HOST_LIMITS", "")
	c, err := config.FromEnv()
	require.NoError(t, err)
	require.Equal(t, domain.HostLimit{MaxInFlight: 100}, c.HTTPHostLimits.Of("api.example.com"))

	t.Setenv("TICKGATE_HTTP_HOST_LIMITS", "API.example.com=50/600, slow.example.net=/60, *=20")
	c, err = config.FromEnv()
	require.NoError(t, err)
	require.Equal(t, domain.HostLimit{MaxInFlight: 50, PerMinute: 600}, c.HTTPHostLimits.Of("api.example.com"))
	require.Equal(t, domain.HostLimit{MaxInFlight: 20, PerMinute: 60}, c.HTTPHostLimits.Of("slow.example.net"))
	require.Equal(t, domain.HostLimit{MaxInFlight: 20}, c.HTTPHostLimits.Of("other.example.org"))

	for _, bad := range []string{"api.example.com", "api.example.com=0", "api.example.com=x/1", "api.example.com:443=5", "a=1,a=2"} {
		t.Setenv("TICKGATE_HTTP_HOST_LIMITS", bad)
		_, err = config.FromEnv()
		require.ErrorContains(t, err, "TICKGATE_HTTP_HOST_LIMITS", bad)
	}
}
