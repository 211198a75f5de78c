package config_test

import (
	"net/netip"
	"testing"
	"time"

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

// The device settings are judged by the one rule every taker of them applies
// (domain.DeviceSettings.Validate, which the store applies again when a task becomes
// active): a value the store would refuse is refused at start-up, naming the variable,
// and never reaches a worker or an API process.
func TestDeviceSettingsFromEnvFollowTheOneRule(t *testing.T) {
	for _, tc := range []struct {
		timeout, attempts string
		want              domain.DeviceSettings
		refused           string
	}{
		{want: domain.DefaultDeviceSettings()},
		{timeout: "5s", attempts: "5", want: domain.DeviceSettings{MaxAttempts: 5, Timeout: 5 * time.Second}},
		{timeout: "1ms", want: domain.DeviceSettings{MaxAttempts: domain.DefaultDeviceMaxAttempts, Timeout: time.Millisecond}},
		{timeout: "500us", refused: "TICKGATE_DEVICE_TIMEOUT"},
		{timeout: "0s", refused: "TICKGATE_DEVICE_TIMEOUT"},
		{timeout: "-1m", refused: "TICKGATE_DEVICE_TIMEOUT"},
		{timeout: "soon", refused: "TICKGATE_DEVICE_TIMEOUT"},
		{attempts: "0", refused: "TICKGATE_DEVICE_MAX_ATTEMPTS"},
		{attempts: "three", refused: "TICKGATE_DEVICE_MAX_ATTEMPTS"},
	} {
		t.Run(tc.timeout+"/"+tc.attempts, func(t *testing.T) {
			t.Setenv("TICKGATE_DEVICE_TIMEOUT", tc.timeout)
			t.Setenv("TICKGATE_DEVICE_MAX_ATTEMPTS", tc.attempts)
			c, err := config.FromEnv()
			if tc.refused != "" {
				require.ErrorContains(t, err, tc.refused)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, c.DeviceSettings())
			require.NoError(t, c.DeviceSettings().Validate())
		})
	}
	// A Config built by hand leaves the settings zero: they take their defaults.
	require.Equal(t, domain.DefaultDeviceSettings(), config.Config{}.DeviceSettings())
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
