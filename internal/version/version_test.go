package version_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/version"
)

func TestCompareNaturalOrder(t *testing.T) {
	t.Parallel()
	cases := []struct {
		a, b string
		want int
	}{
		{"1.9", "1.10", -1},
		{"1.10", "1.9", 1},
		{"1.10", "1.10", 0},
		{"1.01", "1.1", 0},
		{"1", "1.0", -1},
		{"2", "10", -1},
		{"v2.3.0", "v2.10.0", -1},
		{"1.0.0-rc1", "1.0.0-rc2", -1},
		{"20240102_add_index", "20240110_drop", -1},
		{"9", "10", -1},
		{"0009", "9", 0},
	}
	for _, c := range cases {
		require.Equal(t, c.want, version.Compare(c.a, c.b), "Compare(%q, %q)", c.a, c.b)
		require.Equal(t, -c.want, version.Compare(c.b, c.a), "Compare(%q, %q)", c.b, c.a)
	}
}

// The key must sort byte-wise exactly as Compare does: that is what lets SQL compare
// versions with COLLATE "C".
func TestKeySortsLikeCompare(t *testing.T) {
	t.Parallel()
	vs := []string{"10", "1.10", "1.9", "1", "1.0", "2", "1.2.3", "v1", "1a", "1.10.1", "0.1", "100"}
	byCompare := slices.Clone(vs)
	slices.SortFunc(byCompare, version.Compare)
	byKey := slices.Clone(vs)
	slices.SortFunc(byKey, func(a, b string) int {
		ka, kb := version.MustKey(a), version.MustKey(b)
		switch {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return 0
	})
	require.Equal(t, byCompare, byKey)
	require.Equal(t, []string{"0.1", "1", "1.0", "1.2.3", "1.9", "1.10", "1.10.1", "1a", "2", "10", "100", "v1"}, byCompare)
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"", ".1", "-1", "1 2", "1;drop", "é", "12345678901234567890", string(make([]byte, 129))} {
		_, err := version.Parse(v)
		require.Error(t, err, "Parse(%q)", v)
	}
	for _, v := range []string{"1", "1.10", "v2.0.0-rc.1+build5", "20240102_add_index", "0000000000000000000000001"} {
		_, err := version.Parse(v)
		require.NoError(t, err, "Parse(%q)", v)
	}
}
