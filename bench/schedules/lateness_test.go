package main

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A fire that never came is +Inf: it lands in the percentiles instead of leaving them.
func TestLatenessCountsMissingFiresAsInfinitelyLate(t *testing.T) {
	tick := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var l lateness
	for i := 1; i <= 99; i++ {
		l = append(l, fire{tick: tick, ms: float64(i)})
	}
	require.Equal(t, 50.0, l.pct(50))
	require.Equal(t, 99.0, l.pct(100))
	l = append(l, fire{tick: tick, ms: math.Inf(1)})
	require.Equal(t, 99, l.fired())
	require.Equal(t, 99.0, l.pct(99))
	require.True(t, math.IsInf(l.pct(100), 1))
	require.True(t, math.IsInf(l.maxAt(tick), 1))
	require.Equal(t, 0, l.firedAt(tick.Add(time.Minute)))
}
