package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/tickgate/tickgate/internal/schedulespec"
)

// The HTTP action (docs/schedules.md "HTTP action"): a fire sends one request, retried
// under the schedule's retry policy, signed with the schedule's secret and carrying the
// tick's key as its Idempotency-Key.

// HTTP action limits and defaults.
const (
	DefaultHTTPMethod  = "POST"
	DefaultHTTPTimeout = 10 * time.Second
	MinHTTPTimeout     = 100 * time.Millisecond
	MaxHTTPTimeout     = 5 * time.Minute
	MaxHTTPURL         = 2048
	MaxHTTPHeaders     = 50
	MaxHTTPBody        = 64 << 10
)

// HTTPMethods are the methods an http action may use.
var HTTPMethods = []string{"POST", "PUT", "PATCH", "DELETE", "GET"}

// Headers every request of an http action carries, set by tickgate: an action's own
// headers may not name them (nor any other Tickgate-* or webhook-* header). The signature
// headers are Standard Webhooks' (domain/webhook_signature.go).
const (
	IdempotencyKeyHeader = "Idempotency-Key"
	ScheduleHeader       = "Tickgate-Schedule"
	AttemptHeader        = "Tickgate-Attempt"
	ScheduledAtHeader    = "Tickgate-Scheduled-At"
)

// reservedHeaders are set by tickgate or by the HTTP client itself.
var reservedHeaders = []string{IdempotencyKeyHeader, "Content-Length", "Host", "Transfer-Encoding", "Connection", "Te", "Trailer", "Upgrade",
	WebhookIDHeader, WebhookTimestampHeader, WebhookSignatureHeader}

// hasHTTP reports whether any field of the http action is set.
func (a *Action) hasHTTP() bool {
	return a.URL != "" || a.Method != "" || len(a.Headers) > 0 || len(a.HeaderNames) > 0 || len(a.Body) > 0 || a.Timeout != 0 ||
		a.Limits != nil || a.AutoPause != nil
}

