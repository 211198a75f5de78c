package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/client"
)

// recorder is a fake API: it answers each request with the next of its answers and keeps
// what it was sent.
type recorder struct {
	mu       sync.Mutex
	requests []*http.Request
	bodies   []string
	answers  []func(w http.ResponseWriter)
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.requests = append(r.requests, req)
	r.bodies = append(r.bodies, string(b))
	i := min(len(r.requests), len(r.answers)) - 1
	answer := r.answers[i]
	r.mu.Unlock()
	answer(w)
}

func answer(status int, contentType, body string, header ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}
}

func fakeAPI(t *testing.T, answers ...func(w http.ResponseWriter)) (*recorder, *client.Client) {
	t.Helper()
	rec := &recorder{answers: answers}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL+"/api/v1/", client.WithToken("tg_test"), client.WithRetries(3, time.Millisecond))
	require.NoError(t, err)
	return rec, c
}

const scheduleJSON = `{"name":"nightly","version":3,"paused":false,"labels":{"team":"billing"},"spec":{"cron":"0 3 * * *"},"action":{"kind":"event","topic":"t","type":"x"}}`

// TestClientSendsTokenAndDecodes: the bearer token goes with every request and a 2xx
// answer is decoded into the generated type.
func TestClientSendsTokenAndDecodes(t *testing.T) {
	t.Parallel()
	rec, c := fakeAPI(t, answer(200, "application/json", scheduleJSON))
	r, err := c.GetScheduleWithResponse(context.Background(), "nightly")
	require.NoError(t, err)
	require.Equal(t, "nightly", *r.JSON200.Name)
	require.EqualValues(t, 3, *r.JSON200.Version)
	require.Equal(t, "billing", (*r.JSON200.Labels)["team"])
	require.Equal(t, "Bearer tg_test", rec.requests[0].Header.Get("Authorization"))
	require.Equal(t, "/api/v1/schedules/nightly", rec.requests[0].URL.Path)
}

// TestClientProblemIsATypedError: problem+json becomes an *Error with its status, title,
// detail and field; a 4xx is not retried.
func TestClientProblemIsATypedError(t *testing.T) {
	t.Parallel()
	rec, c := fakeAPI(t, answer(400, "application/problem+json",
		`{"type":"about:blank","title":"Bad Request","status":400,"detail":"want 5 fields","field":"spec.cron"}`))
	_, err := c.CreateScheduleWithResponse(context.Background(), nil, client.CreateScheduleRequest{Name: "x"})
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, 400, apiErr.Status)
	require.Equal(t, "Bad Request", apiErr.Title)
	require.Equal(t, "want 5 fields", apiErr.Detail)
	require.Equal(t, "spec.cron", apiErr.Field)
	require.Equal(t, "400 Bad Request: spec.cron: want 5 fields", apiErr.Error())
	require.Len(t, rec.requests, 1)
	require.Equal(t, 400, client.StatusOf(err))

	_, c = fakeAPI(t, answer(404, "text/plain", "no such thing"))
	_, err = c.GetScheduleWithResponse(context.Background(), "gone")
	require.True(t, client.IsNotFound(err))
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, "no such thing", apiErr.Detail, "a body that is not problem+json is kept as the detail")
}

// TestClientRetriesWritesWithOneIdempotencyKey: a POST answered 503 is sent again with the
// same Idempotency-Key and the same body until it is answered; the caller's own key is the
// one sent.
func TestClientRetriesWritesWithOneIdempotencyKey(t *testing.T) {
	t.Parallel()
	rec, c := fakeAPI(t,
		answer(503, "application/problem+json", `{"status":503,"title":"Service Unavailable"}`, "Retry-After", "0"),
		answer(429, "application/problem+json", `{"status":429,"title":"Too Many Requests"}`),
		answer(201, "application/json", scheduleJSON))
	body := client.CreateScheduleRequest{Name: "nightly", Spec: client.Spec{Cron: ptr("0 3 * * *")}, Action: client.Action{Kind: client.ActionKindEvent}}
	r, err := c.CreateScheduleWithResponse(context.Background(), nil, body)
	require.NoError(t, err)
	require.Equal(t, "nightly", *r.JSON201.Name)
	require.Len(t, rec.requests, 3)
	key := rec.requests[0].Header.Get("Idempotency-Key")
	require.Len(t, key, 32)
	for i, req := range rec.requests {
		require.Equal(t, key, req.Header.Get("Idempotency-Key"), "attempt %d", i+1)
		require.JSONEq(t, rec.bodies[0], rec.bodies[i], "attempt %d", i+1)
	}
	var sent map[string]any
	require.NoError(t, json.Unmarshal([]byte(rec.bodies[0]), &sent))
	require.Equal(t, "nightly", sent["name"])

	rec, c = fakeAPI(t, answer(503, "application/problem+json", `{}`), answer(201, "application/json", scheduleJSON))
	_, err = c.CreateScheduleWithResponse(context.Background(), nil, body, client.WithIdempotencyKey("mine-1"))
	require.NoError(t, err)
	require.Equal(t, "mine-1", rec.requests[0].Header.Get("Idempotency-Key"))
	require.Equal(t, "mine-1", rec.requests[1].Header.Get("Idempotency-Key"))
}

