package domain_test

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"strconv"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/client"
	"github.com/tickgate/tickgate/domain"
)

// tickgate's signatures verify with the Standard Webhooks reference library (an
// implementation written apart from tickgate's), and the library's signatures verify with
// tickgate's: for new secrets, for two secrets during a rotation, and for a secret migrated
// from the old tgs_ form (whsec_ and the base64 of its text). A replay under another
// webhook-id, or a changed body, fails the library's check.
func TestSignaturesVerifyWithTheStandardWebhooksLibrary(t *testing.T) {
	t.Parallel()
	newKey := make([]byte, domain.NewSigningKeyBytes)
	_, _ = rand.Read(newKey)
	rotatedKey := make([]byte, domain.MaxSigningKeyBytes)
	_, _ = rand.Read(rotatedKey)
	legacy := "whsec_" + base64.StdEncoding.EncodeToString([]byte("tgs_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"))
	secrets := []string{domain.SigningSecret(newKey), domain.SigningSecret(rotatedKey), legacy}

	now := time.Now()
	id := "7@2027-03-01T09:30:00.25Z"
	body := []byte(`{"tick":"2027-03-01T09:30:00.25Z","text":"héllo"}`)
	headers := func(sig string) http.Header {
		h := http.Header{}
		h.Set(domain.WebhookIDHeader, id)
		h.Set(domain.WebhookTimestampHeader, strconv.FormatInt(now.Unix(), 10))
		h.Set(domain.WebhookSignatureHeader, sig)
		return h
	}
	for _, secret := range secrets {
		wh, err := standardwebhooks.NewWebhook(secret)
		require.NoError(t, err)
		sig, err := domain.WebhookSignature([]string{secret}, id, now, body)
		require.NoError(t, err)
		require.NoError(t, wh.Verify(body, headers(sig)), "the library verifies tickgate's signature")

		theirs, err := wh.Sign(id, now, body)
		require.NoError(t, err)
		require.Equal(t, theirs, sig, "the same bytes signed the same way")
		ours, err := client.NewWebhookVerifier(secret)
		require.NoError(t, err)
		require.NoError(t, ours.Verify(body, headers(theirs)), "the client's verifier verifies the library's signature")

		replayed := headers(sig)
		replayed.Set(domain.WebhookIDHeader, "7@manual/another-key")
		require.ErrorIs(t, wh.Verify(body, replayed), standardwebhooks.ErrNoMatchingSignature)
		require.ErrorIs(t, wh.Verify([]byte(`{"tick":"changed"}`), headers(sig)), standardwebhooks.ErrNoMatchingSignature)
	}

	// A rotation's grace: the header carries both signatures, and either secret verifies.
	both, err := domain.WebhookSignature(secrets[:2], id, now, body)
	require.NoError(t, err)
	for _, secret := range secrets[:2] {
		wh, err := standardwebhooks.NewWebhook(secret)
		require.NoError(t, err)
		require.NoError(t, wh.Verify(body, headers(both)))
	}
	wh, err := standardwebhooks.NewWebhook(secrets[2])
	require.NoError(t, err)
	require.ErrorIs(t, wh.Verify(body, headers(both)), standardwebhooks.ErrNoMatchingSignature, "a third secret verifies neither")
}
