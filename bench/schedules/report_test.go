package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
)

// Ticks with no run at all are counted, not left out of the statuses, and a status the
// bench does not know still shows.
func TestStatusCountsShowTicksWithoutARun(t *testing.T) {
	got := statusCounts(map[domain.RunStatus]int{domain.RunMissed: 3, domain.RunSucceeded: 5, "ODD": 1}, 10)
	require.Equal(t, "SUCCEEDED 5, MISSED 3, ODD 1, no run recorded 1", got)
	require.Equal(t, "no run recorded 4", statusCounts(nil, 4))
}
