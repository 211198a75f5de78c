package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTemporalClientKeepsItsConnectionAlive(t *testing.T) {
	opts, err := Config{TemporalAddress: "127.0.0.1:7233", TemporalNamespace: "default"}.ClientOptions()
	require.NoError(t, err)
	require.Equal(t, TemporalKeepAliveTime, opts.ConnectionOptions.KeepAliveTime)
	require.Equal(t, TemporalKeepAliveTimeout, opts.ConnectionOptions.KeepAliveTimeout)
	require.False(t, opts.ConnectionOptions.DisableKeepAliveCheck)
}
