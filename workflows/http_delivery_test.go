package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	tickgate "github.com/tickgate/tickgate/client"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/outbound"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// The delivery of an http action's run, in the time-skipping environment: the retry
// policy's waits (and a Retry-After's) pass in no time, while every attempt is a real
// request to a real local server, signed with the schedule's secret from a real PostgreSQL,
// and recorded there.

// receiver is a local HTTP server that answers each request with the next of its answers
// (the last one again once they run out) and keeps what it received.
type receiver struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	answers []answer
	got     []received
}

type answer struct {
	status     int
	retryAfter string
	delay      time.Duration
	body       string
}

type received struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, answers ...answer) *receiver {
	r := &receiver{t: t, answers: answers}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{header: req.Header.Clone(), body: body})
		a := r.answers[min(len(r.got), len(r.answers))-1]
		r.mu.Unlock()
		if a.delay > 0 {
			select {
			case <-time.After(a.delay):
			case <-req.Context().Done():
				return
			}
		}
		if a.retryAfter != "" {
			w.Header().Set("Retry-After", a.retryAfter)
		}
		w.WriteHeader(a.status)
		_, _ = io.WriteString(w, a.body)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// deliveryEnv is a schedule with an http action and one RUNNING run, on a real database,
// and a test workflow environment with the real delivery activity.
type deliveryEnv struct {
	t        *testing.T
	st       *store.Store
	env      *testsuite.TestWorkflowEnvironment
	in       activities.HTTPDelivery
	secret   string
	key      string      // the run's tick key
	starts   []time.Time // the test clock at each attempt's start
	workflow string
}

func newDeliveryEnv(t *testing.T, url string, retry domain.Retry, allow string) *deliveryEnv {
	t.Helper()
	st := testenv.Store(t)
	ctx := context.Background()
	name := fmt.Sprintf("http-%d", time.Now().UnixNano())
	act := domain.Action{Kind: domain.ActionHTTP, URL: url, Body: json.RawMessage(`{"invoice":42}`), Headers: map[string]string{"X-Team": "billing"},
		Timeout: schedulespec.Duration(500 * time.Millisecond)}
	require.NoError(t, act.Normalize())
	r, err := domain.NormalizeRetry(&retry, domain.ActionHTTP)
	require.NoError(t, err)
	stored, values := act.SplitHeaders()
	actionJSON, _ := json.Marshal(stored)
	valuesJSON, _ := json.Marshal(values)
	retryJSON, _ := json.Marshal(r)
	secret := domain.SigningSecret([]byte("a test key of thirty-two bytes!!"))
	row, err := st.CreateSchedule(ctx, store.NewSchedule{Name: name, Spec: json.RawMessage(`{"interval":"1h"}`), Action: actionJSON,
		Overlap: domain.OverlapSkip, Retry: retryJSON, SigningSecret: secret, HeaderValues: valuesJSON})
	require.NoError(t, err)
	tick := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	key := domain.TickKey(row.ID, tick)
	wid := domain.RunWorkflowID(name, key)
	var runID int64
	require.NoError(t, st.Pool.QueryRow(ctx, `INSERT INTO schedule_runs (schedule_id, scheduled_at, fired_at, trigger, status, idempotency_key, workflow_id)
		VALUES ($1, $2, $2, 'scheduled', 'RUNNING', $3, $4) RETURNING id`, row.ID, tick, key, wid).Scan(&runID))
	rule, err := outbound.Parse(allow)
	require.NoError(t, err)

	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(testLogger())
	e := &deliveryEnv{t: t, st: st, env: suite.NewTestWorkflowEnvironment(), secret: secret, workflow: wid, key: key,
		in: activities.HTTPDelivery{RunID: runID, ScheduleID: row.ID, Schedule: name}}
	e.env.RegisterWorkflowWithOptions(workflows.HTTPDeliveryWorkflow, workflow.RegisterOptions{Name: workflows.HTTPDeliveryWorkflowType})
	// A 429 or 503 with Retry-After slows the host in the limiter too: on the test's clock,
	// which Temporal's wait for the retry moves on, as the real one would.
	e.env.RegisterActivity(&activities.HTTPDeliveries{Store: st, Outbound: rule, Limits: &activities.HostLimiter{Now: e.env.Now}})
	e.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: wid})
	e.env.SetOnActivityStartedListener(func(*activity.Info, context.Context, converter.EncodedValues) {
		e.starts = append(e.starts, e.env.Now())
	})
	return e
}

