package activities

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/outbound"
	"github.com/tickgate/tickgate/store"
)

// The HTTP action (docs/schedules.md "HTTP action"). A run of an http action is a workflow
// run like a workflow action's — armed with a start delay, watched, counted by the overlap
// policies, unique by its workflow id — whose target is tickgate's own HTTPDeliveryWorkflow:
// one DeliverHTTP activity, retried under the schedule's retry policy.

// HTTPDeliveryWorkflowType is the registered name of the delivery workflow
// (workflows.HTTPDeliveryWorkflow), which the starts here name.
const HTTPDeliveryWorkflowType = "HTTPDeliveryWorkflow"

// Application error types of a delivery.
const (
	// ErrHTTPRetryable: an attempt the retry policy tries again (408, 429, 5xx, no answer).
	ErrHTTPRetryable = "HTTPRetryable"
	// ErrHTTPFinal: an attempt that ends the series (another status, a redirect, an address
	// the outbound rule refuses, a schedule gone).
	ErrHTTPFinal = "HTTPFinal"
	// ErrHTTPDeliveryFailed: the delivery workflow's failure, whose message is the run's
	// error.
	ErrHTTPDeliveryFailed = "HTTPDeliveryFailed"
)

// responseStartBytes is how much of an answer's body an attempt records.
const responseStartBytes = 512

// HTTPDelivery is one run of an http action as its delivery workflow acts on it. The
// workflow's input names the run only — RunID, ScheduleID and Schedule — and is trusted for
// nothing: the workflow loads the rest by the run's id (LoadHTTPDelivery), which checks that
// the run belongs to the schedule named and to the workflow delivering it, and each attempt
// reads the action, its header values and the signing secret again by the run's id
// (DeliverHTTP). Histories recorded before that change carry the whole delivery in their
// input, and replay so.
type HTTPDelivery struct {
	RunID       int64
	ScheduleID  int64
	Schedule    string
	Key         string    `json:",omitempty"` // the tick's idempotency key, sent as Idempotency-Key and webhook-id
	ScheduledAt time.Time `json:",omitzero"`
	Redrive     int       `json:",omitempty"` // 0: the run's first series
	// Action is the schedule's action, its headers by name only.
	Action domain.Action `json:",omitzero"`
	Retry  domain.Retry  `json:",omitzero"`
	// First is what the series' first attempt did, sent by the worker that released the
	// fire before the delivery workflow started (nil: none; the workflow makes every
	// attempt). Loaded by LoadHTTPDelivery; histories recorded before it carry none.
	First *FirstAttempts `json:",omitempty"`
}

// FirstAttempts are the attempts of a series made before its delivery workflow, by the
// worker that released the fire: the workflow counts them against max_attempts and max_age
// and waits as their last answer asked before its own first attempt.
type FirstAttempts struct {
	Made  int
	Began time.Time // when the first of them was sent: the series' start, for max_age
	// NextAt is when the next attempt may start: the last one's end, plus its Retry-After
	// or else initial_backoff.
	NextAt time.Time
	// Delivered: a 2xx is recorded for the run's key (a sender the sweep took for dead
	// recorded it late): nothing more is sent. Final: the last answer ends the series.
	Delivered bool `json:",omitempty"`
	Final     bool `json:",omitempty"`
	// Last is the last attempt's answer, as a run's error tells it.
	Last string
}

// HTTPAttemptFailure is the detail of a failed attempt's error, which the delivery
// workflow reads to say why its series ended.
type HTTPAttemptFailure struct {
	Attempt    int
	StatusCode int `json:",omitempty"`
}

// HTTPDelivered is a successful attempt.
type HTTPDelivered struct {
	Attempt    int
	StatusCode int
}

// HTTPDeliveries sends the requests of http actions.
type HTTPDeliveries struct {
	Store *store.Store
	// Outbound is the rule every request obeys, checked on the URL and on each address
	// dialled after DNS resolution (TICKGATE_HTTP_ALLOW).
	Outbound outbound.Rule
	// Now is the clock of the signatures' timestamps (nil: time.Now).
	Now func() time.Time
	// Limits are the process's limits per destination host, shared by every delivery it
	// sends (nil: a limiter of its own, with the defaults).
	Limits *HostLimiter

	clients     sync.Map // time.Duration → *http.Client, one per timeout
	limiterOnce sync.Once
}

