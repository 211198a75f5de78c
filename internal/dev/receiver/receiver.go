// Package receiver is an endpoint for tickgate's http actions, for the tests, the chaos run
// and the benchmarks: a local HTTP server that verifies each request's Standard Webhooks
// signature (webhook-id, webhook-timestamp, webhook-signature) when it knows the schedule's
// secret, and that the signed webhook-id is the request's Idempotency-Key, answers as it is told, and keeps, per Idempotency-Key, what
// arrived — as a receiver that dedupes by the key would: a key is executed by its first
// delivery answered 2xx, and any delivery of it after that is acknowledged without being
// executed again.
package receiver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/tickgate/tickgate/client"
	"github.com/tickgate/tickgate/domain"
)

// Answer is how the receiver answers one delivery.
type Answer struct {
	Status     int           // 0: 200
	RetryAfter string        // a Retry-After header to send, if any
	Delay      time.Duration // wait this long before answering
}

// Delivery is what the receiver saw of one key.
type Delivery struct {
	Key         string
	Schedule    string
	ScheduledAt time.Time // Tickgate-Scheduled-At (zero when absent)
	// Requests counts every request with the key; Executions the ones answered 2xx while
	// the key was not yet executed (so at most one, by construction); Redeliveries the
	// requests after it was (a retry whose answer was lost: acknowledged, not executed).
	Requests     int
	Executions   int
	Redeliveries int
	// BadSignatures counts requests whose signature did not verify (with a secret known), or
	// whose signed webhook-id was not their Idempotency-Key.
	BadSignatures int
	// First is when the key's first request arrived (its headers read): the first byte, as
	// the receiver sees it.
	First time.Time
}

// Receiver is a running endpoint.
type Receiver struct {
	// Answer decides the answer to a delivery of key, attempt being the Tickgate-Attempt
	// header (nil: 200 at once). Set it before the first request.
	Answer func(key string, attempt int) Answer
	// Secret returns a schedule's signing secret to verify its requests with (nil, or not
	// known: not verified). Set it before the first request.
	Secret func(schedule string) (string, bool)

	srv *http.Server
	ln  net.Listener

	mu   sync.Mutex
	keys map[string]*Delivery
}

// Start listens on 127.0.0.1 at a free port.
func Start() (*Receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("receiver: listen: %w", err)
	}
	r := &Receiver{ln: ln, keys: map[string]*Delivery{}}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// URL is the receiver's base URL (any path is served).
func (r *Receiver) URL() string { return "http://" + r.ln.Addr().String() }

// Close stops the receiver.
func (r *Receiver) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.srv.Shutdown(ctx)
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	arrived := time.Now()
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	key := req.Header.Get(domain.IdempotencyKeyHeader)
	if key == "" {
		http.Error(w, "no Idempotency-Key", http.StatusBadRequest)
		return
	}
	schedule := req.Header.Get(domain.ScheduleHeader)
	attempt, _ := strconv.Atoi(req.Header.Get(domain.AttemptHeader))
	badSignature := false
	if r.Secret != nil {
		if secret, ok := r.Secret(schedule); ok {
			v, err := client.NewWebhookVerifier(secret)
			badSignature = req.Header.Get(domain.WebhookIDHeader) != key || err != nil || v.Verify(body, req.Header) != nil
		}
	}
	r.mu.Lock()
	d, ok := r.keys[key]
	if !ok {
		d = &Delivery{Key: key, Schedule: schedule, First: arrived}
		if at, err := time.Parse(time.RFC3339Nano, req.Header.Get(domain.ScheduledAtHeader)); err == nil {
			d.ScheduledAt = at
		}
		r.keys[key] = d
	}
	d.Requests++
	if badSignature {
		d.BadSignatures++
	}
	executed := d.Executions > 0
	r.mu.Unlock()
	if badSignature {
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	if executed {
		r.mu.Lock()
		d.Redeliveries++
		r.mu.Unlock()
		w.WriteHeader(http.StatusOK) // already done: acknowledged, not done again
		return
	}
	a := Answer{}
	if r.Answer != nil {
		a = r.Answer(key, attempt)
	}
	if a.Delay > 0 {
		select {
		case <-time.After(a.Delay):
		case <-req.Context().Done():
			return
		}
	}
	status := a.Status
	if status == 0 {
		status = http.StatusOK
	}
	if status >= 200 && status <= 299 {
		r.mu.Lock()
		if d.Executions > 0 {
			d.Redeliveries++ // a concurrent delivery of the key executed it first
		} else {
			d.Executions++
		}
		r.mu.Unlock()
	}
	if a.RetryAfter != "" {
		w.Header().Set("Retry-After", a.RetryAfter)
	}
	w.WriteHeader(status)
}

// Deliveries is what arrived so far, by key.
func (r *Receiver) Deliveries() map[string]Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]Delivery, len(r.keys))
	for k, d := range r.keys {
		out[k] = *d
	}
	return out
}

// WaitExecuted waits until n keys have been executed, or ctx ends.
func (r *Receiver) WaitExecuted(ctx context.Context, n int) error {
	for {
		got := 0
		for _, d := range r.Deliveries() {
			got += d.Executions
		}
		if got >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), fmt.Errorf("receiver: %d of %d keys executed", got, n))
		case <-time.After(50 * time.Millisecond):
		}
	}
}
