package domain

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The signature of an http action's request, the Standard Webhooks way
// (https://www.standardwebhooks.com, docs/webhooks.md), so that any receiver verifies it
// with the standard's libraries:
//
//	webhook-id:        the tick's key (the same value as Idempotency-Key)
//	webhook-timestamp: the attempt's time, in Unix seconds
//	webhook-signature: v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">
//
// keyed with the schedule's signing secret, whsec_<base64 of the key's bytes>. While a
// rotation's grace period lasts, the old secret signs too: the header then carries two
// signatures, space-separated, and a receiver holding either secret verifies the request.
// Binding the key into what is signed means a request captured in flight cannot be sent
// again under another key: the receiver deduplicates by the id it verified. What a receiver
// does is client.WebhookVerifier (docs/webhooks.md): tickgate's own receivers — the dev
// receiver, the chaos run, the tests — verify with it too, so one verifier is held to the
// standard.

// Standard Webhooks' headers.
const (
	WebhookIDHeader        = "webhook-id"
	WebhookTimestampHeader = "webhook-timestamp"
	WebhookSignatureHeader = "webhook-signature"
)

// SigningSecretPrefix begins every signing secret (Standard Webhooks' "whsec_"), so one
// is recognised where it leaks.
const SigningSecretPrefix = "whsec_"

// Signing key sizes: a new secret is NewSigningKeyBytes random bytes; Standard Webhooks
// allows MinSigningKeyBytes to MaxSigningKeyBytes.
const (
	MinSigningKeyBytes = 24
	NewSigningKeyBytes = 32
	MaxSigningKeyBytes = 64
)

// SigningSecret is the secret of key's bytes: whsec_ and their base64.
func SigningSecret(key []byte) string {
	return SigningSecretPrefix + base64.StdEncoding.EncodeToString(key)
}

// SigningKey is the HMAC key a secret holds: the bytes its base64 encodes.
func SigningKey(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, SigningSecretPrefix)
	if !ok {
		return nil, fmt.Errorf("a signing secret begins with %s", SigningSecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("a signing secret is %s and base64: %w", SigningSecretPrefix, err)
	}
	if len(key) == 0 {
		return nil, errors.New("a signing secret holds no key")
	}
	return key, nil
}

// WebhookSignature is the webhook-signature header of a request whose webhook-id is id,
// sent at t with body: one v1 signature per secret, in their order, space-separated.
func WebhookSignature(secrets []string, id string, t time.Time, body []byte) (string, error) {
	if len(secrets) == 0 {
		return "", errors.New("no signing secret")
	}
	ts := strconv.FormatInt(t.Unix(), 10)
	sigs := make([]string, 0, len(secrets))
	for _, s := range secrets {
		key, err := SigningKey(s)
		if err != nil {
			return "", err
		}
		sigs = append(sigs, "v1,"+signatureOf(key, id, ts, body))
	}
	return strings.Join(sigs, " "), nil
}

func signatureOf(key []byte, id, ts string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte("."))
	mac.Write([]byte(ts))
	mac.Write([]byte("."))
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}
