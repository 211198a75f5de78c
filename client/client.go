// Package client is tickgate's typed Go client.
//
// The operations and their types are generated from the API's OpenAPI document
// (api/openapi.yaml) into client.gen.go: each operation is a method of ClientWithResponses
// named after its operationId (GetScheduleWithResponse, CreateScheduleWithResponse, …),
// whose answer carries the decoded 2xx body (JSON200, JSON201) and the raw one (Body).
//
// This file and its neighbours are the thin layer on top:
//   - New: the bearer token on every request, and retries that are safe (see below);
//   - errors: any answer that is not 2xx is an *Error, the problem+json the API sent
//     (status, title, detail, the offending field), so `errors.As(err, &apiErr)` is the one
//     check a caller makes;
//   - iterators over every paginated list (Schedules, Runs, …), following next_cursor;
//   - WebhookVerifier: the Standard Webhooks signature check for a service that receives
//     tickgate's http action requests.
//
// Retries: a request that failed on the network, or was answered 429, 502, 503 or 504, is
// sent again (Retry-After honoured, else an exponential backoff) when sending it again is
// safe: GET, HEAD, PUT and DELETE always, a POST because this client gives every POST an
// Idempotency-Key (the caller's, when it set one) that the server uses to answer a repeated
// POST with its first answer instead of acting twice. A PATCH is never sent twice, nor a
// POST /tokens (the one route that takes no key: its answer, a new token, is never stored).
package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Client is a tickgate API client: the generated operations (ClientWithResponses) over a
// transport that authenticates, retries what is safe to retry and turns every answer that
// is not 2xx into an *Error.
type Client struct {
	*ClientWithResponses
	// Server is the API's base URL, without /api/v1.
	Server string
	doer   *transport
}

// Option configures New.
type Option func(*options)

type options struct {
	token       string
	httpClient  *http.Client
	maxAttempts int
	backoff     time.Duration
	maxBackoff  time.Duration
	userAgent   string
	headers     http.Header
}

// WithToken sends `Authorization: Bearer <token>` with every request.
func WithToken(token string) Option { return func(o *options) { o.token = token } }

// WithHTTP uses hc to send requests (its Timeout bounds each attempt).
func WithHTTP(hc *http.Client) Option { return func(o *options) { o.httpClient = hc } }

// WithRetries sets how many times a request is sent at most (1: never retried; default 4)
// and the first wait between attempts (doubling, up to 10 s; default 200 ms).
func WithRetries(maxAttempts int, firstWait time.Duration) Option {
	return func(o *options) { o.maxAttempts, o.backoff = max(1, maxAttempts), firstWait }
}

// WithUserAgent names the program in the User-Agent header.
func WithUserAgent(ua string) Option { return func(o *options) { o.userAgent = ua } }

// DoJSON sends a request the generated operations do not cover (a route newer than this
// client, say) through the same transport — token, retries, *Error — with body as JSON
// (nil: none), and decodes a 2xx answer into out (nil: ignored). path starts with /api/v1.
func (c *Client) DoJSON(ctx context.Context, method, path string, body, out any, reqEditors ...RequestEditorFn) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Server+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, edit := range reqEditors {
		if err := edit(ctx, req); err != nil {
			return err
		}
	}
	resp, err := c.doer.Do(req)
	if err != nil {
		return err
	}
	b := readBody(resp)
	if out == nil || len(b) == 0 {
		return nil
	}
	return json.Unmarshal(b, out)
}

// WithHeader sends a header with every request.
func WithHeader(name, value string) Option {
	return func(o *options) { o.headers.Set(name, value) }
}

// New is a client of the API at server (such as "http://127.0.0.1:8080"; a trailing
// /api/v1 is accepted and dropped).
func New(server string, opts ...Option) (*Client, error) {
	o := options{maxAttempts: 4, backoff: 200 * time.Millisecond, maxBackoff: 10 * time.Second,
		userAgent: "tickgate-go-client", headers: http.Header{}}
	for _, opt := range opts {
		opt(&o)
	}
	if o.httpClient == nil {
		o.httpClient = &http.Client{Timeout: 30 * time.Second}
	}
	server = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(server), "/"), "/api/v1")
	if !strings.HasPrefix(server, "http://") && !strings.HasPrefix(server, "https://") {
		return nil, fmt.Errorf("tickgate client: the server %q is not an http(s) URL", server)
	}
	t := &transport{opts: o}
	raw, err := NewClientWithResponses(server, WithHTTPClient(t))
	if err != nil {
		return nil, fmt.Errorf("tickgate client: %w", err)
	}
	return &Client{ClientWithResponses: raw, Server: server, doer: t}, nil
}

