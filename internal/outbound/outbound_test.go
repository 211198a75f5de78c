package outbound_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/outbound"
)

// refusedForms are addresses of every refused range, in the spellings a URL may give them.
var refusedForms = map[string]string{
	"loopback v4":           "127.0.0.1",
	"loopback v4 /8":        "127.3.2.1",
	"loopback v6":           "[::1]",
	"mapped v4":             "[::ffff:127.0.0.1]",
	"mapped v4 hex":         "[::ffff:7f00:1]",
	"compatible v4":         "[::127.0.0.1]",
	"link-local":            "169.254.1.1",
	"metadata":              "169.254.169.254",
	"link-local v6":         "[fe80::1]",
	"private 10":            "10.1.2.3",
	"private 172":           "172.16.0.1",
	"private 192":           "192.168.1.10",
	"unique local":          "[fd00::5]",
	"CGNAT":                 "100.64.0.1",
	"CGNAT metadata":        "100.100.100.200",
	"IETF 192.0.0/24":       "192.0.0.8",
	"benchmarking":          "198.18.0.1",
	"benchmarking high":     "198.19.255.254",
	"reserved":              "240.0.0.1",
	"broadcast":             "255.255.255.255",
	"multicast":             "224.0.0.1",
	"multicast v6":          "[ff02::1]",
	"NAT64":                 "[64:ff9b::7f00:1]",
	"6to4":                  "[2002:7f00:1::1]",
	"unspecified":           "0.0.0.0",
	"this network":          "0.1.2.3",
	"unspecified v6":        "[::]",
	"decimal":               "2130706433",
	"octal":                 "0177.0.0.1",
	"hex":                   "0x7f.0.0.1",
	"hex whole":             "0x7f000001",
	"short":                 "127.1",
	"short three":           "10.0.1",
	"localhost":             "localhost",
	"localhost with a dot":  "localhost.",
	"under localhost":       "api.localhost",
	"mapped private":        "[::ffff:10.0.0.1]",
	"zoned link-local v6":   "[fe80::1%25eth0]",
	"octal private":         "012.0.0.1",
	"decimal metadata":      "2852039166",
	"trailing dot loopback": "127.0.0.1.",
}

// Every refused range, in every spelling, is refused on the URL, with ErrRefused.
func TestCheckURLRefusesEveryFormOfEveryRefusedRange(t *testing.T) {
	t.Parallel()
	var none outbound.Rule
	for name, host := range refusedForms {
		err := none.CheckURL("http://" + host + ":8080/hook")
		require.ErrorIs(t, err, outbound.ErrRefused, "%s: %s", name, host)
		require.Contains(t, err.Error(), outbound.EnvAllow, name)
	}
	for _, u := range []string{"https://example.com/hook", "http://8.8.8.8/", "http://[2001:4860:4860::8888]/", "http://192.0.2.10/",
		"http://1.1.1.1:8080/", "http://134744072/", "http://100.128.0.1/", "http://198.20.0.1/"} {
		require.NoError(t, none.CheckURL(u), u)
	}
	require.Error(t, none.CheckURL("ftp://example.com/"))
	require.Error(t, none.CheckURL("http:///nohost"))
}

// The inet_aton spellings read as the address they name; a name stays a name.
func TestHostAddrReadsNumericSpellings(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]string{
		"2130706433": "127.0.0.1", "0177.0.0.1": "127.0.0.1", "0x7f.0.0.1": "127.0.0.1", "0x7f000001": "127.0.0.1",
		"127.1": "127.0.0.1", "127.0.1": "127.0.0.1", "10.0.258": "10.0.1.2", "[::1]": "::1", "8.8.8.8": "8.8.8.8",
		"[fe80::1%eth0]": "fe80::1", "0": "0.0.0.0",
	} {
		a, ok := outbound.HostAddr(host)
		require.True(t, ok, host)
		require.Equal(t, want, a.String(), host)
	}
	for _, host := range []string{"example.com", "1.2.3.4.5", "4294967296", "256.0.0.1", "1.2.3.256", "0x", "09.0.0.1", "1e3", "-1", "+1", "1..2"} {
		_, ok := outbound.HostAddr(host)
		require.False(t, ok, host)
	}
}

