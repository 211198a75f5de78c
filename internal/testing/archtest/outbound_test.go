package archtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOutboundClientsAreTheRules: no non-test file of tickgate builds an HTTP client or
// transport, or uses the default one, outside internal/outbound's constructor and the
// exemptions (tooling and tickgate's own API), so every request sent on a user's word
// obeys the outbound rule (docs/security.md "Outbound").
func TestOutboundClientsAreTheRules(t *testing.T) {
	uses, files, err := CheckOutbound(moduleRoot, OutboundExemptions)
	require.NoError(t, err)
	require.Greater(t, files, 100, "the product's files were read")
	for _, u := range uses {
		t.Errorf("%s", u)
	}
	// Every exemption names a path that exists, with its reason: none goes stale.
	for _, e := range OutboundExemptions {
		require.NotEmpty(t, e.Why, e.Path)
		_, err := os.Stat(filepath.Join(moduleRoot, filepath.FromSlash(e.Path)))
		require.NoError(t, err, "exemption %s names nothing", e.Path)
	}
}

// TestOutboundCheckCatchesPlantedClients runs the check on a planted tree
// (testdata/outbound): it reports exactly the planted clients — a literal client and
// transport (under an aliased import), new(http.Client), a zero client, http.Get,
// http.DefaultClient and http.DefaultTransport — and nothing in a test file, an exempt
// folder or a client handed in.
func TestOutboundCheckCatchesPlantedClients(t *testing.T) {
	uses, files, err := CheckOutbound(filepath.Join("testdata", "outbound"), []OutboundExemption{
		{"internal/outbound", "the constructor"}, {"cli", "the CLI"},
	})
	require.NoError(t, err)
	require.Equal(t, 1, files, "the exempt folders and the test file are not read")
	var got []string
	for _, u := range uses {
		got = append(got, u.String())
	}
	require.ElementsMatch(t, []string{
		"activities/send.go:9: declares a zero http.Client, the default one: use outbound.Rule.NewClient",
		"activities/send.go:12: builds an http.Client outside internal/outbound: use outbound.Rule.NewClient",
		"activities/send.go:13: builds an http.Transport outside internal/outbound: use outbound.Rule.NewClient",
		"activities/send.go:14: builds a new(http.Client) outside internal/outbound: use outbound.Rule.NewClient",
		"activities/send.go:15: calls http.Get, which sends through http.DefaultClient: use outbound.Rule.NewClient",
		"activities/send.go:16: uses http.DefaultClient, which takes a proxy from the environment and checks no address: use outbound.Rule.NewClient",
		"activities/send.go:17: uses http.DefaultTransport, which takes a proxy from the environment and checks no address: use outbound.Rule.NewClient",
	}, got)
}