// transport sends the generated client's requests.
type transport struct {
	opts options
}

// Do sends req, retrying when that is safe, and answers an *Error for any status that is
// not 2xx (the body read and closed).
func (t *transport) Do(req *http.Request) (*http.Response, error) {
	if t.opts.token != "" && req.Header.Get("Authorization") == "" {
		req.Header.Set("Authorization", "Bearer "+t.opts.token)
	}
	for k, v := range t.opts.headers {
		if req.Header.Get(k) == "" {
			req.Header[k] = v
		}
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", t.opts.userAgent)
	}
	if req.Method == http.MethodPost && req.Header.Get("Idempotency-Key") == "" && !unkeyed[req.URL.Path] {
		req.Header.Set("Idempotency-Key", NewIdempotencyKey())
	}
	retryable := req.Method != http.MethodPatch && (req.Method != http.MethodPost || req.Header.Get("Idempotency-Key") != "") &&
		(req.Body == nil || req.GetBody != nil)
	wait := t.opts.backoff
	for attempt := 1; ; attempt++ {
		resp, err := t.opts.httpClient.Do(req)
		last := attempt >= t.opts.maxAttempts || !retryable
		if err != nil {
			if last || req.Context().Err() != nil {
				return nil, &TransportError{Err: err}
			}
		} else if resp.StatusCode < 300 {
			return resp, nil
		} else if last || !retryStatus(resp.StatusCode) {
			return nil, errorOf(resp)
		} else {
			if ra := retryAfter(resp.Header.Get("Retry-After")); ra > 0 {
				wait = min(ra, t.opts.maxBackoff)
			}
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			_ = resp.Body.Close()
		}
		select {
		case <-req.Context().Done():
			return nil, &TransportError{Err: req.Context().Err()}
		case <-time.After(wait):
		}
		wait = min(2*wait, t.opts.maxBackoff)
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, &TransportError{Err: err}
			}
			req.Body = body
		}
	}
}

// unkeyed are the POST routes that refuse an Idempotency-Key (a token is shown once and its
// answer never stored): such a POST is sent once.
var unkeyed = map[string]bool{"/api/v1/tokens": true}

// retryStatus: answers that mean "not now" rather than "no".
func retryStatus(code int) bool {
	return code == http.StatusTooManyRequests || code == http.StatusBadGateway ||
		code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout
}

// retryAfter reads a Retry-After header in seconds (0: none).
func retryAfter(v string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

// NewIdempotencyKey is a random key for the Idempotency-Key header: a caller that retries a
// POST itself (across a restart, say) keeps the key it sent first and sets it again.
func NewIdempotencyKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// TransportError is a request that got no answer: the server could not be reached, or the
// connection broke, or the context ended.
type TransportError struct{ Err error }

func (e *TransportError) Error() string { return "tickgate API unreachable: " + e.Err.Error() }
func (e *TransportError) Unwrap() error { return e.Err }

// readBody reads an answer's body (at most 1 MiB is kept for an error).
func readBody(resp *http.Response) []byte {
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return bytes.TrimSpace(b)
}

// IsNotFound reports whether err is the API's 404.
func IsNotFound(err error) bool { return StatusOf(err) == http.StatusNotFound }

// StatusOf is the HTTP status of an *Error in err's chain (0 when there is none).
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// WithIdempotencyKey is a request editor that sends key as the Idempotency-Key of a POST, for
// a caller that keeps the key across its own retries.
func WithIdempotencyKey(key string) RequestEditorFn {
	return func(_ context.Context, req *http.Request) error {
		req.Header.Set("Idempotency-Key", key)
		return nil
	}
}
