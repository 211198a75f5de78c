package domain_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
)

func TestHTTPActionNormalizeFillsDefaultsAndNamesTheWrongField(t *testing.T) {
	a := domain.Action{Kind: domain.ActionHTTP, URL: "https://example.com/hook", Method: "put"}
	require.NoError(t, a.Normalize())
	require.Equal(t, "PUT", a.Method)
	require.Equal(t, domain.DefaultHTTPTimeout, time.Duration(a.Timeout))
	require.True(t, a.StartsWorkflow())

	post := domain.Action{Kind: domain.ActionHTTP, URL: "http://example.com"}
	require.NoError(t, post.Normalize())
	require.Equal(t, "POST", post.Method)

	cases := map[string]struct {
		action domain.Action
		field  string
	}{
		"no url":              {domain.Action{Kind: domain.ActionHTTP}, "url"},
		"relative url":        {domain.Action{Kind: domain.ActionHTTP, URL: "/hook"}, "url"},
		"ftp url":             {domain.Action{Kind: domain.ActionHTTP, URL: "ftp://example.com/x"}, "url"},
		"credentials":         {domain.Action{Kind: domain.ActionHTTP, URL: "https://u:p@example.com/"}, "url"},
		"long url":            {domain.Action{Kind: domain.ActionHTTP, URL: "https://example.com/" + strings.Repeat("a", domain.MaxHTTPURL)}, "url"},
		"unknown method":      {domain.Action{Kind: domain.ActionHTTP, URL: "https://example.com", Method: "BREW"}, "method"},
		"bad header name":     {domain.Action{Kind: domain.ActionHTTP, URL: "https://example.com", Headers: map[string]string{"Bad Name": "x"}}, "headers.Bad Name"},
		"header line break":   {domain.Action{Kind: domain.ActionHTTP, URL: "https://example.com", Headers: map[string]string{"X-A": "a\r\nX-B: b"}}, "headers.X-A"},
		"idempotency key set": {domain.Action{Kind: domain.ActionHTTP, URL: "https://example.com", Headers: map[string]string{"idempotency-key": "mine"}}, "headers.idempotency-key"},
		"tickgate header":     {domain.Action{Kind: domain.ActionHTTP, URL: "https://example.com", Headers: map[string]string{"Tickgate-Signature": "x"}}, "headers.Tickgate-Signature"},
		"body not json":       {domain.Action{Kind: domain.ActionHTTP, URL: "https://example.com", Body: json.RawMessage(`{oops`)}, "body"},
		"body on get":         {domain.Action{Kind: domain.ActionHTTP, URL: "https://example.com", Method: "GET", Body: json.RawMessage(`{}`)}, "body"},
		"body too large":      {domain.Action{Kind: domain.ActionHTTP, URL: "https://example.com", Body: json.RawMessage(`"` + strings.Repeat("x", domain.MaxHTTPBody+1) + `"`)}, "body"},
		"timeout too short":   {domain.Action{Kind: domain.ActionHTTP, URL: "https://example.com", Timeout: schedulespec.Duration(time.Millisecond)}, "timeout"},
		"timeout too long":    {domain.Action{Kind: domain.ActionHTTP, URL: "https://example.com", Timeout: schedulespec.Duration(time.Hour)}, "timeout"},
		"http with topic":     {domain.Action{Kind: domain.ActionHTTP, URL: "https://example.com", Topic: "t"}, ""},
		"event with url":      {domain.Action{Kind: domain.ActionEvent, URL: "https://example.com"}, ""},
		"workflow with body":  {domain.Action{Kind: domain.ActionWorkflow, WorkflowType: "W", TaskQueue: "q", Body: json.RawMessage(`{}`)}, ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			err := c.action.Normalize()
			var fe *domain.FieldError
			require.True(t, errors.As(err, &fe), "want a FieldError, got %v", err)
			require.Equal(t, c.field, fe.Field, fe.Msg)
		})
	}
}

func TestHTTPBodySendsJSONAsJSONAndAStringAsText(t *testing.T) {
	obj := domain.Action{Body: json.RawMessage(`{ "a" : 1 }`)}
	body, ct := obj.HTTPBody()
	require.Equal(t, `{"a":1}`, string(body))
	require.Equal(t, "application/json", ct)

	text := domain.Action{Body: json.RawMessage(`"hello\nworld"`)}
	body, ct = text.HTTPBody()
	require.Equal(t, "hello\nworld", string(body))
	require.Equal(t, "text/plain; charset=utf-8", ct)

	for _, none := range []json.RawMessage{nil, json.RawMessage(`null`)} {
		body, ct = domain.Action{Body: none}.HTTPBody()
		require.Nil(t, body)
		require.Empty(t, ct)
	}
}

