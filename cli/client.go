// Package cli is tickgate's command-line client: `tickgate schedule|rollout|task-run|task|
// pc|device|token …` talk to the HTTP API (--server, a token from --token or
// TICKGATE_TOKEN), print tables by default or the API's JSON with -o json, and exit with
// codes a shell script can rely on (see ExitCode).
package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Exit codes.
const (
	ExitOK          = 0
	ExitError       = 1 // anything else (a network error, say)
	ExitUsage       = 2 // bad command line
	ExitNotFound    = 3 // 404
	ExitConflict    = 4 // 409, 412, 422: the state does not allow it
	ExitAuth        = 5 // 401, 403
	ExitInvalid     = 6 // 400, 413, 415: the request was refused as invalid
	ExitUnavailable = 7 // 5xx or the server cannot be reached
	ExitFailed      = 8 // watch: the rollout or task finished unsuccessfully
)

// APIError is a problem+json answer.
type APIError struct {
	Status int    `json:"status"`
	Title  string `json:"title"`
	Detail string `json:"detail"`
	Field  string `json:"field"`
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("%d %s", e.Status, e.Title)
	if e.Field != "" {
		msg += ": " + e.Field
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// UsageError is a bad command line.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, args ...any) error { return &UsageError{Msg: fmt.Sprintf(format, args...)} }

// FailedError is a watched rollout or task that ended unsuccessfully.
type FailedError struct{ Msg string }

func (e *FailedError) Error() string { return e.Msg }

type unavailableError struct{ err error }

func (e *unavailableError) Error() string { return e.err.Error() }
func (e *unavailableError) Unwrap() error { return e.err }

// ExitCode maps an error from Run to the process exit code.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ae *APIError
	var ue *UsageError
	var fe *FailedError
	var un *unavailableError
	switch {
	case errors.As(err, &ue):
		return ExitUsage
	case errors.As(err, &fe):
		return ExitFailed
	case errors.As(err, &un):
		return ExitUnavailable
	case errors.As(err, &ae):
		switch {
		case ae.Status == 404:
			return ExitNotFound
		case ae.Status == 409 || ae.Status == 412 || ae.Status == 422:
			return ExitConflict
		case ae.Status == 401 || ae.Status == 403:
			return ExitAuth
		case ae.Status >= 500:
			return ExitUnavailable
		case ae.Status >= 400:
			return ExitInvalid
		}
	}
	return ExitError
}

// Client talks to the API.
type Client struct {
	Server string
	Token  string
	HTTP   *http.Client
	// Headers are sent with every request (an Idempotency-Key, say).
	Headers map[string]string
}

// Do sends a JSON request and decodes a 2xx answer into out (raw JSON when out is
// *json.RawMessage); anything else is an *APIError.
func (c *Client) Do(ctx context.Context, method, path string, body any, out any) error {
	var r io.Reader
	if body != nil {
		switch b := body.(type) {
		case json.RawMessage:
			r = bytes.NewReader(b)
		default:
			buf, err := json.Marshal(body)
			if err != nil {
				return err
			}
			r = bytes.NewReader(buf)
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.Server, "/")+path, r)
	if err != nil {
		return usagef("bad --server %q: %v", c.Server, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	for k, v := range c.Headers {
		req.Header.Set(k, v)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return &unavailableError{fmt.Errorf("cannot reach %s: %w", c.Server, err)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return &unavailableError{fmt.Errorf("read answer: %w", err)}
	}
	if resp.StatusCode >= 300 {
		ae := &APIError{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode)}
		_ = json.Unmarshal(b, ae)
		if ae.Status == 0 {
			ae.Status = resp.StatusCode
		}
		return ae
	}
	if out == nil || len(b) == 0 {
		return nil
	}
	if raw, ok := out.(*json.RawMessage); ok {
		*raw = append((*raw)[:0], b...)
		return nil
	}
	return json.Unmarshal(b, out)
}
