package client_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/client"
)

// The vectors were computed outside this package: the first is the Standard Webhooks
// specification's own example (checked with `openssl dgst -sha256 -mac HMAC`), the second
// was computed with openssl and again with Python's hmac module, over a body with a
// multi-byte character, an escaped newline and a trailing newline.
var webhookVectors = []struct {
	name, secret, id string
	ts               int64
	body, signature  string
}{
	{"the specification's example", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330,
		`{"test": 2432232314}`, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="},
	{"a key of bytes 0..31", "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", "msg_2Ab", 1767225600,
		"{\"schedule\":\"nightly\",\"tick\":\"2026-01-01T00:00:00Z\",\"note\":\"caf\u00e9\\n\"}\n", "v1,6bxy6vNrnqD6nrWc7UIx6r1R+WdZWhrlhfXMgZjs2GM="},
}

func webhookHeader(id string, ts int64, sig string) http.Header {
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	h.Set("webhook-signature", sig)
	return h
}

// TestWebhookVerifierVectors: each vector verifies at its own time, signs to its own
// signature, and fails once anything in it changes.
func TestWebhookVerifierVectors(t *testing.T) {
	t.Parallel()
	for _, vec := range webhookVectors {
		t.Run(vec.name, func(t *testing.T) {
			v, err := client.NewWebhookVerifier(vec.secret)
			require.NoError(t, err)
			at := time.Unix(vec.ts, 0)
			v.Now = func() time.Time { return at.Add(30 * time.Second) }
			require.NoError(t, v.Verify([]byte(vec.body), webhookHeader(vec.id, vec.ts, vec.signature)))
			require.Equal(t, vec.signature, v.Signature(vec.id, at, []byte(vec.body)))

			// Without the prefix, the same key.
			bare, err := client.NewWebhookVerifier(strings.TrimPrefix(vec.secret, "whsec_"))
			require.NoError(t, err)
			bare.Now = v.Now
			require.NoError(t, bare.Verify([]byte(vec.body), webhookHeader(vec.id, vec.ts, vec.signature)))

			for what, h := range map[string]http.Header{
				"another id":        webhookHeader(vec.id+"x", vec.ts, vec.signature),
				"another timestamp": webhookHeader(vec.id, vec.ts+1, vec.signature),
				"a v2 scheme":       webhookHeader(vec.id, vec.ts, strings.Replace(vec.signature, "v1,", "v2,", 1)),
				"a cut signature":   webhookHeader(vec.id, vec.ts, vec.signature[:len(vec.signature)-4]),
			} {
				require.ErrorIs(t, v.Verify([]byte(vec.body), h), client.ErrWebhookSignature, what)
			}
			require.ErrorIs(t, v.Verify([]byte(vec.body+" "), webhookHeader(vec.id, vec.ts, vec.signature)), client.ErrWebhookSignature, "another body")
		})
	}
}

// TestWebhookVerifierRules: several signatures in the header (one matching is enough), two
// secrets during a rotation, the timestamp's tolerance both ways, missing headers, and
// secrets that are not base64.
func TestWebhookVerifierRules(t *testing.T) {
	t.Parallel()
	vec := webhookVectors[0]
	other := "whsec_" + "c2VjcmV0LWtleS1vZi1hbm90aGVyLXNjaGVkdWxl"
	at := time.Unix(vec.ts, 0)

	v, err := client.NewWebhookVerifier(vec.secret)
	require.NoError(t, err)
	v.Now = func() time.Time { return at }
	both := "v1a,ignored v1,AAAA " + vec.signature
	require.NoError(t, v.Verify([]byte(vec.body), webhookHeader(vec.id, vec.ts, both)))

	rotated, err := client.NewWebhookVerifier(other, vec.secret)
	require.NoError(t, err)
	rotated.Now = v.Now
	require.NoError(t, rotated.Verify([]byte(vec.body), webhookHeader(vec.id, vec.ts, vec.signature)), "the old secret still passes")
	onlyOther, err := client.NewWebhookVerifier(other)
	require.NoError(t, err)
	onlyOther.Now = v.Now
	require.ErrorIs(t, onlyOther.Verify([]byte(vec.body), webhookHeader(vec.id, vec.ts, vec.signature)), client.ErrWebhookSignature)

	for _, skew := range []time.Duration{5*time.Minute + time.Second, -5*time.Minute - time.Second} {
		v.Now = func() time.Time { return at.Add(skew) }
		require.ErrorIs(t, v.Verify([]byte(vec.body), webhookHeader(vec.id, vec.ts, vec.signature)), client.ErrWebhookTimestamp, skew)
	}
	v.Now = func() time.Time { return at.Add(5 * time.Minute) }
	require.NoError(t, v.Verify([]byte(vec.body), webhookHeader(vec.id, vec.ts, vec.signature)), "at the edge")
	v.Tolerance = time.Minute
	require.ErrorIs(t, v.Verify([]byte(vec.body), webhookHeader(vec.id, vec.ts, vec.signature)), client.ErrWebhookTimestamp)

	h := webhookHeader(vec.id, vec.ts, vec.signature)
	h.Set("webhook-timestamp", "yesterday")
	require.ErrorIs(t, v.Verify([]byte(vec.body), h), client.ErrWebhookTimestamp)
	for _, name := range []string{"webhook-id", "webhook-timestamp", "webhook-signature"} {
		h := webhookHeader(vec.id, vec.ts, vec.signature)
		h.Del(name)
		require.ErrorIs(t, v.Verify([]byte(vec.body), h), client.ErrWebhookHeaders, name)
	}

	for _, bad := range []string{"", "whsec_", "whsec_not base64!"} {
		_, err := client.NewWebhookVerifier(bad)
		require.Error(t, err, bad)
	}
	_, err = client.NewWebhookVerifier()
	require.Error(t, err)
}

// TestWebhookVerifyRequest: a receiver's handler verifies the request and can read the
// body again afterwards.
func TestWebhookVerifyRequest(t *testing.T) {
	t.Parallel()
	vec := webhookVectors[1]
	v, err := client.NewWebhookVerifier(vec.secret)
	require.NoError(t, err)
	v.Now = func() time.Time { return time.Unix(vec.ts, 0) }
	req := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader(vec.body))
	req.Header = webhookHeader(vec.id, vec.ts, vec.signature)
	body, err := v.VerifyRequest(req, 0)
	require.NoError(t, err)
	require.Equal(t, vec.body, string(body))
	again := new(strings.Builder)
	_, err = io.Copy(again, req.Body)
	require.NoError(t, err)
	require.Equal(t, vec.body, again.String())

	req = httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader(vec.body))
	req.Header = webhookHeader(vec.id, vec.ts, vec.signature)
	_, err = v.VerifyRequest(req, 10)
	require.Error(t, err)
	require.False(t, errors.Is(err, client.ErrWebhookSignature), "too long is its own refusal")
}