// SplitHeaders is the action as it is stored and shown — its headers by name only, sorted —
// and the values of the headers it gives, which are stored apart (nil when none). Names
// already in HeaderNames (values kept from before, in an update) stay named.
func (a Action) SplitHeaders() (Action, map[string]string) {
	values := a.Headers
	names := append([]string(nil), a.HeaderNames...)
	for name := range values {
		if !containsFold(names, name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	a.Headers = nil
	a.HeaderNames = nil
	if len(names) > 0 {
		a.HeaderNames = names
	}
	if len(values) == 0 {
		values = nil
	}
	return a, values
}

func containsFold(vs []string, v string) bool {
	for _, x := range vs {
		if strings.EqualFold(x, v) {
			return true
		}
	}
	return false
}

// normalizeHTTP checks an http action and fills its defaults (method POST, timeout 10s).
func (a *Action) normalizeHTTP() error {
	if a.URL == "" {
		return &FieldError{Field: "url", Msg: "is required for an http action"}
	}
	u, err := url.Parse(a.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return &FieldError{Field: "url", Msg: fmt.Sprintf("want an absolute http(s) URL such as https://example.com/hook, got %q", a.URL)}
	}
	if len(a.URL) > MaxHTTPURL {
		return &FieldError{Field: "url", Msg: fmt.Sprintf("at most %d characters, got %d", MaxHTTPURL, len(a.URL))}
	}
	if u.User != nil {
		return &FieldError{Field: "url", Msg: "may not carry credentials (user:password@): send them in headers"}
	}
	if a.Method == "" {
		a.Method = DefaultHTTPMethod
	}
	a.Method = strings.ToUpper(a.Method)
	if !contains(HTTPMethods, a.Method) {
		return &FieldError{Field: "method", Msg: fmt.Sprintf("must be one of %s, got %q", strings.Join(HTTPMethods, ", "), a.Method)}
	}
	if len(a.Headers) > MaxHTTPHeaders {
		return &FieldError{Field: "headers", Msg: fmt.Sprintf("at most %d headers, got %d", MaxHTTPHeaders, len(a.Headers))}
	}
	names := make([]string, 0, len(a.Headers))
	for name := range a.Headers {
		names = append(names, name)
	}
	sort.Strings(names) // the first bad one named is the same on every call
	for _, name := range names {
		if err := checkHeader("headers."+name, name, a.Headers[name]); err != nil {
			return err
		}
	}
	if err := a.checkHeaderNames(names); err != nil {
		return err
	}
	if len(a.Body) > 0 {
		if !json.Valid(a.Body) {
			return &FieldError{Field: "body", Msg: "must be a JSON value: an object or array is sent as JSON, a string as its text"}
		}
		if a.Method == "GET" {
			return &FieldError{Field: "body", Msg: "a GET request carries no body"}
		}
		if body, _ := a.HTTPBody(); len(body) > MaxHTTPBody {
			return &FieldError{Field: "body", Msg: fmt.Sprintf("at most %d bytes, got %d", MaxHTTPBody, len(body))}
		}
	}
	if a.Timeout == 0 {
		a.Timeout = schedulespec.Duration(DefaultHTTPTimeout)
	}
	if d := time.Duration(a.Timeout); d < MinHTTPTimeout || d > MaxHTTPTimeout {
		return &FieldError{Field: "timeout", Msg: fmt.Sprintf("want a duration from %s to %s such as \"10s\", got %s", MinHTTPTimeout, MaxHTTPTimeout, d)}
	}
	if a.Limits != nil {
		if err := a.Limits.check("limits"); err != nil {
			return err
		}
	}
	if a.AutoPause != nil {
		if err := a.AutoPause.check(); err != nil {
			return err
		}
	}
	return nil
}

// Host is the destination host of an http action's requests, as its limits key it: the
// URL's host name, lower case, without its port ("" when the URL does not parse).
func (a Action) Host() string {
	u, err := url.Parse(a.URL)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

// checkHeaderNames checks the names of headers whose stored values an update keeps: each a
// valid header name a request may carry, named once (case-insensitively, with the headers
// given), and all of them at most MaxHTTPHeaders.
func (a *Action) checkHeaderNames(given []string) error {
	seen := append([]string(nil), given...)
	for i, name := range a.HeaderNames {
		field := fmt.Sprintf("header_names[%d]", i)
		if err := checkHeader(field, name, ""); err != nil {
			return err
		}
		if containsFold(seen[len(given):], name) {
			return &FieldError{Field: field, Msg: fmt.Sprintf("%q is named twice", name)}
		}
		if !containsFold(seen, name) {
			seen = append(seen, name)
		}
	}
	if len(seen) > MaxHTTPHeaders {
		return &FieldError{Field: "headers", Msg: fmt.Sprintf("at most %d headers, got %d", MaxHTTPHeaders, len(seen))}
	}
	return nil
}

// checkHeader refuses a header an HTTP request cannot carry, or one tickgate sets itself;
// the error names field.
func checkHeader(field, name, value string) error {
	if name == "" || strings.IndexFunc(name, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
		return &FieldError{Field: field, Msg: "is not a valid header name (letters, digits and !#$%&'*+-.^_`|~)"}
	}
	for _, r := range reservedHeaders {
		if strings.EqualFold(name, r) {
			return &FieldError{Field: field, Msg: "is set by tickgate (or by HTTP itself), not by the action"}
		}
	}
	if strings.HasPrefix(strings.ToLower(name), "tickgate-") {
		return &FieldError{Field: field, Msg: "Tickgate-* headers are set by tickgate, not by the action"}
	}
	if strings.HasPrefix(strings.ToLower(name), "webhook-") {
		return &FieldError{Field: field, Msg: "webhook-* headers carry the signature (Standard Webhooks), set by tickgate, not by the action"}
	}
	if strings.ContainsFunc(value, func(r rune) bool { return (r < 0x20 && r != '\t') || r == 0x7f }) {
		return &FieldError{Field: field, Msg: "a header value may not hold control characters (line breaks among them)"}
	}
	return nil
}

func isTokenChar(r rune) bool {
	return r < 0x7f && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r))
}

func contains(vs []string, v string) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// HTTPBody is the body an http action sends and its content type: a JSON string is sent as
// its text (text/plain), any other JSON value as JSON (application/json); no body, none.
// An action's own Content-Type header takes precedence over the one answered here.
func (a Action) HTTPBody() ([]byte, string) {
	raw := bytes.TrimSpace(a.Body)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, ""
	}
	if raw[0] == '"' {
		var text string
		if json.Unmarshal(raw, &text) == nil {
			return []byte(text), "text/plain; charset=utf-8"
		}
	}
	var compact bytes.Buffer
	if json.Compact(&compact, raw) != nil {
		return raw, "application/json"
	}
	return compact.Bytes(), "application/json"
}

