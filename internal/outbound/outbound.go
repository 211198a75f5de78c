// Package outbound is the one rule for every HTTP request tickgate sends to an address a
// user names: an http action's delivery, a rollout wave's HTTP health check, the rollout
// `http` executor, and any door added later (docs/schedules.md "Outbound safety",
// docs/security.md). Every such request goes through a client made by Rule.NewClient, and a test
// (internal/testing/archtest's outbound check) fails on any other HTTP client or transport
// in the product.
//
// The rule refuses the addresses no user of a shared service should reach through it —
// loopback, link-local (cloud metadata among them), private, CGNAT, benchmarking, reserved,
// multicast, unspecified, NAT64 and 6to4, and IPv4-mapped forms of these (Refused) —
// unless TICKGATE_HTTP_ALLOW lists them. It is judged:
//
//   - on a URL when it is given (CheckURL: the API's 400 at create), where a host spelt as a
//     number in another way (http://2130706433/, http://0177.0.0.1/) is read as the address
//     it names;
//   - on the address each connection is made to, after DNS resolution, and the connection
//     is made to the address judged (no second lookup that could answer otherwise);
//   - on every redirect's target.
//
// A client never takes a proxy from the environment (a proxy would make the dialled address
// the proxy's), and its timeouts and the body it reads of an answer are bounded.
package outbound

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"strings"
)

// EnvAllow is the variable that lists the refused addresses allowed all the same: a
// comma-separated list of addresses or CIDR prefixes ("127.0.0.1,10.0.0.0/8").
const EnvAllow = "TICKGATE_HTTP_ALLOW"

// ErrRefused is wrapped by every refusal.
var ErrRefused = errors.New("refused by the outbound rule")

// Resolver answers the addresses of a host name (net.DefaultResolver's LookupNetIP when a
// Rule has none: tests give one of their own).
type Resolver func(ctx context.Context, host string) ([]netip.Addr, error)

// Rule decides which addresses a request may reach. The zero Rule refuses every address in
// Refused and resolves names with the system's resolver.
type Rule struct {
	allow   []netip.Prefix
	resolve Resolver
}

// FromEnv reads TICKGATE_HTTP_ALLOW.
func FromEnv() (Rule, error) {
	r, err := Parse(os.Getenv(EnvAllow))
	if err != nil {
		return Rule{}, fmt.Errorf("%s: %w", EnvAllow, err)
	}
	return r, nil
}

// Parse reads a comma-separated list of addresses and CIDR prefixes.
func Parse(s string) (Rule, error) {
	var r Rule
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			if p.Addr().Is4In6() {
				p = netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-96, 0))
			}
			r.allow = append(r.allow, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return Rule{}, fmt.Errorf("want addresses or CIDR prefixes such as 10.0.0.0/8, got %q", f)
		}
		a = a.Unmap().WithZone("")
		r.allow = append(r.allow, netip.PrefixFrom(a, a.BitLen()))
	}
	return r, nil
}

// WithResolver is the rule resolving names with resolve (a test's own names).
func (r Rule) WithResolver(resolve Resolver) Rule {
	r.resolve = resolve
	return r
}

// String lists the allowed prefixes, as Parse reads them.
func (r Rule) String() string {
	parts := make([]string, len(r.allow))
	for i, p := range r.allow {
		parts[i] = p.String()
	}
	return strings.Join(parts, ",")
}

// Range is a refused range of addresses and what it is.
type Range struct {
	Prefix netip.Prefix
	What   string
}

// Refused are the ranges the rule refuses unless TICKGATE_HTTP_ALLOW lists them. An
// IPv4-mapped IPv6 address (::ffff:a.b.c.d) is judged as the IPv4 address it carries.
var Refused = []Range{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified (this network)"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space (CGNAT)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible (deprecated)"},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "NAT64 (local use)"},
	{netip.MustParsePrefix("100::/64"), "discard-only"},
	{netip.MustParsePrefix("2002::/16"), "6to4"},
	{netip.MustParsePrefix("fc00::/7"), "unique local (private)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local (deprecated)"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// refusedAs names the refused range a holds ("" when none).
func refusedAs(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	if !a.IsValid() {
		return "not an address"
	}
	for _, r := range Refused {
		if r.Prefix.Contains(a) {
			return r.What
		}
	}
	return ""
}

// Public reports whether a lies in none of the refused ranges.
func Public(a netip.Addr) bool { return refusedAs(a) == "" }

// Allowed reports whether a request may reach a: a public address, or one
// TICKGATE_HTTP_ALLOW lists.
func (r Rule) Allowed(a netip.Addr) bool { return r.check(a) == nil }

// check is nil when a may be reached, else the refusal naming it.
func (r Rule) check(a netip.Addr) error {
	a = a.Unmap().WithZone("")
	what := refusedAs(a)
	if what == "" {
		return nil
	}
	for _, p := range r.allow {
		if p.Contains(a) {
			return nil
		}
	}
	return fmt.Errorf("%w: %s is not a public address (%s); list it in %s to allow it", ErrRefused, a, what, EnvAllow)
}

// CheckURL checks an http(s) URL given by a user: its scheme, and its host when that is an
// address (however spelt: 127.0.0.1, [::ffff:127.0.0.1], 2130706433, 0177.0.0.1, 0x7f.1) or
// localhost, which the rule must allow. A host name is judged when it is resolved, at each
// connection.
func (r Rule) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("not a URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("want an http or https URL, got the scheme %q", u.Scheme)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("not a URL: no host in %q", raw)
	}
	if a, ok := HostAddr(host); ok {
		return r.check(a)
	}
	if isLocalhost(host) {
		return r.checkAll(host, []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")})
	}
	return nil
}

// checkAll refuses a host when any of its addresses is refused, naming the host when it
// was not spelt as the address itself.
func (r Rule) checkAll(host string, addrs []netip.Addr) error {
	for _, a := range addrs {
		if err := r.check(a); err != nil {
			if strings.Trim(host, "[]") == a.String() {
				return err
			}
			return fmt.Errorf("%w (the address of %s)", err, host)
		}
	}
	return nil
}

// isLocalhost reports whether host is localhost or a name under it, which resolvers answer
// with loopback addresses whatever DNS says.
func isLocalhost(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	return h == "localhost" || strings.HasSuffix(h, ".localhost")
}