func TestNormalizeRetryDefaultsPerActionAndBounds(t *testing.T) {
	r, err := domain.NormalizeRetry(nil, domain.ActionHTTP)
	require.NoError(t, err)
	require.Equal(t, domain.Retry{
		MaxAttempts: domain.DefaultRetryMaxAttempts, MaxAge: schedulespec.Duration(domain.DefaultRetryMaxAge),
		InitialBackoff: schedulespec.Duration(domain.DefaultRetryInitialBackoff), MaxBackoff: schedulespec.Duration(domain.DefaultRetryMaxBackoff),
	}, *r, "an http action always has a retry policy")

	r, err = domain.NormalizeRetry(nil, domain.ActionWorkflow)
	require.NoError(t, err)
	require.Nil(t, r, "a workflow action has one only when given")

	r, err = domain.NormalizeRetry(&domain.Retry{MaxAttempts: 5, InitialBackoff: schedulespec.Duration(2 * time.Minute)}, domain.ActionWorkflow)
	require.NoError(t, err)
	require.Equal(t, 5, r.MaxAttempts)
	require.Equal(t, 2*time.Minute, time.Duration(r.MaxBackoff), "max_backoff defaults to at least initial_backoff")

	_, err = domain.NormalizeRetry(&domain.Retry{}, domain.ActionEvent)
	var fe *domain.FieldError
	require.True(t, errors.As(err, &fe))
	require.Equal(t, "", fe.Field)

	for field, bad := range map[string]domain.Retry{
		"max_attempts":    {MaxAttempts: domain.MaxRetryAttempts + 1},
		"max_age":         {MaxAge: schedulespec.Duration(48 * time.Hour)},
		"initial_backoff": {InitialBackoff: schedulespec.Duration(time.Millisecond)},
		"max_backoff":     {InitialBackoff: schedulespec.Duration(10 * time.Second), MaxBackoff: schedulespec.Duration(time.Second)},
	} {
		_, err := domain.NormalizeRetry(&bad, domain.ActionHTTP)
		require.True(t, errors.As(err, &fe), field)
		require.Equal(t, field, fe.Field)
	}
	_, err = domain.NormalizeRetry(&domain.Retry{MaxAttempts: -1}, domain.ActionHTTP)
	require.True(t, errors.As(err, &fe))
	require.Equal(t, "max_attempts", fe.Field)
}

func TestRetryableHTTPStatus(t *testing.T) {
	for _, code := range []int{408, 429, 500, 502, 503, 599} {
		require.True(t, domain.RetryableHTTPStatus(code), code)
	}
	for _, code := range []int{200, 204, 301, 400, 401, 404, 409, 422} {
		require.False(t, domain.RetryableHTTPStatus(code), code)
	}
}

// A receiver verifies a request with the schedule's secret, the header and the body
// received: a changed body, another secret or an old timestamp fail.
func TestHTTPSignatureVerifies(t *testing.T) {
	secret := domain.SigningSecretPrefix + "0123"
	at := time.Unix(1_800_000_000, 0)
	body := []byte(`{"a":1}`)
	header := domain.HTTPSignature(secret, at, body)
	require.Regexp(t, `^t=1800000000,v1=[0-9a-f]{64}$`, header)
	require.NoError(t, domain.VerifyHTTPSignature(secret, header, body, at.Add(time.Minute), 0))

	require.ErrorIs(t, domain.VerifyHTTPSignature(secret, header, []byte(`{"a":2}`), at, 0), domain.ErrBadSignature)
	require.ErrorIs(t, domain.VerifyHTTPSignature("tgs_other", header, body, at, 0), domain.ErrBadSignature)
	require.ErrorIs(t, domain.VerifyHTTPSignature(secret, header, body, at.Add(time.Hour), 0), domain.ErrBadSignature)
	require.ErrorIs(t, domain.VerifyHTTPSignature(secret, "v1=abc", body, at, 0), domain.ErrBadSignature)
	// During a rotation a receiver may be sent several v1 values: one match passes.
	require.NoError(t, domain.VerifyHTTPSignature(secret, header+",v1=deadbeef", body, at, 0))
	// An empty body signs "<t>." alone.
	require.NoError(t, domain.VerifyHTTPSignature(secret, domain.HTTPSignature(secret, at, nil), nil, at, 0))
}