// TICKGATE_HTTP_ALLOW lets listed addresses and prefixes through, in any spelling.
func TestAllowListedAddresses(t *testing.T) {
	t.Parallel()
	allow, err := outbound.Parse("127.0.0.1, 10.0.0.0/8, ::ffff:100.64.0.0/106")
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1/32,10.0.0.0/8,100.64.0.0/10", allow.String())
	for _, u := range []string{"http://127.0.0.1:8080/health", "http://2130706433/", "http://[::ffff:127.0.0.1]/", "http://10.9.9.9/",
		"http://012.1.1.1/", "http://100.100.100.200/", "http://localhost/"} {
		if strings.Contains(u, "localhost") {
			// localhost is 127.0.0.1 and ::1: both must be allowed.
			require.ErrorIs(t, allow.CheckURL(u), outbound.ErrRefused, u)
			continue
		}
		require.NoError(t, allow.CheckURL(u), u)
	}
	require.ErrorIs(t, allow.CheckURL("http://192.168.1.1/"), outbound.ErrRefused)
	require.ErrorIs(t, allow.CheckURL("http://127.0.0.2/"), outbound.ErrRefused)
	_, err = outbound.Parse("10.0.0.0/8,nonsense")
	require.Error(t, err)
}

// target is a loopback server counting the requests it gets.
func target(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	hits := new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if h != nil {
			h(w, r)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv, hits
}

// The client judges the address it connects to, after resolution, whatever the URL says;
// an allowed address is reached.
func TestClientJudgesTheDialledAddress(t *testing.T) {
	t.Parallel()
	srv, hits := target(t, nil)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	names := outbound.Resolver(func(_ context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "internal.test":
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		case "mixed.test":
			return []netip.Addr{netip.MustParseAddr("8.8.8.8"), netip.MustParseAddr("127.0.0.1")}, nil
		}
		return nil, fmt.Errorf("no such host %s", host)
	})
	none := outbound.Rule{}.WithResolver(names)
	for _, host := range []string{"127.0.0.1", "2130706433", "0177.0.0.1", "[::ffff:127.0.0.1]", "localhost", "internal.test", "mixed.test"} {
		_, err := none.NewClient(outbound.Options{Timeout: 5 * time.Second}).Get(fmt.Sprintf("http://%s:%d/", host, port))
		require.ErrorIs(t, err, outbound.ErrRefused, host)
	}
	require.Zero(t, hits.Load(), "no refused request reached the server")

	allow, err := outbound.Parse("127.0.0.1")
	require.NoError(t, err)
	allow = allow.WithResolver(names)
	for _, host := range []string{"127.0.0.1", "2130706433", "internal.test"} {
		resp, err := allow.NewClient(outbound.Options{Timeout: 5 * time.Second}).Get(fmt.Sprintf("http://%s:%d/", host, port))
		require.NoError(t, err, host)
		resp.Body.Close()
		require.Equal(t, http.StatusNoContent, resp.StatusCode)
	}
	require.EqualValues(t, 3, hits.Load())
}

// A redirect is followed only when the options ask, and never to an address the rule
// refuses.
func TestClientRedirects(t *testing.T) {
	t.Parallel()
	victim, victimHits := target(t, nil)
	// The redirector listens on a second loopback address, the only one allowed.
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	require.NoError(t, err)
	front := &http.Server{ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, victim.URL+"/admin", http.StatusFound)
	})}
	go func() { _ = front.Serve(ln) }()
	t.Cleanup(func() { _ = front.Close() })
	allow, err := outbound.Parse("127.0.0.2")
	require.NoError(t, err)

	resp, err := allow.NewClient(outbound.Options{}).Get("http://" + ln.Addr().String() + "/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode, "no redirect followed by default")

	_, err = allow.NewClient(outbound.Options{Redirects: 3}).Get("http://" + ln.Addr().String() + "/")
	require.ErrorIs(t, err, outbound.ErrRefused, "the redirect to loopback is refused")
	require.Zero(t, victimHits.Load())
}

// An answer's body ends at the bound.
func TestClientBoundsTheBody(t *testing.T) {
	t.Parallel()
	big, _ := target(t, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(strings.Repeat("x", 4096)))
	})
	allow, err := outbound.Parse("127.0.0.1")
	require.NoError(t, err)
	resp, err := allow.NewClient(outbound.Options{MaxResponseBytes: 100}).Get(big.URL)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	require.Len(t, b, 100)
}

// A request is bounded by its timeout even when the server never answers.
func TestClientTimesOut(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	slow, _ := target(t, func(http.ResponseWriter, *http.Request) { <-block })
	defer close(block)
	allow, err := outbound.Parse("127.0.0.1")
	require.NoError(t, err)
	_, err = allow.NewClient(outbound.Options{Timeout: 200 * time.Millisecond}).Get(slow.URL)
	require.Error(t, err)
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "%v", err)
}
