package outbound

import (
	"net/netip"
	"strconv"
	"strings"
)

// HostAddr reads a URL's host as an address, however it is spelt: an IPv4 or IPv6 literal
// (brackets, a zone and an IPv4-mapped form allowed), or an IPv4 address in one of the
// numeric forms inet_aton accepts, which resolvers and other HTTP clients read as an
// address: one number for all 32 bits (2130706433), two or three parts (127.1, 127.0.1),
// and parts in octal (0177.0.0.1) or hexadecimal (0x7f.0.0.1). ok is false for a host name.
func HostAddr(host string) (netip.Addr, bool) {
	h := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(host, "]"), "["), ".")
	if a, err := netip.ParseAddr(h); err == nil {
		return a.WithZone(""), true
	}
	return legacyIPv4(h)
}

// legacyIPv4 reads the inet_aton spellings of an IPv4 address.
func legacyIPv4(h string) (netip.Addr, bool) {
	parts := strings.Split(h, ".")
	if len(parts) == 0 || len(parts) > 4 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, ok := inetNumber(p)
		if !ok {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	// The last part fills the bits the parts before it leave.
	last := len(nums) - 1
	for _, n := range nums[:last] {
		if n > 0xff {
			return netip.Addr{}, false
		}
	}
	if nums[last] >= 1<<(8*(4-last)) {
		return netip.Addr{}, false
	}
	v := nums[last]
	for i, n := range nums[:last] {
		v |= n << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true // #nosec G115 -- each byte keeps its eight bits of v, which is below 2^32 (checked above)
}

// inetNumber reads one part of an inet_aton address: decimal, octal with a leading 0, or
// hexadecimal with a leading 0x.
func inetNumber(p string) (uint64, bool) {
	if p == "" {
		return 0, false
	}
	base := 10
	switch {
	case len(p) > 2 && (p[:2] == "0x" || p[:2] == "0X"):
		base, p = 16, p[2:]
	case len(p) > 1 && p[0] == '0':
		base, p = 8, p[1:]
	}
	n, err := strconv.ParseUint(p, base, 32) // no sign, no underscore: digits of base only
	return n, err == nil
}
