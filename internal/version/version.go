// Package version compares rollout task versions in natural order ("1.10" after "1.9") and
// turns a version into a byte-wise sortable key, so PostgreSQL compares versions with a
// plain `COLLATE "C"` text comparison instead of a function per row.
package version

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxLen caps a version's length.
const MaxLen = 128

// maxDigits is the longest run of digits a version may contain (it is zero-padded to this
// width in the key).
const maxDigits = 19

// Parse checks v and returns its sort key. A version is 1 to MaxLen characters from
// [A-Za-z0-9._-+], starting with a letter or digit, with digit runs of at most 19 digits
// (e.g. "1.10", "v2.3.0-rc1", "20240102_add_index").
func Parse(v string) (key string, err error) {
	if v == "" {
		return "", fmt.Errorf("version is empty")
	}
	if len(v) > MaxLen {
		return "", fmt.Errorf("version is longer than %d characters", MaxLen)
	}
	if !isAlnum(v[0]) {
		return "", fmt.Errorf("version %q must start with a letter or digit", v)
	}
	var b strings.Builder
	for i := 0; i < len(v); {
		c := v[i]
		switch {
		case isDigit(c):
			j := i
			for j < len(v) && isDigit(v[j]) {
				j++
			}
			run := strings.TrimLeft(v[i:j], "0")
			if len(run) > maxDigits {
				return "", fmt.Errorf("version %q has a number longer than %d digits", v, maxDigits)
			}
			b.WriteString(strings.Repeat("0", maxDigits-len(run)))
			b.WriteString(run)
			i = j
		case isAlnum(c) || c == '.' || c == '-' || c == '_' || c == '+':
			b.WriteByte(c)
			i++
		default:
			// Name the whole character as sent: %q of the byte alone would show the first byte
			// of a UTF-8 sequence as another character ("é" reported as 'Ã').
			_, size := utf8.DecodeRuneInString(v[i:])
			return "", fmt.Errorf("version %q: character %q not allowed (use letters, digits, '.', '-', '_', '+')", v, v[i:i+size])
		}
	}
	return b.String(), nil
}

// MustKey is Parse for versions known to be valid (tests, constants); it panics otherwise.
func MustKey(v string) string {
	k, err := Parse(v)
	if err != nil {
		panic(err)
	}
	return k
}

// Compare returns -1, 0 or +1 as a sorts before, equal to or after b in natural order.
// Unparseable versions sort after every valid one, then byte-wise.
func Compare(a, b string) int {
	ka, ea := Parse(a)
	kb, eb := Parse(b)
	switch {
	case ea != nil && eb != nil:
		return strings.Compare(a, b)
	case ea != nil:
		return 1
	case eb != nil:
		return -1
	}
	return strings.Compare(ka, kb)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isAlnum(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}
