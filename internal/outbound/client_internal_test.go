package outbound

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// The transport under every client takes no proxy from the environment (HTTP_PROXY and
// the like): a proxy would be the address dialled, judged in place of the receiver's.
func TestClientTakesNoProxy(t *testing.T) {
	t.Parallel()
	c := Rule{}.NewClient(Options{Wrap: func(rt http.RoundTripper) http.RoundTripper { return rt }})
	b, ok := c.Transport.(*boundedBody)
	require.True(t, ok)
	tr, ok := b.next.(*http.Transport)
	require.True(t, ok)
	require.Nil(t, tr.Proxy)
	require.NotNil(t, tr.DialContext)
	require.NotZero(t, c.Timeout)
	require.NotZero(t, tr.ResponseHeaderTimeout)
	require.NotZero(t, tr.MaxResponseHeaderBytes)
}