// run delivers and answers the workflow's error (nil: delivered).
func (e *deliveryEnv) run() error {
	e.env.ExecuteWorkflow(workflows.HTTPDeliveryWorkflowType, e.in)
	require.True(e.t, e.env.IsWorkflowCompleted())
	return e.env.GetWorkflowError()
}

// attempts are the attempts recorded for the run, in order.
func (e *deliveryEnv) attempts() []store.RunAttempt {
	got, err := e.st.RunAttempts(context.Background(), []int64{e.in.RunID})
	require.NoError(e.t, err)
	return got[e.in.RunID]
}

func outcomes(as []store.RunAttempt) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.Outcome
		if a.StatusCode != nil {
			out[i] += fmt.Sprintf(" %d", *a.StatusCode)
		}
	}
	return out
}

// failure is the delivery's failure as the run records it.
func failure(t *testing.T, err error) string {
	t.Helper()
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "want an application error, got %v", err)
	require.Equal(t, activities.ErrHTTPDeliveryFailed, app.Type())
	return app.Message()
}

// A receiver failing twice (503) before it answers 200: three attempts, spaced by the
// doubling backoff, each carrying the tick's key as its Idempotency-Key and a signature the
// schedule's secret verifies; each attempt recorded once.
func TestHTTPDeliveryRetriesUntilASuccess(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, answer{status: 503, body: "busy"}, answer{status: 503, body: "busy"}, answer{status: 200, body: "ok"})
	e := newDeliveryEnv(t, rcv.srv.URL+"/hook", domain.Retry{MaxAttempts: 5, InitialBackoff: schedulespec.Duration(time.Second)}, "127.0.0.1")
	require.NoError(t, e.run())

	got := rcv.requests()
	require.Len(t, got, 3)
	for i, r := range got {
		require.Equal(t, e.key, r.header.Get("Idempotency-Key"), "attempt %d carries the tick's key", i+1)
		require.Equal(t, e.key, r.header.Get("webhook-id"), "the key is the signed webhook-id")
		require.Equal(t, fmt.Sprint(i+1), r.header.Get("Tickgate-Attempt"))
		require.Equal(t, e.in.Schedule, r.header.Get("Tickgate-Schedule"))
		require.Equal(t, "billing", r.header.Get("X-Team"), "the action's own headers")
		require.Equal(t, "application/json", r.header.Get("Content-Type"))
		require.JSONEq(t, `{"invoice":42}`, string(r.body))
		require.NoError(t, verifier(t, e.secret).Verify(r.body, r.header), "attempt %d is signed with the schedule's secret", i+1)
		require.Empty(t, r.header.Get("Tickgate-Signature"), "Standard Webhooks' headers replace it")
	}
	require.Equal(t, []string{"retryable 503", "retryable 503", "succeeded 200"}, outcomes(e.attempts()))
	require.Equal(t, "busy", e.attempts()[0].ResponseStart, "the start of the answer's body")
	require.Len(t, e.starts, 3)
	require.Equal(t, time.Second, e.starts[1].Sub(e.starts[0]), "initial_backoff")
	require.Equal(t, 2*time.Second, e.starts[2].Sub(e.starts[1]), "doubled")
}

// A 4xx other than 408 and 429 is final: one attempt, and the run's reason says so.
func TestHTTPDeliveryFinal4xxIsNotRetried(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, answer{status: 404, body: "no such hook"})
	e := newDeliveryEnv(t, rcv.srv.URL, domain.Retry{MaxAttempts: 5}, "127.0.0.1")
	msg := failure(t, e.run())
	require.Contains(t, msg, "HTTP 404 Not Found: no such hook")
	require.Contains(t, msg, "not retried")
	require.Len(t, rcv.requests(), 1)
	require.Equal(t, []string{"final 404"}, outcomes(e.attempts()))
}