// Retry is a schedule's retry policy for its http or workflow action, applied with
// Temporal's retry policy: attempts are spaced from initial_backoff, doubling up to
// max_backoff (or as a receiver's Retry-After asks), until max_attempts have been made or
// max_age has passed since the first attempt.
type Retry struct {
	MaxAttempts    int                   `json:"max_attempts,omitempty"`
	MaxAge         schedulespec.Duration `json:"max_age,omitempty"`
	InitialBackoff schedulespec.Duration `json:"initial_backoff,omitempty"`
	MaxBackoff     schedulespec.Duration `json:"max_backoff,omitempty"`
}

// Retry limits and defaults (an http action without a retry policy gets the defaults).
const (
	DefaultRetryMaxAttempts    = 3
	MaxRetryAttempts           = 185
	DefaultRetryMaxAge         = 24 * time.Hour
	MinRetryMaxAge             = time.Second
	MaxRetryMaxAge             = 24 * time.Hour
	DefaultRetryInitialBackoff = time.Second
	MinRetryBackoff            = 100 * time.Millisecond
	DefaultRetryMaxBackoff     = time.Minute
	MaxRetryBackoff            = time.Hour
	// RetryBackoffCoefficient is how much each wait grows over the one before.
	RetryBackoffCoefficient = 2.0
)

// NormalizeRetry checks the retry policy of a schedule whose action is act and fills its
// defaults. An http action always has one (the defaults when none is given); a workflow
// action has one only when given (none: its target runs once, as Temporal's workflows do);
// an event action takes none. The error names the field under "retry".
func NormalizeRetry(r *Retry, act ActionKind) (*Retry, error) {
	switch {
	case act == ActionEvent && r != nil:
		return nil, &FieldError{Msg: "an event action is appended at once and has no retry policy"}
	case r == nil && act != ActionHTTP:
		return nil, nil
	case r == nil:
		r = &Retry{}
	}
	out := *r
	if out.MaxAttempts == 0 {
		out.MaxAttempts = DefaultRetryMaxAttempts
	}
	if out.MaxAttempts < 1 || out.MaxAttempts > MaxRetryAttempts {
		return nil, &FieldError{Field: "max_attempts", Msg: fmt.Sprintf("want 1 to %d (1: no retry), got %d", MaxRetryAttempts, out.MaxAttempts)}
	}
	if out.MaxAge == 0 {
		out.MaxAge = schedulespec.Duration(DefaultRetryMaxAge)
	}
	if d := time.Duration(out.MaxAge); d < MinRetryMaxAge || d > MaxRetryMaxAge {
		return nil, &FieldError{Field: "max_age", Msg: fmt.Sprintf("want a duration from %s to %s, got %s", MinRetryMaxAge, MaxRetryMaxAge, d)}
	}
	if out.InitialBackoff == 0 {
		out.InitialBackoff = schedulespec.Duration(DefaultRetryInitialBackoff)
	}
	if d := time.Duration(out.InitialBackoff); d < MinRetryBackoff || d > MaxRetryBackoff {
		return nil, &FieldError{Field: "initial_backoff", Msg: fmt.Sprintf("want a duration from %s to %s, got %s", MinRetryBackoff, MaxRetryBackoff, d)}
	}
	if out.MaxBackoff == 0 {
		out.MaxBackoff = schedulespec.Duration(max(DefaultRetryMaxBackoff, time.Duration(out.InitialBackoff)))
	}
	if d := time.Duration(out.MaxBackoff); d < time.Duration(out.InitialBackoff) || d > MaxRetryBackoff {
		return nil, &FieldError{Field: "max_backoff", Msg: fmt.Sprintf("want a duration from initial_backoff (%s) to %s, got %s",
			time.Duration(out.InitialBackoff), MaxRetryBackoff, d)}
	}
	return &out, nil
}

// RetryableHTTPStatus reports whether an answer with this status is tried again: 408, 429
// and 5xx. A 2xx is a success; any other status is a final failure.
func RetryableHTTPStatus(code int) bool {
	return code == 408 || code == 429 || code >= 500 && code <= 599
}
