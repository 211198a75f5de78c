package version_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/version"
)

// The fuzz targets below check version.Parse and version.Compare against a reference
// written independently of the sort key: a grammar (validRE plus the digit-run limit) for
// what Parse accepts, and a token-by-token natural comparison for the order. PostgreSQL
// orders task runs by the key alone (COLLATE "C"), so the key order, Compare and the
// reference must agree exactly, or the version gate (R2) would promote out of order.

// validRE is the documented grammar: 1 to 128 characters of [A-Za-z0-9._+-], starting with
// a letter or digit.
var validRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$`)

// refValid reports whether v is a valid version per the package documentation.
func refValid(v string) bool {
	if !validRE.MatchString(v) {
		return false
	}
	for _, run := range digitRuns(v) {
		if len(strings.TrimLeft(run, "0")) > 19 {
			return false
		}
	}
	return true
}

// digitRuns lists the maximal runs of ASCII digits in v.
func digitRuns(v string) []string {
	var runs []string
	for i := 0; i < len(v); {
		if !isDigit(v[i]) {
			i++
			continue
		}
		j := i
		for j < len(v) && isDigit(v[j]) {
			j++
		}
		runs = append(runs, v[i:j])
		i = j
	}
	return runs
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// token is one unit of the reference comparison: a whole number (leading zeros dropped) or a
// single non-digit byte.
type token struct {
	num   string // significant digits of a digit run ("" for zero); valid when isNum
	isNum bool
	char  byte
}

func tokenize(v string) []token {
	var out []token
	for i := 0; i < len(v); {
		if !isDigit(v[i]) {
			out = append(out, token{char: v[i]})
			i++
			continue
		}
		j := i
		for j < len(v) && isDigit(v[j]) {
			j++
		}
		out = append(out, token{num: strings.TrimLeft(v[i:j], "0"), isNum: true})
		i = j
	}
	return out
}

// refCompare is natural order spelled out: numbers compare by value, other characters
// byte-wise, a number against a character as any digit against that character (every
// allowed non-digit sorts entirely below or entirely above '0'..'9'), and a version that is
// a prefix of another sorts first.
func refCompare(a, b string) int {
	ta, tb := tokenize(a), tokenize(b)
	for i := 0; i < len(ta) && i < len(tb); i++ {
		x, y := ta[i], tb[i]
		var c int
		switch {
		case x.isNum && y.isNum:
			// Same significant length: compare digit by digit; otherwise the longer is larger.
			c = cmpInt(len(x.num), len(y.num))
			if c == 0 {
				c = strings.Compare(x.num, y.num)
			}
		case x.isNum:
			c = cmpInt(int('0'), int(y.char))
		case y.isNum:
			c = cmpInt(int(x.char), int('0'))
		default:
			c = cmpInt(int(x.char), int(y.char))
		}
		if c != 0 {
			return c
		}
	}
	return cmpInt(len(ta), len(tb))
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// FuzzParse checks that Parse never panics, accepts exactly the documented grammar, gives a
// deterministic key for a valid version, and explains each rejection.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"1", "1.10", "1.9", "v2.3.0-rc1", "v2.0.0-rc.1+build5", "20240102_add_index",
		"0000000000000000000000001", "9999999999999999999", "10000000000000000000",
		"", ".1", "-1", "1 2", "1;drop", "é", "1é", "1\xff", "a\x00b", strings.Repeat("9", 128), strings.Repeat("9", 129),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		key, err := version.Parse(v)
		require.Equal(t, refValid(v), err == nil, "Parse(%q) = %q, %v", v, key, err)
		if err != nil {
			requireExplained(t, v, err)
			require.Panics(t, func() { version.MustKey(v) }, "MustKey(%q) must panic on an invalid version", v)
			return
		}
		// Deterministic: the same version always yields the same key, and MustKey agrees.
		again, err := version.Parse(v)
		require.NoError(t, err)
		require.Equal(t, key, again, "Parse(%q) twice", v)
		require.Equal(t, key, version.MustKey(v))
		// The key is the version with every digit run widened to exactly 19 digits: only
		// allowed bytes, and the same token sequence (so the same natural position).
		require.Regexp(t, `^[A-Za-z0-9][A-Za-z0-9._+-]*$`, key, "key of %q has bytes outside the grammar", v)
		require.Zero(t, refCompare(key, v), "key %q of %q is not the same number sequence", key, v)
		for _, run := range digitRuns(key) {
			require.Len(t, run, 19, "key %q of %q: digit run %q not padded to 19", key, v, run)
		}
		require.Zero(t, version.Compare(v, v), "Compare(%q, itself)", v)
	})
}

// requireExplained asserts that Parse's error for an invalid v says why: the empty or too
// long version, the bad first character, the too long number, or the offending character
// exactly as the caller sent it (an API client reads this text in the problem detail).
func requireExplained(t *testing.T, v string, err error) {
	t.Helper()
	msg := err.Error()
	require.NotEmpty(t, msg)
	switch {
	case v == "":
		require.Contains(t, msg, "empty")
	case len(v) > version.MaxLen:
		require.Contains(t, msg, fmt.Sprintf("longer than %d characters", version.MaxLen))
	case !validRE.MatchString(v[:1]):
		require.Contains(t, msg, "must start with a letter or digit")
		require.Contains(t, msg, strconv.Quote(v), "the message quotes the version")
	default:
		// Parse reads left to right and reports the first problem it meets.
		bad := firstProblem(v)
		if bad == "" {
			require.Contains(t, msg, "number longer than 19 digits")
			return
		}
		require.Contains(t, msg, "not allowed")
		require.Contains(t, msg, strconv.Quote(bad), "the message names the offending character %q as sent", bad)
	}
}

// firstProblem scans v left to right and returns the first character outside
// [A-Za-z0-9._+-] as sent (a whole UTF-8 sequence, or the single byte where v is not valid
// UTF-8), or "" when a digit run of more than 19 significant digits comes first.
func firstProblem(v string) string {
	for i := 0; i < len(v); {
		c := v[i]
		switch {
		case isDigit(c):
			j := i
			for j < len(v) && isDigit(v[j]) {
				j++
			}
			if len(strings.TrimLeft(v[i:j], "0")) > 19 {
				return ""
			}
			i = j
		case c < utf8.RuneSelf && validRE.MatchString("a"+string(c)):
			i++
		default:
			_, size := utf8.DecodeRuneInString(v[i:])
			return v[i : i+size]
		}
	}
	panic(fmt.Sprintf("firstProblem(%q): no problem in an invalid version", v))
}

// FuzzCompare checks that Compare is a total order consistent with the key and with the
// reference natural order, over three versions at once (for transitivity).
func FuzzCompare(f *testing.F) {
	for _, s := range [][3]string{
		{"1.9", "1.10", "1.10.1"},
		{"1.01", "1.1", "1.001"},
		{"1", "1.0", "1a"},
		{"2", "10", "100"},
		{"v2.3.0", "v2.10.0", "v10"},
		{"1.0.0-rc1", "1.0.0-rc2", "1.0.0+build"},
		{"0009", "9", "09.0"},
		{"1_2", "1-2", "1.2"},
		{"9999999999999999999", "10000000000000000000", "1"},
		{"", "a b", "1"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, a, b, c string) {
		vs := []string{a, b, c}
		for _, x := range vs {
			// Reflexive.
			require.Zero(t, version.Compare(x, x), "Compare(%q, %q)", x, x)
			for _, y := range vs {
				xy := version.Compare(x, y)
				require.Contains(t, []int{-1, 0, 1}, xy)
				// Antisymmetric.
				require.Equal(t, -xy, version.Compare(y, x), "Compare(%q, %q) = %d", x, y, xy)
				kx, ex := version.Parse(x)
				ky, ey := version.Parse(y)
				switch {
				case ex == nil && ey == nil:
					// The key order is what SQL uses; the reference is what "natural order" means.
					require.Equal(t, strings.Compare(kx, ky), xy, "Compare(%q, %q) vs keys %q, %q", x, y, kx, ky)
					require.Equal(t, refCompare(x, y), xy, "Compare(%q, %q) vs natural order", x, y)
				case ex == nil:
					require.Equal(t, -1, xy, "valid %q sorts before invalid %q", x, y)
				case ey == nil:
					require.Equal(t, 1, xy, "invalid %q sorts after valid %q", x, y)
				default:
					require.Equal(t, strings.Compare(x, y), xy, "two invalid versions compare byte-wise")
				}
				// Transitive: x ≤ y ≤ z implies x ≤ z, with x < z when either step is strict.
				for _, z := range vs {
					yz, xz := version.Compare(y, z), version.Compare(x, z)
					if xy <= 0 && yz <= 0 {
						require.LessOrEqual(t, xz, 0, "%q ≤ %q ≤ %q but Compare(x, z) = %d", x, y, z, xz)
						if xy < 0 || yz < 0 {
							require.Equal(t, -1, xz, "%q ≤ %q ≤ %q with a strict step but Compare(x, z) = %d", x, y, z, xz)
						}
					}
				}
			}
		}
	})
}

// FuzzNumericRuns builds two versions that differ only in one number and checks that they
// compare as the numbers do, whatever the leading zeros, and that a number of more than 19
// significant digits is rejected.
func FuzzNumericRuns(f *testing.F) {
	f.Add("1.", uint64(9), uint8(0), uint64(10), uint8(0), ".0")
	f.Add("v", uint64(2), uint8(3), uint64(2), uint8(0), "-rc1")
	f.Add("", uint64(18446744073709551615), uint8(0), uint64(999), uint8(1), "")
	f.Add("release_", uint64(0), uint8(5), uint64(0), uint8(0), "+x")
	f.Fuzz(func(t *testing.T, prefix string, m uint64, zm uint8, n uint64, zn uint8, suffix string) {
		// The number must be a whole digit run: no digit may touch it from either side.
		if (prefix != "" && isDigit(prefix[len(prefix)-1])) || (suffix != "" && isDigit(suffix[0])) {
			return
		}
		vm := prefix + strings.Repeat("0", int(zm%40)) + strconv.FormatUint(m, 10) + suffix
		vn := prefix + strings.Repeat("0", int(zn%40)) + strconv.FormatUint(n, 10) + suffix
		_, em := version.Parse(vm)
		_, en := version.Parse(vn)
		// The same prefix and suffix with a number of at most 19 digits: validity depends on
		// them alone, and any uint64 above 19 digits (≥ 10^19) is rejected.
		for _, x := range []struct {
			v   string
			num uint64
			err error
		}{{vm, m, em}, {vn, n, en}} {
			if x.num >= 1e19 {
				require.Error(t, x.err, "Parse(%q): a 20-digit number", x.v)
			}
		}
		if em != nil || en != nil {
			return
		}
		want := 0
		switch {
		case m < n:
			want = -1
		case m > n:
			want = 1
		}
		require.Equal(t, want, version.Compare(vm, vn), "Compare(%q, %q)", vm, vn)
	})
}

// Regression (found by FuzzParse): the error named the first byte of a multi-byte character
// as a character of its own, so "1é" was rejected for a 'Ã' the caller never sent.
func TestParseNamesTheCharacterAsSent(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]string{
		"1é":    `character "é" not allowed`,
		"1.0✓":  `character "✓" not allowed`,
		"1\xff": `character "\xff" not allowed`,
		"1 2":   `character " " not allowed`,
	} {
		_, err := version.Parse(v)
		require.ErrorContains(t, err, want, "Parse(%q)", v)
	}
}