// 408 and 5xx are retried until max_attempts; the reason names the last answer and the
// limit.
func TestHTTPDeliveryGivesUpAtMaxAttempts(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, answer{status: 408}, answer{status: 500, body: "boom"})
	e := newDeliveryEnv(t, rcv.srv.URL, domain.Retry{MaxAttempts: 4}, "127.0.0.1")
	msg := failure(t, e.run())
	require.Contains(t, msg, "HTTP 500 Internal Server Error: boom")
	require.Contains(t, msg, "gave up after 4 attempts: max_attempts")
	require.Equal(t, []string{"retryable 408", "retryable 500", "retryable 500", "retryable 500"}, outcomes(e.attempts()))
}

// max_age bounds the whole series: with attempts to spare, no attempt starts after it.
func TestHTTPDeliveryGivesUpAtMaxAge(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, answer{status: 503})
	e := newDeliveryEnv(t, rcv.srv.URL, domain.Retry{MaxAttempts: 100, MaxAge: schedulespec.Duration(10 * time.Second),
		InitialBackoff: schedulespec.Duration(time.Second), MaxBackoff: schedulespec.Duration(4 * time.Second)}, "127.0.0.1")
	msg := failure(t, e.run())
	require.Contains(t, msg, "max_age 10s")
	// Waits of 1, 2, 4 and 4 s: attempts at 0, 1, 3, 7 s; the next, at 11 s, would be past it.
	require.Len(t, e.starts, 4)
	require.Equal(t, 7*time.Second, e.starts[3].Sub(e.starts[0]))
	require.Len(t, e.attempts(), 4)
}

// A 429 with Retry-After (seconds) and a 503 with Retry-After (an HTTP date) set the wait
// before the next attempt, whatever the backoff would have been.
func TestHTTPDeliveryHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, answer{status: 429, retryAfter: "120"}, answer{status: 200})
	e := newDeliveryEnv(t, rcv.srv.URL, domain.Retry{MaxAttempts: 3, InitialBackoff: schedulespec.Duration(time.Second)}, "127.0.0.1")
	require.NoError(t, e.run())
	require.Len(t, e.starts, 2)
	require.Equal(t, 120*time.Second, e.starts[1].Sub(e.starts[0]), "the receiver's Retry-After, not the 1 s backoff")
	first := e.attempts()[0]
	require.NotNil(t, first.RetryAfterMs)
	require.Equal(t, int64(120_000), *first.RetryAfterMs)

	date := newReceiver(t, answer{status: 503, retryAfter: time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)}, answer{status: 204})
	e = newDeliveryEnv(t, date.srv.URL, domain.Retry{MaxAttempts: 3, InitialBackoff: schedulespec.Duration(time.Second)}, "127.0.0.1")
	require.NoError(t, e.run())
	require.Len(t, e.starts, 2)
	require.Greater(t, e.starts[1].Sub(e.starts[0]), 58*time.Minute, "the HTTP date's wait (less the time the request took)")
}

// An answer slower than the action's timeout is no answer: retried, and the next attempt
// that answers in time succeeds.
func TestHTTPDeliveryRetriesARequestThatTimesOut(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, answer{status: 200, delay: 3 * time.Second}, answer{status: 200})
	e := newDeliveryEnv(t, rcv.srv.URL, domain.Retry{MaxAttempts: 3}, "127.0.0.1")
	require.NoError(t, e.run())
	as := e.attempts()
	require.Equal(t, []string{"retryable", "succeeded 200"}, outcomes(as))
	require.Contains(t, as[0].Error, "no answer")
}

