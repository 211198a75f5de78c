package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/config"
)

// TICKGATE_SCHEDULES_RESIDENT is off unless set, takes a boolean, and a bad value is an
// error naming the variable.
func TestSchedulesResidentFromEnv(t *testing.T) {
	t.Setenv("TICKGATE_SCHEDULES_RESIDENT", "")
	c, err := config.FromEnv()
	require.NoError(t, err)
	require.False(t, c.SchedulesResident, "off by default")

	t.Setenv("TICKGATE_SCHEDULES_RESIDENT", "true")
	c, err = config.FromEnv()
	require.NoError(t, err)
	require.True(t, c.SchedulesResident)

	t.Setenv("TICKGATE_SCHEDULES_RESIDENT", "yes please")
	_, err = config.FromEnv()
	require.ErrorContains(t, err, "TICKGATE_SCHEDULES_RESIDENT")
}