// client is the HTTP client of requests with this timeout: the outbound rule's, never
// following a redirect (the answer is the receiver's; a POST redirected would change
// method, and its signature and key would reach another receiver).
func (d *HTTPDeliveries) client(timeout time.Duration) *http.Client {
	if c, ok := d.clients.Load(timeout); ok {
		return c.(*http.Client)
	}
	// A burst of deliveries to one receiver shares its connections: as many as it may have
	// requests in flight by default.
	c := d.Outbound.NewClient(outbound.Options{Timeout: timeout, MaxIdleConnsPerHost: domain.DefaultHostMaxInFlight})
	actual, _ := d.clients.LoadOrStore(timeout, c)
	return actual.(*http.Client)
}

func (d *HTTPDeliveries) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// LoadHTTPDelivery reads, by the run's id, the delivery a workflow's input names: the run
// must belong to the schedule the input names (by id and by name) and to the workflow that
// asks, and the schedule's action must be an http one. Anything else ends the delivery
// (ErrHTTPFinal) before a request is made: an input another user of the namespace forged
// gets nothing signed.
func (d *HTTPDeliveries) LoadHTTPDelivery(ctx context.Context, ref HTTPDelivery) (HTTPDelivery, error) {
	t, err := d.target(ctx, ref)
	if err != nil {
		return HTTPDelivery{}, err
	}
	retry, err := domain.NormalizeRetry(t.Retry, domain.ActionHTTP)
	if err != nil {
		return HTTPDelivery{}, d.final(0, 0, "retry: "+err.Error())
	}
	return HTTPDelivery{
		RunID: t.RunID, ScheduleID: t.ScheduleID, Schedule: t.Schedule, Key: t.Key, ScheduledAt: t.ScheduledAt,
		Redrive: t.Redrive, Action: t.Action, Retry: *retry, First: firstAttemptsOf(t, *retry),
	}, nil
}

// firstAttemptsOf is what the direct attempts of the run's series did (nil: none).
func firstAttemptsOf(t store.HTTPDeliveryTarget, r domain.Retry) *FirstAttempts {
	d := t.Direct
	if d == nil {
		return nil
	}
	wait := time.Duration(r.InitialBackoff)
	if d.RetryAfter > 0 {
		wait = d.RetryAfter // the receiver's word, whatever the backoff would have been
	}
	end := d.Finished
	if end.IsZero() {
		end = d.Began
	}
	last := d.Error
	if d.ResponseStart != "" {
		last += ": " + oneLine(d.ResponseStart, 200)
	}
	return &FirstAttempts{
		Made: d.Made, Began: d.Began, NextAt: end.Add(wait), Last: last,
		Delivered: t.Delivered, Final: d.Outcome == domain.AttemptFinal,
	}
}

// target reads what a delivery of the run in names sends, and checks that it belongs
// together (LoadHTTPDelivery).
func (d *HTTPDeliveries) target(ctx context.Context, in HTTPDelivery) (store.HTTPDeliveryTarget, error) {
	t, err := d.Store.HTTPDeliveryOf(ctx, in.RunID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return t, d.final(0, 0, fmt.Sprintf("run %d does not exist (its schedule was deleted)", in.RunID))
	case err != nil:
		return t, err // the database: tried again, nothing was sent
	case t.ScheduleID != in.ScheduleID || t.Schedule != in.Schedule:
		return t, d.final(0, 0, fmt.Sprintf("run %d belongs to schedule %q, not to %q (%d): not delivered", in.RunID, t.Schedule, in.Schedule, in.ScheduleID))
	case t.WorkflowID != activity.GetInfo(ctx).WorkflowExecution.ID:
		return t, d.final(0, 0, fmt.Sprintf("run %d is delivered by %s, not by %s: not delivered", in.RunID, t.WorkflowID, activity.GetInfo(ctx).WorkflowExecution.ID))
	case t.Action.Kind != domain.ActionHTTP:
		return t, d.final(0, 0, fmt.Sprintf("schedule %q has a %s action now, not an http one", t.Schedule, t.Action.Kind))
	case len(t.Secrets) == 0:
		return t, d.final(0, 0, fmt.Sprintf("schedule %q has no signing secret (rotate it: POST /schedules/{name}/secret)", t.Schedule))
	case t.Status != domain.RunRunning:
		// Stopped or decided meanwhile (a first attempt stopped by an overlap policy as its
		// delivery was handed over): nothing more is sent.
		return t, d.final(0, 0, fmt.Sprintf("run %d is %s: not delivered", in.RunID, t.Status))
	}
	return t, nil
}