// A host name that resolves to a loopback address, not allowed: refused after DNS
// resolution, at the dial, once — the series ends at once, naming action.url.
func TestHTTPDeliveryRefusesAnInternalAddressAfterResolution(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, answer{status: 200})
	_, port, err := net.SplitHostPort(rcv.srv.Listener.Addr().String())
	require.NoError(t, err)
	e := newDeliveryEnv(t, "http://localhost:"+port+"/hook", domain.Retry{MaxAttempts: 5}, "")
	msg := failure(t, e.run())
	require.Contains(t, msg, "action.url: refused by the outbound rule")
	require.Contains(t, msg, "is not a public address")
	require.Contains(t, msg, "not retried")
	require.Empty(t, rcv.requests(), "nothing reached the receiver")
	require.Equal(t, []string{"final"}, outcomes(e.attempts()))
}

// A delivery's input names a run, and is trusted for nothing else: handed another
// schedule's id (as a workflow started by anyone on the namespace could be), or started
// under another workflow id than the run's, it sends nothing — and so signs nothing with
// that schedule's secret.
func TestHTTPDeliveryTrustsNothingItsInputSays(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, answer{status: 200})
	e := newDeliveryEnv(t, rcv.srv.URL, domain.Retry{MaxAttempts: 3}, "127.0.0.1")
	victim := newDeliveryEnv(t, rcv.srv.URL+"/victim", domain.Retry{MaxAttempts: 3}, "127.0.0.1")

	forged := e.in
	forged.ScheduleID, forged.Schedule = victim.in.ScheduleID, victim.in.Schedule
	forged.Action = domain.Action{Kind: domain.ActionHTTP, URL: rcv.srv.URL + "/attacker", Body: json.RawMessage(`{"steal":true}`)}
	e.env.ExecuteWorkflow(workflows.HTTPDeliveryWorkflowType, forged)
	require.True(t, e.env.IsWorkflowCompleted())
	require.Contains(t, failure(t, e.env.GetWorkflowError()), "belongs to schedule")

	other := newDeliveryEnv(t, rcv.srv.URL, domain.Retry{MaxAttempts: 3}, "127.0.0.1")
	other.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "someone-elses-workflow"})
	other.env.ExecuteWorkflow(workflows.HTTPDeliveryWorkflowType, other.in)
	require.True(t, other.env.IsWorkflowCompleted())
	require.Contains(t, failure(t, other.env.GetWorkflowError()), "is delivered by "+other.workflow)

	require.Empty(t, rcv.requests(), "nothing was sent")
	require.Empty(t, e.attempts())
	require.Empty(t, other.attempts())
}

// A rotation with a grace period: both secrets sign each request until the grace ends;
// the action's header values, stored apart, are sent.
func TestHTTPDeliverySignsWithBothSecretsDuringAGrace(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, answer{status: 200})
	e := newDeliveryEnv(t, rcv.srv.URL, domain.Retry{MaxAttempts: 3}, "127.0.0.1")
	rotated := domain.SigningSecret([]byte("the rotated key of 32 bytes ...."))
	until := time.Now().Add(time.Hour)
	_, err := e.st.RotateScheduleSecret(context.Background(), store.SecretRotation{Schedule: e.in.Schedule, Secret: rotated, GraceUntil: &until,
		Actor: "test", Door: domain.DoorAPI})
	require.NoError(t, err)
	require.NoError(t, e.run())
	got := rcv.requests()
	require.Len(t, got, 1)
	h := got[0].header
	require.Len(t, strings.Fields(h.Get("webhook-signature")), 2)
	for _, secret := range []string{e.secret, rotated} {
		require.NoError(t, verifier(t, secret).Verify(got[0].body, h))
	}
	require.Equal(t, "billing", h.Get("X-Team"))
}

// firstAttempt records the run's first attempt as the worker that released its fire made
// it (direct), with outcome and answer, finished now.
func (e *deliveryEnv) firstAttempt(outcome string, status int, retryAfter time.Duration) {
	e.t.Helper()
	now := time.Now()
	var code, wait any
	if status != 0 {
		code = status
	}
	if retryAfter > 0 {
		wait = retryAfter.Milliseconds()
	}
	_, err := e.st.Pool.Exec(context.Background(), `INSERT INTO schedule_run_attempts (run_id, workflow_id, attempt, started_at, latency_ms,
		status_code, outcome, error, retry_after_ms, finished_at, direct) VALUES ($1, $2, 1, $3, 5, $4, $5, $6, $7, $3, true)`,
		e.in.RunID, e.workflow, now, code, outcome, fmt.Sprintf("HTTP %d", status), wait)
	require.NoError(e.t, err)
}

