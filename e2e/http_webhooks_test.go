package e2e

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/client"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/outbound"
	"github.com/tickgate/tickgate/internal/testing/teststack"
)

// TestHTTPActionVerifiesWithTheStandardWebhooksLibrary: on the whole product, the requests
// of an http action verify with the Standard Webhooks reference library (written apart from
// tickgate) under the secret the create answer showed; the signed webhook-id is the
// request's Idempotency-Key; the header values stored apart are sent. After a rotation with a
// grace period, the next request verifies with the old secret and with the new one.
func TestHTTPActionVerifiesWithTheStandardWebhooksLibrary(t *testing.T) {
	t.Parallel()
	type got struct {
		header http.Header
		body   []byte
	}
	var mu sync.Mutex
	var requests []got
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		requests = append(requests, got{header: r.Header.Clone(), body: body})
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rcv.Close)
	st := teststack.Start(t, teststack.Options{Configure: func(c *config.Config) {
		rule, err := outbound.Parse("127.0.0.1")
		require.NoError(t, err)
		c.HTTPAllow = rule
	}})
	created := st.CreateSchedule(t, map[string]any{
		"name": "standard", "spec": map[string]any{"interval": "1h"},
		"action": map[string]any{"kind": "http", "url": rcv.URL + "/hook", "headers": map[string]any{"Authorization": "Bearer receiver-token"},
			"body": map[string]any{"invoice": 42}},
	})
	secret := *created.SigningSecret
	deliver := func() got {
		t.Helper()
		mu.Lock()
		n := len(requests)
		mu.Unlock()
		// allow_all: the run before may not be recorded ended yet, and must not skip this one.
		overlap := client.TriggerRequestOverlapAllowAll
		r, err := st.Client(t).TriggerScheduleWithResponse(context.Background(), "standard", nil, client.TriggerRequest{Overlap: &overlap})
		require.NoError(t, err)
		var trig api.TriggerView
		teststack.Decode(t, r.Body, &trig)
		require.NotNil(t, trig.Run, "the trigger started a run (%s: %s)", trig.Status, trig.Reason)
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(requests) > n
		}, time.Minute, 50*time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		return requests[n]
	}
	verify := func(secret string, r got) error {
		wh, err := standardwebhooks.NewWebhook(secret)
		require.NoError(t, err)
		return wh.Verify(r.body, r.header)
	}

	first := deliver()
	require.NoError(t, verify(secret, first), "the library verifies the request")
	require.Equal(t, first.header.Get("Idempotency-Key"), first.header.Get("webhook-id"))
	require.Contains(t, first.header.Get("Idempotency-Key"), "@manual/")
	require.Equal(t, "Bearer receiver-token", first.header.Get("Authorization"))
	require.JSONEq(t, `{"invoice":42}`, string(first.body))
	forged := first.header.Clone()
	forged.Set("webhook-id", "1@manual/replayed-under-another-key")
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	require.ErrorIs(t, wh.Verify(first.body, forged), standardwebhooks.ErrNoMatchingSignature, "a replay under another key fails")

	grace := "1h"
	rr, err := st.Client(t).RotateScheduleSecretWithResponse(context.Background(), "standard", nil, client.RotateSecretRequest{Grace: &grace})
	require.NoError(t, err)
	var rot api.SecretView
	teststack.Decode(t, rr.Body, &rot)
	second := deliver()
	require.NoError(t, verify(secret, second), "the old secret verifies during the grace")
	require.NoError(t, verify(rot.SigningSecret, second), "and the new one")
	require.Contains(t, second.header.Get("webhook-signature"), " ", "two signatures")
	require.True(t, len(rot.SigningSecret) > len(domain.SigningSecretPrefix))
}
