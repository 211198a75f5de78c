package metrics_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/metrics"
)

// TestScheduleSeriesExistBeforeTheFirstTick: a worker's tick counters and lateness
// histogram have a series, at 0, for every trigger (domain's) and outcome from the start, so
// that an alert's rate or increase sees a process's first late fire or MISSED tick.
func TestScheduleSeriesExistBeforeTheFirstTick(t *testing.T) {
	require.Equal(t, []string{string(domain.TriggerScheduled), string(domain.TriggerCatchup), string(domain.TriggerManual),
		string(domain.TriggerBackfill)}, metrics.Triggers)
	require.Equal(t, len(metrics.Triggers)*len(metrics.TickOutcomes), testutil.CollectAndCount(metrics.ScheduleTicks))
	require.Equal(t, len(metrics.Triggers), testutil.CollectAndCount(metrics.FireLatenessObserved))
}