// DeliverHTTP makes one attempt of a run's request: the action, its header values and the
// signing secrets read again by the run's id (never from the input, which names the run),
// signed the Standard Webhooks way with the tick's key as webhook-id and Idempotency-Key,
// sent through the outbound rule. A 2xx is a success; 408, 429, 5xx and no answer are
// retryable (a Retry-After, in seconds or as an HTTP date, sets the wait before the next
// attempt); any other answer, and an address the rule refuses, ends the series. Each attempt
// is recorded (schedule_run_attempts), once.
//
// A series that began with a first attempt the worker which released the fire sent
// (in.First) counts it: this attempt's number follows it. Nothing is sent once a 2xx was
// recorded for the run's key. Each attempt waits its turn under its host's limits
// (HostLimiter) within its own time.
func (d *HTTPDeliveries) DeliverHTTP(ctx context.Context, in HTTPDelivery) (HTTPDelivered, error) {
	info := activity.GetInfo(ctx)
	attempt := int(info.Attempt)
	if in.First != nil {
		attempt += in.First.Made
	}
	t, err := d.target(ctx, in)
	if err != nil {
		var app *temporal.ApplicationError
		if errors.As(err, &app) {
			return HTTPDelivered{}, d.final(attempt, 0, app.Message())
		}
		return HTTPDelivered{}, err
	}
	if t.Delivered {
		// A 2xx is recorded for this key (an attempt whose answer came in late): tickgate
		// never sends it again.
		return HTTPDelivered{Attempt: attempt}, nil
	}
	rec := store.RunAttempt{RunID: t.RunID, WorkflowID: info.WorkflowExecution.ID, Attempt: int32(attempt), Redrive: int32(t.Redrive)} // #nosec G115 -- Temporal's attempt is an int32 and a run's redrives are few
	// The turn under the host's limits is waited for within the activity's time, leaving
	// the request its own timeout.
	wctx := ctx
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		wctx, cancel = context.WithDeadline(ctx, deadline.Add(-time.Duration(t.Action.Timeout)-time.Second))
		defer cancel()
	}
	host := t.Action.Host()
	slot, err := d.limiter().Acquire(wctx, host, d.limiter().LimitOf(host, t.Action.Limits))
	if err != nil {
		if ctx.Err() != nil {
			return HTTPDelivered{}, ctx.Err()
		}
		rec.StartedAt = d.now()
		return HTTPDelivered{}, d.finish(ctx, rec, 0, domain.AttemptRetryable, "not sent: its host's limits gave it no turn in time ("+host+")", "", 0)
	}
	rec.StartedAt = d.now()
	if err := d.Store.StartAttempt(ctx, rec); err != nil {
		slot.Release()
		if errors.Is(err, store.ErrNotFound) {
			return HTTPDelivered{}, d.final(attempt, 0, fmt.Sprintf("run %d does not exist (its schedule was deleted)", t.RunID))
		}
		return HTTPDelivered{}, err // the database: tried again, nothing was sent
	}
	res := d.attempt(ctx, t, attempt, rec.StartedAt, slot)
	rec.LatencyMs = res.Latency.Milliseconds()
	if res.Canceled {
		return HTTPDelivered{}, ctx.Err() // cancelled (overlap cancel_other) or timed out: Temporal decides
	}
	if res.Outcome == domain.AttemptSucceeded {
		return HTTPDelivered{Attempt: attempt, StatusCode: res.StatusCode}, d.finish(ctx, rec, res.StatusCode, res.Outcome, "", res.ResponseStart, 0)
	}
	return HTTPDelivered{}, d.finish(ctx, rec, res.StatusCode, res.Outcome, res.What, res.ResponseStart, res.RetryAfter)
}

// attemptResult is what one request of a delivery got.
type attemptResult struct {
	StartedAt  time.Time
	Latency    time.Duration
	StatusCode int    // 0: no answer
	Outcome    string // domain.AttemptSucceeded, AttemptRetryable or AttemptFinal
	// What the answer was, in words (none for a success), and the start of its body.
	What, ResponseStart string
	RetryAfter          time.Duration
	// Canceled: ctx ended before an answer (its outcome is not the receiver's).
	Canceled bool
}

