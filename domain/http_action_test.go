package domain_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/client"
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

// The stored action names its headers only; the values go apart. Names kept from before
// (an update) stay named.
func TestSplitHeadersKeepsNamesOnly(t *testing.T) {
	a := domain.Action{Kind: domain.ActionHTTP, URL: "https://example.com", Headers: map[string]string{"X-Env": "prod", "Authorization": "Bearer s3cret"}}
	require.NoError(t, a.Normalize())
	stored, values := a.SplitHeaders()
	require.Nil(t, stored.Headers)
	require.Equal(t, []string{"Authorization", "X-Env"}, stored.HeaderNames)
	require.Equal(t, map[string]string{"X-Env": "prod", "Authorization": "Bearer s3cret"}, values)
	raw, err := json.Marshal(stored)
	require.NoError(t, err)
	require.NotContains(t, string(raw), "s3cret")
	require.Contains(t, string(raw), `"header_names":["Authorization","X-Env"]`)

	kept := domain.Action{Kind: domain.ActionHTTP, URL: "https://example.com", HeaderNames: []string{"Authorization"}, Headers: map[string]string{"X-New": "1"}}
	require.NoError(t, kept.Normalize())
	stored, values = kept.SplitHeaders()
	require.Equal(t, []string{"Authorization", "X-New"}, stored.HeaderNames)
	require.Equal(t, map[string]string{"X-New": "1"}, values)

	none, values := domain.Action{Kind: domain.ActionHTTP, URL: "https://example.com"}.SplitHeaders()
	require.Nil(t, none.HeaderNames)
	require.Nil(t, values)

	for name, bad := range map[string]domain.Action{
		"header_names[0]":           {Kind: domain.ActionHTTP, URL: "https://example.com", HeaderNames: []string{"Bad Name"}},
		"header_names[1]":           {Kind: domain.ActionHTTP, URL: "https://example.com", HeaderNames: []string{"X-A", "x-a"}},
		"headers.webhook-id":        {Kind: domain.ActionHTTP, URL: "https://example.com", Headers: map[string]string{"webhook-id": "mine"}},
		"headers.Webhook-Signature": {Kind: domain.ActionHTTP, URL: "https://example.com", Headers: map[string]string{"Webhook-Signature": "v1,x"}},
	} {
		err := bad.Normalize()
		var fe *domain.FieldError
		require.True(t, errors.As(err, &fe), name)
		require.Equal(t, name, fe.Field, fe.Msg)
	}
}

// A receiver verifies a request with the schedule's secret, the webhook-* headers and the
// body received (the client's verifier, as a user's receiver has): a changed body, another
// id (the same body replayed under another key), another secret or an old timestamp fail.
func TestWebhookSignatureVerifies(t *testing.T) {
	secret := domain.SigningSecret([]byte("0123456789abcdef0123456789abcdef"))
	require.True(t, strings.HasPrefix(secret, "whsec_"))
	at := time.Unix(1_800_000_000, 0)
	ts := "1800000000"
	body := []byte(`{"a":1}`)
	id := "42@2027-01-15T08:00:00Z"
	sig, err := domain.WebhookSignature([]string{secret}, id, at, body)
	require.NoError(t, err)
	require.Regexp(t, `^v1,[A-Za-z0-9+/]{43}=$`, sig)
	verify := func(secret, id, ts, sig string, body []byte, now time.Time) error {
		v, err := client.NewWebhookVerifier(secret)
		if err != nil {
			return err
		}
		v.Now = func() time.Time { return now }
		h := http.Header{}
		h.Set(domain.WebhookIDHeader, id)
		h.Set(domain.WebhookTimestampHeader, ts)
		h.Set(domain.WebhookSignatureHeader, sig)
		return v.Verify(body, h)
	}
	require.NoError(t, verify(secret, id, ts, sig, body, at.Add(time.Minute)))

	other := domain.SigningSecret([]byte("another key of twenty-four bytes"))
	require.ErrorIs(t, verify(secret, id, ts, sig, []byte(`{"a":2}`), at), client.ErrWebhookSignature)
	require.ErrorIs(t, verify(secret, "42@manual/replayed", ts, sig, body, at), client.ErrWebhookSignature)
	require.ErrorIs(t, verify(other, id, ts, sig, body, at), client.ErrWebhookSignature)
	require.ErrorIs(t, verify(secret, id, ts, sig, body, at.Add(time.Hour)), client.ErrWebhookTimestamp)
	require.ErrorIs(t, verify(secret, id, "soon", sig, body, at), client.ErrWebhookTimestamp)
	require.Error(t, verify("tgs_old", id, ts, sig, body, at))

	// During a rotation's grace both secrets sign: a receiver holding either verifies.
	both, err := domain.WebhookSignature([]string{other, secret}, id, at, body)
	require.NoError(t, err)
	require.Len(t, strings.Fields(both), 2)
	require.NoError(t, verify(secret, id, ts, both, body, at))
	require.NoError(t, verify(other, id, ts, both, body, at))
	// An empty body signs "<id>.<timestamp>." alone.
	empty, err := domain.WebhookSignature([]string{secret}, id, at, nil)
	require.NoError(t, err)
	require.NoError(t, verify(secret, id, ts, empty, nil, at))
	_, err = domain.WebhookSignature(nil, id, at, body)
	require.Error(t, err)
}

// A workflow action may start users' workflows only: tickgate's own types (on any queue)
// and queues (for any type) are refused, and TICKGATE_WORKFLOW_TASK_QUEUES narrows the
// queues further.
func TestWorkflowTargetsRefuseTickgatesOwn(t *testing.T) {
	own := domain.WorkflowTargets{OwnTypes: []string{"HTTPDeliveryWorkflow", "SchedulePlannerWorkflow"}, OwnQueues: []string{"tickgate", "tq-prod"}}
	require.Nil(t, own.Check("Report", "reports"))
	for _, c := range []struct{ typ, queue, field string }{
		{"HTTPDeliveryWorkflow", "reports", "workflow_type"},
		{"SchedulePlannerWorkflow", "tickgate", "workflow_type"},
		{"Report", "tickgate", "task_queue"},
		{"Report", "tq-prod", "task_queue"},
	} {
		fe := own.Check(c.typ, c.queue)
		require.NotNil(t, fe, "%s on %s", c.typ, c.queue)
		require.Equal(t, c.field, fe.Field)
	}
	narrowed := own
	narrowed.Queues = []string{"reports", "billing"}
	require.Nil(t, narrowed.Check("Report", "billing"))
	fe := narrowed.Check("Report", "other")
	require.NotNil(t, fe)
	require.Equal(t, "task_queue", fe.Field)
	require.Contains(t, fe.Msg, "TICKGATE_WORKFLOW_TASK_QUEUES")
}
