package outbound

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// Bounds of a client whose Options leave them out.
const (
	DefaultTimeout          = 30 * time.Second
	DefaultMaxResponseBytes = 1 << 20
	maxResponseHeaderBytes  = 64 << 10
	dialTimeout             = 10 * time.Second
)

// Options shape a client of the rule. The zero Options follow no redirect, give a request
// DefaultTimeout and read at most DefaultMaxResponseBytes of an answer's body.
type Options struct {
	// Timeout bounds a whole request, from the dial to the last byte of the answer read.
	Timeout time.Duration
	// Redirects is how many redirects a request follows, each to a URL and an address the
	// rule allows. 0 follows none: the 3xx answer is the request's answer.
	Redirects int
	// MaxResponseBytes is how much of an answer's body can be read: past it the body ends.
	MaxResponseBytes int64
	// MaxIdleConnsPerHost keeps that many idle connections to a receiver (2 when 0).
	MaxIdleConnsPerHost int
	// Wrap wraps the client's transport (the tracing of a call, telemetry.HTTPTransport):
	// whatever it adds, the connections are the rule's.
	Wrap func(http.RoundTripper) http.RoundTripper
}

// NewClient is the HTTP client of requests to addresses a user names: the one constructor
// every door uses. Each connection is judged on the address it is made to, after DNS
// resolution, and made to that address; every redirect's target is judged as a URL given
// by a user; no proxy is taken from the environment; the dial, the TLS handshake, the
// answer's headers and the whole request are bounded in time, and an answer's headers and
// body in size.
func (r Rule) NewClient(o Options) *http.Client {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	dialer := &net.Dialer{
		Timeout: min(o.Timeout, dialTimeout),
		// The last word, whatever the code above it does: the address the socket connects to.
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: cannot read the address %q", ErrRefused, address)
			}
			return r.check(ap.Addr())
		},
	}
	transport := &http.Transport{
		Proxy:                  nil, // never from the environment: the dialled address would be the proxy's
		DialContext:            r.dialContext(dialer),
		TLSHandshakeTimeout:    min(o.Timeout, dialTimeout),
		ResponseHeaderTimeout:  o.Timeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: maxResponseHeaderBytes,
		MaxIdleConns:           max(o.MaxIdleConnsPerHost, 2) * 4,
		MaxIdleConnsPerHost:    max(o.MaxIdleConnsPerHost, 2),
		IdleConnTimeout:        30 * time.Second,
		ForceAttemptHTTP2:      true,
	}
	var rt http.RoundTripper = &boundedBody{next: transport, max: o.MaxResponseBytes}
	if o.Wrap != nil {
		rt = o.Wrap(rt)
	}
	return &http.Client{
		Timeout:   o.Timeout,
		Transport: rt,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if o.Redirects == 0 {
				return http.ErrUseLastResponse
			}
			if len(via) > o.Redirects {
				return fmt.Errorf("stopped after %d redirects", o.Redirects)
			}
			if err := r.CheckURL(req.URL.String()); err != nil {
				return fmt.Errorf("%w: the redirect to %s: %s", ErrRefused, req.URL.Redacted(), strings.TrimPrefix(err.Error(), ErrRefused.Error()+": "))
			}
			return nil
		},
	}
}

// dialContext resolves the host itself, judges every address, and connects to the
// addresses it judged, in order, until one answers.
func (r Rule) dialContext(dialer *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("%w: cannot read the address %q", ErrRefused, addr)
		}
		addrs, err := r.addrsOf(ctx, host)
		if err != nil {
			return nil, err
		}
		if err := r.checkAll(host, addrs); err != nil {
			return nil, err
		}
		var errs []error
		for _, a := range addrs {
			conn, err := dialer.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
			if err == nil {
				return conn, nil
			}
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
		}
		return nil, errors.Join(errs...)
	}
}

// addrsOf is the addresses a connection to host may be made to: the address a numeric host
// names, loopback for localhost, else what the resolver answers.
func (r Rule) addrsOf(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, ok := HostAddr(host); ok {
		return []netip.Addr{a.Unmap()}, nil
	}
	if isLocalhost(host) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, nil
	}
	resolve := r.resolve
	if resolve == nil {
		resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	addrs, err := resolve(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolve %s: no address", host)
	}
	out := make([]netip.Addr, len(addrs))
	for i, a := range addrs {
		out[i] = a.Unmap().WithZone("")
	}
	return out, nil
}

// boundedBody ends every answer's body after max bytes.
type boundedBody struct {
	next http.RoundTripper
	max  int64
}

func (b *boundedBody) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{r: io.LimitReader(resp.Body, b.max), c: resp.Body}
	return resp, nil
}

type limitedBody struct {
	r io.Reader
	c io.Closer
}

func (l *limitedBody) Read(p []byte) (int, error) { return l.r.Read(p) }
func (l *limitedBody) Close() error               { return l.c.Close() }

// Reason is a refusal's own words, from "refused by the outbound rule" on, without what
// the HTTP client wrapped around them (the method and URL, the dial): what a run or a check
// records. Another error is its whole message.
func Reason(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, ErrRefused.Error()); i >= 0 {
		return msg[i:]
	}
	return msg
}