// attempt sends one attempt of t's request, holding slot (released once the answer came):
// a 2xx is a success; 408, 429, 5xx and no answer are retryable (a Retry-After, in seconds
// or as an HTTP date, sets the wait before the next attempt — and, on a 429 or 503, holds
// every request to the host until then); any other answer, and an address the outbound rule
// refuses, is final.
func (d *HTTPDeliveries) attempt(ctx context.Context, t store.HTTPDeliveryTarget, attempt int, sentAt time.Time, slot *HostSlot) attemptResult {
	defer slot.Release()
	res := attemptResult{StartedAt: sentAt}
	req, err := DeliveryRequest(ctx, t, attempt, res.StartedAt)
	if err != nil {
		res.Outcome, res.What = domain.AttemptFinal, err.Error()
		return res
	}
	// The outbound rule is checked on the address each connection is made to, after DNS
	// resolution: a name (localhost among them) that resolves to an address it refuses is
	// refused here, whatever the URL looked like when the schedule was created.
	began := time.Now()
	resp, err := d.client(time.Duration(t.Action.Timeout)).Do(req)
	res.Latency = time.Since(began)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			res.Canceled, res.Outcome, res.What = true, domain.AttemptRetryable, "no answer: "+ctx.Err().Error()
		case errors.Is(err, outbound.ErrRefused):
			res.Outcome, res.What = domain.AttemptFinal, "action.url: "+outbound.Reason(err)
		default:
			res.Outcome, res.What = domain.AttemptRetryable, "no answer: "+err.Error()
		}
		return res
	}
	start, _ := io.ReadAll(io.LimitReader(resp.Body, responseStartBytes))
	_, _ = io.Copy(io.Discard, resp.Body) // bounded by the client
	_ = resp.Body.Close()
	code := resp.StatusCode
	res.StatusCode, res.ResponseStart = code, textOf(start)
	res.What = fmt.Sprintf("HTTP %d %s", code, http.StatusText(code))
	switch {
	case code >= 200 && code <= 299:
		res.Outcome, res.What = domain.AttemptSucceeded, ""
	case domain.RetryableHTTPStatus(code):
		res.Outcome = domain.AttemptRetryable
		res.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), d.now())
		if SlowsHost(code, res.RetryAfter) {
			d.limiter().SlowDown(t.Action.Host(), code, res.RetryAfter)
		}
	case code >= 300 && code <= 399:
		res.Outcome = domain.AttemptFinal
		res.What += " (a redirect, which is not followed: give the final URL)"
	default:
		res.Outcome = domain.AttemptFinal
	}
	return res
}

// limiter is the process's host limiter (one of its own when none was given).
func (d *HTTPDeliveries) limiter() *HostLimiter {
	d.limiterOnce.Do(func() {
		if d.Limits == nil {
			d.Limits = &HostLimiter{}
		}
	})
	return d.Limits
}

// finish records the attempt and answers its outcome: nil for a success, else the error
// that tells Temporal whether (and when) to try again.
func (d *HTTPDeliveries) finish(ctx context.Context, rec store.RunAttempt, code int, outcome, what, start string, wait time.Duration) error {
	rec.Outcome, rec.Error, rec.ResponseStart = outcome, what, start
	if code != 0 {
		c := int32(code) // #nosec G115 -- an HTTP status code, three digits
		rec.StatusCode = &c
	}
	if wait > 0 {
		ms := wait.Milliseconds()
		rec.RetryAfterMs = &ms
	}
	// Bounded, and within the attempt's own deadline: a database cut off (a partition drops
	// the statement, no error comes) must not hold the answer past the attempt's
	// start-to-close timeout, where Temporal would count the attempt as timed out — a
	// delivered request sent again, and at max_attempts a run FAILED whose request was
	// delivered (found by the chaos run's blackhole partition from PostgreSQL).
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), attemptRecordBudget(ctx))
	defer cancel()
	if err := d.Store.RecordAttempt(rctx, rec); err != nil {
		// The request was sent (or refused) all the same: its outcome stands, and a
		// database that failed here must not make a delivered request be sent again.
		slog.Warn("record an http attempt", "run", rec.RunID, "attempt", rec.Attempt, "error", err)
	}
	if outcome == domain.AttemptSucceeded {
		return nil
	}
	msg := what
	if start != "" {
		msg += ": " + oneLine(start, 200)
	}
	return temporal.NewApplicationErrorWithOptions(msg, errTypeOf(outcome), temporal.ApplicationErrorOptions{
		NonRetryable:   outcome == domain.AttemptFinal,
		NextRetryDelay: wait,
		Details:        []any{HTTPAttemptFailure{Attempt: int(rec.Attempt), StatusCode: code}},
	})
}

