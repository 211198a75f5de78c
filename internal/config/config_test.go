package config_test

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

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
