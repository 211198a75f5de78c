package client

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Standard Webhooks signature (https://www.standardwebhooks.com), which tickgate's http
// action requests carry: three headers,
//
//	webhook-id:        the message's id (the same on each retry of one delivery)
//	webhook-timestamp: when it was signed, in Unix seconds
//	webhook-signature: one or more space-separated "v1,<base64 signature>"
//
// where a signature is the HMAC-SHA256 of "<id>.<timestamp>.<body>" under the secret's
// key, and the secret is "whsec_" followed by the key in base64.

// Standard Webhooks' header names.
const (
	WebhookIDHeader        = "webhook-id"
	WebhookTimestampHeader = "webhook-timestamp"
	WebhookSignatureHeader = "webhook-signature"
)

// DefaultWebhookTolerance is how far a signature's timestamp may lie from the receiver's
// clock, either way, before the request is refused as a replay (the specification's 5 min).
const DefaultWebhookTolerance = 5 * time.Minute

// The reasons a request fails verification (errors.Is).
var (
	ErrWebhookHeaders   = errors.New("webhook: the webhook-id, webhook-timestamp or webhook-signature header is missing")
	ErrWebhookTimestamp = errors.New("webhook: the timestamp is not a time within the tolerance")
	ErrWebhookSignature = errors.New("webhook: no signature matches")
)

// WebhookVerifier checks Standard Webhooks signatures with one secret or several (during a
// rotation, the new one and the one before: a request signed under either passes).
type WebhookVerifier struct {
	keys [][]byte
	// Tolerance is how far the timestamp may lie from Now (DefaultWebhookTolerance when 0).
	Tolerance time.Duration
	// Now is the receiver's clock (time.Now when nil).
	Now func() time.Time
}

// NewWebhookVerifier is a verifier of the given secrets ("whsec_<base64 key>"; the prefix
// may be left out).
func NewWebhookVerifier(secrets ...string) (*WebhookVerifier, error) {
	if len(secrets) == 0 {
		return nil, errors.New("webhook: no secret given")
	}
	v := &WebhookVerifier{}
	for i, s := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(strings.TrimSpace(s), "whsec_"))
		if err != nil || len(key) == 0 {
			return nil, fmt.Errorf("webhook: secret %d is not whsec_ and a base64 key", i+1)
		}
		v.keys = append(v.keys, key)
	}
	return v, nil
}

// Verify checks body against the request's webhook-* headers: the timestamp within the
// tolerance and a v1 signature made with one of the secrets. It answers nil, or an error
// wrapping ErrWebhookHeaders, ErrWebhookTimestamp or ErrWebhookSignature.
func (v *WebhookVerifier) Verify(body []byte, header http.Header) error {
	id, ts, sigs := header.Get(WebhookIDHeader), header.Get(WebhookTimestampHeader), header.Get(WebhookSignatureHeader)
	if id == "" || ts == "" || sigs == "" {
		return ErrWebhookHeaders
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %q is not Unix seconds", ErrWebhookTimestamp, ts)
	}
	now, tolerance := time.Now(), v.Tolerance
	if v.Now != nil {
		now = v.Now()
	}
	if tolerance <= 0 {
		tolerance = DefaultWebhookTolerance
	}
	if d := now.Sub(time.Unix(secs, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: signed %s from now", ErrWebhookTimestamp, d.Round(time.Second))
	}
	for _, key := range v.keys {
		want := sign(key, id, ts, body)
		for _, s := range strings.Fields(sigs) {
			version, sig, ok := strings.Cut(s, ",")
			if !ok || version != "v1" {
				continue // another scheme (v1a, say) is not this verifier's to judge
			}
			got, err := base64.StdEncoding.DecodeString(sig)
			if err == nil && hmac.Equal(got, want) {
				return nil
			}
		}
	}
	return ErrWebhookSignature
}

// VerifyRequest reads r's body (at most maxBytes; 0: 1 MiB) and verifies it; the body is
// answered and left readable again in r.Body.
func (v *WebhookVerifier) VerifyRequest(r *http.Request, maxBytes int64) ([]byte, error) {
	if maxBytes <= 0 {
		maxBytes = 1 << 20
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBytes+1))
	_ = r.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("webhook: read body: %w", err)
	}
	if int64(len(body)) > maxBytes {
		return nil, fmt.Errorf("webhook: body over %d bytes", maxBytes)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, v.Verify(body, r.Header)
}

// Signature is the webhook-signature value of a message signed with the verifier's first
// secret ("v1,<base64>"): what a sender puts in the header, and what a test signs with.
func (v *WebhookVerifier) Signature(id string, timestamp time.Time, body []byte) string {
	return "v1," + base64.StdEncoding.EncodeToString(sign(v.keys[0], id, strconv.FormatInt(timestamp.Unix(), 10), body))
}

func sign(key []byte, id, timestamp string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}
