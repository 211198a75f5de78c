// Package outbound is the rule for the HTTP requests tickgate sends to addresses a user
// names (a rollout's health check, docs/progressive.md): a request to a loopback,
// link-local, private, unspecified or multicast address is refused unless
// TICKGATE_HTTP_ALLOW lists it. The rule is checked on a URL's literal host when the URL is
// given (CheckURL), and again on the address each connection is actually made to, after
// DNS resolution (Client), so a name that resolves to an internal address is refused too.
package outbound

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"
)

// EnvAllow is the variable that lists the non-public addresses allowed: a comma-separated
// list of addresses or CIDR prefixes ("127.0.0.1,10.0.0.0/8").
const EnvAllow = "TICKGATE_HTTP_ALLOW"

// Rule decides which addresses a request may reach. The zero Rule allows public addresses
// only.
type Rule struct {
	allow []netip.Prefix
}

// ErrRefused is wrapped by every refusal.
var ErrRefused = errors.New("refused by the outbound rule")

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
			r.allow = append(r.allow, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return Rule{}, fmt.Errorf("want addresses or CIDR prefixes such as 10.0.0.0/8, got %q", f)
		}
		r.allow = append(r.allow, netip.PrefixFrom(a, a.BitLen()))
	}
	return r, nil
}

// String lists the allowed prefixes, as Parse reads them.
func (r Rule) String() string {
	parts := make([]string, len(r.allow))
	for i, p := range r.allow {
		parts[i] = p.String()
	}
	return strings.Join(parts, ",")
}

// Public reports whether a is an address anyone may reach: not loopback, private,
// link-local, unspecified or multicast.
func Public(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsValid() && !a.IsLoopback() && !a.IsPrivate() && !a.IsLinkLocalUnicast() && !a.IsLinkLocalMulticast() &&
		!a.IsInterfaceLocalMulticast() && !a.IsMulticast() && !a.IsUnspecified()
}

// Allowed reports whether a request may reach a.
func (r Rule) Allowed(a netip.Addr) bool {
	a = a.Unmap()
	if Public(a) {
		return true
	}
	for _, p := range r.allow {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// CheckURL checks an http(s) URL's literal host: an IP address (or localhost) the rule
// refuses is an error naming it. A name is checked when it is resolved (Client).
func (r Rule) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("not a URL: %w", err)
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		host = "127.0.0.1"
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return nil // a name: checked at send time, after resolution
	}
	if !r.Allowed(a) {
		return fmt.Errorf("%w: %s is not a public address; list it in %s to allow it", ErrRefused, a, EnvAllow)
	}
	return nil
}

// Client is an HTTP client whose every connection is checked against the rule on the
// address it dials (after DNS resolution), with the given timeout per request.
func (r Rule) Client(timeout time.Duration) *http.Client {
	dialer := &net.Dialer{
		Timeout: timeout,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: cannot read the address %q", ErrRefused, address)
			}
			if !r.Allowed(ap.Addr()) {
				return fmt.Errorf("%w: %s is not a public address; list it in %s to allow it", ErrRefused, ap.Addr(), EnvAllow)
			}
			return nil
		},
	}
	transport := &http.Transport{
		Proxy: nil, // a proxy would make the dialled address the proxy's
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, addr)
		},
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		MaxIdleConns:          10,
		IdleConnTimeout:       30 * time.Second,
	}
	return &http.Client{Timeout: timeout, Transport: transport}
}