// TestClientRetryLimits: attempts stop at the limit with the last answer as the error, and a
// PATCH is never sent twice.
func TestClientRetryLimits(t *testing.T) {
	t.Parallel()
	rec, c := fakeAPI(t, answer(503, "application/problem+json", `{"status":503,"title":"Service Unavailable","detail":"restarting"}`))
	_, err := c.GetScheduleWithResponse(context.Background(), "nightly")
	require.Equal(t, 503, client.StatusOf(err))
	require.Len(t, rec.requests, 3, "WithRetries(3, …)")

	rec, c = fakeAPI(t, answer(503, "application/problem+json", `{}`), answer(200, "application/json", scheduleJSON))
	_, err = c.UpdateScheduleWithResponse(context.Background(), "nightly", nil, client.UpdateScheduleRequest{})
	require.Equal(t, 503, client.StatusOf(err))
	require.Len(t, rec.requests, 1)
}

// TestClientUnreachable: no answer at all is a *TransportError, not an *Error.
func TestClientUnreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c, err := client.New(url, client.WithRetries(2, time.Millisecond))
	require.NoError(t, err)
	_, err = c.GetScheduleWithResponse(context.Background(), "x")
	var te *client.TransportError
	require.ErrorAs(t, err, &te)
	require.Zero(t, client.StatusOf(err))

	_, err = client.New("127.0.0.1:8080")
	require.Error(t, err, "not a URL")
}

// TestSchedulesIteratorFollowsCursors: the iterator reads every page in turn, sends the
// filters and the cursor, stops when the caller breaks, and yields an error once.
func TestSchedulesIteratorFollowsCursors(t *testing.T) {
	t.Parallel()
	rec, c := fakeAPI(t,
		answer(200, "application/json", `{"items":[{"name":"a"},{"name":"b"}],"next_cursor":"b"}`),
		answer(200, "application/json", `{"items":[{"name":"c"}],"next_cursor":""}`))
	sel := "team=billing"
	var names []string
	for s, err := range c.Schedules(context.Background(), &client.ListSchedulesParams{Selector: &sel}) {
		require.NoError(t, err)
		names = append(names, *s.Name)
	}
	require.Equal(t, []string{"a", "b", "c"}, names)
	require.Len(t, rec.requests, 2)
	require.Equal(t, "team=billing", rec.requests[0].URL.Query().Get("selector"))
	require.Empty(t, rec.requests[0].URL.Query().Get("cursor"))
	require.Equal(t, "b", rec.requests[1].URL.Query().Get("cursor"))
	require.Equal(t, "team=billing", rec.requests[1].URL.Query().Get("selector"))

	rec, c = fakeAPI(t, answer(200, "application/json", `{"items":[{"name":"a"},{"name":"b"}],"next_cursor":"b"}`))
	for s := range c.Schedules(context.Background(), nil) {
		require.Equal(t, "a", *s.Name)
		break
	}
	require.Len(t, rec.requests, 1, "no page is read after a break")

	_, c = fakeAPI(t, answer(200, "application/json", `{"items":[{"name":"a"}],"next_cursor":"a"}`),
		answer(403, "application/problem+json", `{"status":403,"title":"Forbidden"}`))
	var errs []error
	n := 0
	for _, err := range c.Schedules(context.Background(), nil) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	require.Equal(t, 1, n)
	require.Len(t, errs, 1)
	require.Equal(t, 403, client.StatusOf(errs[0]))
	require.False(t, errors.Is(errs[0], context.Canceled))
}

func ptr[T any](v T) *T { return &v }

// TestEventsIteratorSendsTheLastIDAsAfter: a full page's next_cursor goes back as ?after=
// (the topic kept); a feed read from a stored position (an event id) starts there.
func TestEventsIteratorSendsTheLastIDAsAfter(t *testing.T) {
	t.Parallel()
	rec, c := fakeAPI(t,
		answer(200, "application/json", `{"items":[{"id":8,"topic":"t"},{"id":9,"topic":"t"}],"next_cursor":"p1.dy4xMi45"}`),
		answer(200, "application/json", `{"items":[],"next_cursor":""}`))
	topic, from := "t", "7"
	var ids []int
	for e, err := range c.Events(context.Background(), &client.ListEventsParams{Topic: &topic, After: &from}) {
		require.NoError(t, err)
		ids = append(ids, int(*e.Id))
	}
	require.Equal(t, []int{8, 9}, ids)
	require.Len(t, rec.requests, 2)
	require.Equal(t, "7", rec.requests[0].URL.Query().Get("after"))
	require.Equal(t, "p1.dy4xMi45", rec.requests[1].URL.Query().Get("after"))
	require.Equal(t, "t", rec.requests[1].URL.Query().Get("topic"))
	require.Empty(t, rec.requests[1].URL.Query().Get("cursor"))
}
