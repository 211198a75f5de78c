package activities

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store"
)

// DeliveryRequest is the request of one attempt of a delivery, sent at sentAt: the action's
// method, URL and body; its own headers, with the values stored apart; tickgate's headers
// (Idempotency-Key, Tickgate-Schedule, Tickgate-Scheduled-At, Tickgate-Attempt); and the
// Standard Webhooks signature of the tick's key, sentAt and the body, once per secret in
// t.Secrets (domain.WebhookSignature). Whoever sends a delivery builds its request here, so
// every attempt is signed alike. Its error names the field at fault.
func DeliveryRequest(ctx context.Context, t store.HTTPDeliveryTarget, attempt int, sentAt time.Time) (*http.Request, error) {
	body, contentType := t.Action.HTTPBody()
	req, err := http.NewRequestWithContext(ctx, t.Action.Method, t.Action.URL, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("action.url: %w", err)
	}
	if len(body) == 0 {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	for _, name := range t.Action.HeaderNames {
		if v, ok := t.HeaderValues[name]; ok {
			req.Header.Set(name, v)
		}
	}
	if contentType != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", contentType)
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "tickgate")
	}
	signature, err := domain.WebhookSignature(t.Secrets, t.Key, sentAt, body)
	if err != nil {
		return nil, fmt.Errorf("the signing secret of schedule %q: %w (rotate it: POST /schedules/{name}/secret)", t.Schedule, err)
	}
	req.Header.Set(domain.IdempotencyKeyHeader, t.Key)
	req.Header.Set(domain.ScheduleHeader, t.Schedule)
	req.Header.Set(domain.ScheduledAtHeader, t.ScheduledAt.UTC().Format(time.RFC3339Nano))
	req.Header.Set(domain.AttemptHeader, strconv.Itoa(attempt))
	req.Header.Set(domain.WebhookIDHeader, t.Key)
	req.Header.Set(domain.WebhookTimestampHeader, strconv.FormatInt(sentAt.Unix(), 10))
	req.Header.Set(domain.WebhookSignatureHeader, signature)
	return req, nil
}