// A series whose first attempt the worker that released the fire sent goes on from it: the
// workflow waits as that answer asked (its Retry-After), numbers its attempts after it, and
// doubles the backoff from where it left off.
func TestHTTPDeliveryGoesOnFromTheFirstAttempt(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, answer{status: 503, body: "busy"}, answer{status: 200})
	e := newDeliveryEnv(t, rcv.srv.URL, domain.Retry{MaxAttempts: 3, InitialBackoff: schedulespec.Duration(time.Second)}, "127.0.0.1")
	e.firstAttempt(domain.AttemptRetryable, 429, 30*time.Second)
	began := e.env.Now()
	require.NoError(t, e.run())
	got := rcv.requests()
	require.Len(t, got, 2)
	require.Equal(t, "2", got[0].header.Get("Tickgate-Attempt"), "the first attempt counted")
	require.Equal(t, "3", got[1].header.Get("Tickgate-Attempt"))
	require.Len(t, e.starts, 2)
	require.GreaterOrEqual(t, e.starts[0].Sub(began), 29*time.Second, "the first answer's Retry-After, not the 1 s backoff")
	require.Equal(t, 2*time.Second, e.starts[1].Sub(e.starts[0]), "the backoff doubled from the first attempt's")
	require.Equal(t, []string{"retryable 429", "retryable 503", "succeeded 200"}, outcomes(e.attempts()))
}

// max_attempts counts the first attempt: with two, the workflow makes one.
func TestHTTPDeliveryCountsTheFirstAttemptAgainstMaxAttempts(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, answer{status: 500, body: "boom"})
	e := newDeliveryEnv(t, rcv.srv.URL, domain.Retry{MaxAttempts: 2}, "127.0.0.1")
	e.firstAttempt(domain.AttemptRetryable, 503, 0)
	msg := failure(t, e.run())
	require.Contains(t, msg, "HTTP 500 Internal Server Error: boom (gave up after 2 attempts: max_attempts)")
	require.Len(t, rcv.requests(), 1)
}

// A first attempt whose sender died mid-send (lost) is tried again; one whose 2xx was
// recorded late sends nothing more; one answered finally ends the series, sending nothing.
func TestHTTPDeliveryActsOnWhatTheFirstAttemptSays(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, answer{status: 200})
	lost := newDeliveryEnv(t, rcv.srv.URL+"/lost", domain.Retry{MaxAttempts: 3}, "127.0.0.1")
	lost.firstAttempt(domain.AttemptLost, 0, 0)
	require.NoError(t, lost.run())
	require.Equal(t, []string{"lost", "succeeded 200"}, outcomes(lost.attempts()))

	done := newDeliveryEnv(t, rcv.srv.URL+"/done", domain.Retry{MaxAttempts: 3}, "127.0.0.1")
	done.firstAttempt(domain.AttemptSucceeded, 200, 0)
	require.NoError(t, done.run())
	require.Len(t, done.attempts(), 1, "nothing sent once a 2xx was recorded for the key")

	final := newDeliveryEnv(t, rcv.srv.URL+"/final", domain.Retry{MaxAttempts: 3}, "127.0.0.1")
	final.firstAttempt(domain.AttemptFinal, 404, 0)
	require.Contains(t, failure(t, final.run()), "HTTP 404 (attempt 1; not retried)")
	require.Len(t, final.attempts(), 1)
	require.Len(t, rcv.requests(), 1, "only the lost one's retry reached the receiver")
}

// verifier is a receiver's Standard Webhooks verifier of secret (the client's, as a user's
// receiver has).
func verifier(t *testing.T, secret string) *tickgate.WebhookVerifier {
	t.Helper()
	v, err := tickgate.NewWebhookVerifier(secret)
	require.NoError(t, err)
	return v
}