// maxAttemptRecord bounds the record of an attempt's outcome.
const maxAttemptRecord = 5 * time.Second

// attemptRecordBudget is how long the record of an attempt may take: maxAttemptRecord, or
// less so that the answer reaches Temporal a second before the attempt's deadline.
func attemptRecordBudget(ctx context.Context) time.Duration {
	budget := maxAttemptRecord
	if deadline, ok := ctx.Deadline(); ok {
		budget = min(budget, max(time.Until(deadline)-time.Second, 100*time.Millisecond))
	}
	return budget
}

// final ends the series before anything was sent.
func (d *HTTPDeliveries) final(attempt, code int, msg string) error {
	return temporal.NewApplicationErrorWithOptions(msg, ErrHTTPFinal, temporal.ApplicationErrorOptions{
		NonRetryable: true, Details: []any{HTTPAttemptFailure{Attempt: attempt, StatusCode: code}},
	})
}

func errTypeOf(outcome string) string {
	if outcome == domain.AttemptFinal {
		return ErrHTTPFinal
	}
	return ErrHTTPRetryable
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date (0: none, or in the past).
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(min(s, int64(domain.MaxRetryMaxAge/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), domain.MaxRetryMaxAge)
	}
	return 0
}

// textOf is the start of an answer's body as text (bytes that are not UTF-8 replaced).
func textOf(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// oneLine shortens s to at most n bytes on one line, for an error message.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}

// RunStart is the start of a run of the schedule's action: a workflow action's target, or
// an http action's delivery (StartRunWorkflow fills in its workflow and input). The caller
// sets the run's WorkflowID, RunID and StartAt.
func RunStart(schedule string, act domain.Action, retry *domain.Retry) StartRun {
	s := StartRun{Schedule: schedule, Retry: retry}
	if act.Kind == domain.ActionHTTP {
		a := act
		s.HTTP = &a
		return s
	}
	s.WorkflowType, s.TaskQueue, s.Input = act.WorkflowType, act.TaskQueue, act.Input
	return s
}

// httpDelivery is the delivery workflow's input for the run of an http action r starts:
// the run, by id, and its schedule. The workflow reads everything else by the run's id
// (LoadHTTPDelivery).
func (a *ScheduleActivities) httpDelivery(ctx context.Context, r StartRun) (HTTPDelivery, error) {
	if r.RunID == 0 {
		return HTTPDelivery{}, temporal.NewNonRetryableApplicationError("an http action's start names no run", "BadInput", nil)
	}
	run, err := a.Store.GetRunByID(ctx, r.RunID)
	if err != nil {
		return HTTPDelivery{}, fmt.Errorf("the run of %s: %w", r.WorkflowID, err)
	}
	if !r.handedOver {
		if run.Status != domain.RunRunning {
			return HTTPDelivery{}, errNothingToStart
		}
		queued, err := a.Store.FirstAttemptQueued(ctx, run.ID)
		if err != nil {
			return HTTPDelivery{}, err
		}
		if queued {
			return HTTPDelivery{}, errNothingToStart
		}
	}
	return HTTPDelivery{RunID: run.ID, ScheduleID: run.ScheduleID, Schedule: r.Schedule}, nil
}

// errNothingToStart: the run's delivery is not to be started (see StartRunWorkflow).
var errNothingToStart = errors.New("nothing to start")

// StartHandedOver starts the delivery workflow of a run whose first attempt the sender
// holds and hands over (it retries the attempt, counting it).
func (a *ScheduleActivities) StartHandedOver(ctx context.Context, r StartRun) (string, error) {
	r.handedOver = true
	return a.StartRunWorkflow(ctx, r)
}

// WorkflowRetryPolicy is the Temporal retry policy of a schedule's retry policy.
func WorkflowRetryPolicy(r domain.Retry) *temporal.RetryPolicy {
	return &temporal.RetryPolicy{
		InitialInterval: time.Duration(r.InitialBackoff), BackoffCoefficient: domain.RetryBackoffCoefficient,
		MaximumInterval: time.Duration(r.MaxBackoff), MaximumAttempts: int32(r.MaxAttempts), // #nosec G115 -- domain.NormalizeRetry bounds max_attempts to 1..MaxRetryAttempts
	}
}
