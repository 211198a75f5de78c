package chaos

import (
	"context"
	"fmt"
	"hash/fnv"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tickgate/tickgate/internal/dev/chaos/invariants"
	"github.com/tickgate/tickgate/internal/dev/receiver"
)

// The http actions of the run: schedules firing at a receiver in this process, which
// verifies every request's Standard Webhooks signature (webhook-id, webhook-timestamp,
// webhook-signature, the signed webhook-id being the Idempotency-Key) with the secret its
// create answer showed, and keeps what arrived per Idempotency-Key.

// httpTimeout is the chaos http actions' timeout per attempt: the receiver's slow answers
// outlast it.
const httpTimeout = 2 * time.Second

// httpLoad is the receiver and the secrets its schedules were created with.
type httpLoad struct {
	rcv     *receiver.Receiver
	mu      sync.Mutex
	secrets map[string]string
}

// startHTTPLoad starts the receiver. Its answers depend on the key and the attempt only:
// of the keys, a quarter have their first attempt answered 503, a tenth 429 with
// Retry-After: 1, a twentieth later than the action's timeout; every other attempt is
// answered 200.
func startHTTPLoad() (*httpLoad, error) {
	rcv, err := receiver.Start()
	if err != nil {
		return nil, err
	}
	h := &httpLoad{rcv: rcv, secrets: map[string]string{}}
	rcv.Secret = h.secret
	rcv.Answer = func(key string, attempt int) receiver.Answer {
		if attempt > 1 {
			return receiver.Answer{}
		}
		f := fnv.New32a()
		_, _ = f.Write([]byte(key))
		switch n := f.Sum32() % 100; {
		case n < 25:
			return receiver.Answer{Status: http.StatusServiceUnavailable}
		case n < 35:
			return receiver.Answer{Status: http.StatusTooManyRequests, RetryAfter: "1"}
		case n < 40:
			return receiver.Answer{Delay: httpTimeout + time.Second}
		}
		return receiver.Answer{}
	}
	return h, nil
}

func (h *httpLoad) secret(schedule string) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.secrets[schedule]
	return s, ok
}

// create makes the profile's http schedules, starting at startAt, alternating the overlap
// policies skip and allow_all, and keeps the secret each create answer shows.
func (h *httpLoad) create(ctx context.Context, c *apiClient, p Profile, startAt time.Time) error {
	for i := 0; i < p.HTTPSchedules; i++ {
		name := fmt.Sprintf("chaos-http-%02d", i)
		overlap := "skip"
		if i%2 == 1 {
			overlap = "allow_all"
		}
		body := map[string]any{
			"name": name,
			"spec": map[string]any{"interval": p.HTTPEvery.String(), "start_at": startAt.Format(time.RFC3339)},
			"action": map[string]any{"kind": "http", "url": h.rcv.URL() + "/hooks/" + name, "timeout": httpTimeout.String(),
				"body": map[string]any{"schedule": name}},
			"retry":    map[string]any{"max_attempts": 5, "initial_backoff": "200ms", "max_backoff": "2s"},
			"policies": map[string]any{"overlap": overlap, "catchup_window": p.CatchupWindow.String()},
			"labels":   chaosLabel(),
		}
		var created struct {
			SigningSecret string `json:"signing_secret"`
		}
		if err := c.do(ctx, http.MethodPost, "/api/v1/schedules", body, &created); err != nil {
			return err
		}
		if created.SigningSecret == "" {
			return fmt.Errorf("create %s: no signing secret in the answer", name)
		}
		h.mu.Lock()
		h.secrets[name] = created.SigningSecret
		h.mu.Unlock()
	}
	return nil
}

// deliveries is what the receiver saw, in the invariants' terms.
func (h *httpLoad) deliveries() map[string]invariants.HTTPDelivery {
	out := map[string]invariants.HTTPDelivery{}
	for k, d := range h.rcv.Deliveries() {
		out[k] = invariants.HTTPDelivery{Key: k, Executions: d.Executions, BadSignatures: d.BadSignatures}
	}
	return out
}

// check compares the receiver's view with the runs (invariants.CheckHTTP), in a statement
// of its own: the receiver is read before its snapshot and after it.
func (h *httpLoad) check(ctx context.Context, pool *pgxpool.Pool) (invariants.HTTPBreaches, error) {
	before := h.deliveries()
	return invariants.CheckHTTP(ctx, pool, h.rcv.URL(), before, h.deliveries)
}

// httpCheck is the sampled check of the http actions.
func (h *httpLoad) httpCheck(pool *pgxpool.Pool) check {
	return check{name: "S1 http: each tick's key is its run's, executed once (retries of a key count as one), signed",
		count: func(ctx context.Context, _ pgx.Tx) (int64, error) {
			b, err := h.check(ctx, pool)
			return int64(b.Count()), err
		}}
}

// httpTotals are the receiver's totals at the end of the run.
type httpTotals struct {
	keys, requests, executed, redeliveries int64
}

func (h *httpLoad) totals() httpTotals {
	var t httpTotals
	for _, d := range h.rcv.Deliveries() {
		t.keys++
		t.requests += int64(d.Requests)
		t.executed += int64(d.Executions)
		t.redeliveries += int64(d.Redeliveries)
	}
	return t
}
