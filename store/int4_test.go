package store

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// A parameter that fits is passed as it is; one beyond int32 stops at int32's bound instead
// of wrapping around (a LIMIT of 2^32+5 would have become 5, a huge one a negative).
func TestInt4KeepsWhatFitsAndSaturatesBeyond(t *testing.T) {
	for n, want := range map[int]int32{
		0: 0, 1: 1, 500: 500, -1: -1,
		math.MaxInt32: math.MaxInt32, math.MinInt32: math.MinInt32,
		math.MaxInt32 + 1: math.MaxInt32, 1<<32 + 5: math.MaxInt32, math.MaxInt: math.MaxInt32,
		math.MinInt32 - 1: math.MinInt32, math.MinInt: math.MinInt32,
	} {
		require.Equal(t, want, int4(n), "int4(%d)", n)
	}
	require.Equal(t, int32(7), int4(int64(7)))
	require.Equal(t, int32(math.MaxInt32), int4(int64(math.MaxInt64)))
}
