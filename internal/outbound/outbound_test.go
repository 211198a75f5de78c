package outbound_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/outbound"
)

// The rule refuses every non-public address unless TICKGATE_HTTP_ALLOW lists it, on the
// literal host of a URL and on the address a connection is actually made to.
func TestRuleRefusesInternalAddressesUnlessAllowed(t *testing.T) {
	var none outbound.Rule
	for _, a := range []string{"127.0.0.1", "10.1.2.3", "192.168.0.1", "169.254.169.254", "::1", "fe80::1", "0.0.0.0", "fd00::5", "::ffff:127.0.0.1"} {
		require.False(t, none.Allowed(netip.MustParseAddr(a)), a)
	}
	for _, a := range []string{"8.8.8.8", "2001:4860:4860::8888"} {
		require.True(t, none.Allowed(netip.MustParseAddr(a)), a)
	}
	require.ErrorIs(t, none.CheckURL("http://127.0.0.1:8080/health"), outbound.ErrRefused)
	require.ErrorIs(t, none.CheckURL("http://localhost/health"), outbound.ErrRefused)
	require.ErrorIs(t, none.CheckURL("http://[::1]/"), outbound.ErrRefused)
	require.NoError(t, none.CheckURL("https://status.example.com/health"), "a name is checked when it is resolved")

	allow, err := outbound.Parse("127.0.0.1, 10.0.0.0/8")
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1/32,10.0.0.0/8", allow.String())
	require.NoError(t, allow.CheckURL("http://127.0.0.1:8080/health"))
	require.NoError(t, allow.CheckURL("http://10.9.9.9/"))
	require.ErrorIs(t, allow.CheckURL("http://192.168.1.1/"), outbound.ErrRefused)
	_, err = outbound.Parse("10.0.0.0/8,nonsense")
	require.Error(t, err)

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer srv.Close()
	_, err = none.Client(5 * time.Second).Get(srv.URL)
	require.True(t, errors.Is(err, outbound.ErrRefused), "the dial to loopback is refused: %v", err)
	resp, err := allow.Client(5 * time.Second).Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
}
