package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
)

// What a user of native Temporal Schedules writes for an http action: a schedule starting a
// workflow that runs one activity posting to the receiver, on the bench's target worker.
// The activity sends what tickgate's delivery sends a receiver to dedupe by — the tick's
// Idempotency-Key, "<schedule id>@<scheduled time>", and the same body — with the same
// attempt timeout and retry policy (an http action's defaults), through a client that keeps
// connections to the receiver as tickgate's does. It does not sign the request or record
// its attempts in PostgreSQL, which tickgate does.
const (
	nativeHTTPWorkflow = "BenchHTTPPost"
	nativeHTTPActivity = "BenchHTTPPostActivity"
)

// httpBody is the body both engines post.
var httpBody = []byte(`{"job":"bench"}`)

// httpTimeout bounds each attempt, both engines: the http action's default timeout.
const httpTimeout = 10 * time.Second

// nativePost is the activity's input: where to post, and the tick's key.
type nativePost struct {
	URL, Key string
}

// registerNativeHTTP registers the workflow and its activity on the target worker.
func registerNativeHTTP(w sdkworker.Worker) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost, transport.MaxIdleConns = 64, 256 // as tickgate's deliveries keep them
	poster := &nativePoster{client: &http.Client{Timeout: httpTimeout, Transport: transport}}
	w.RegisterWorkflowWithOptions(nativeHTTPPost, workflow.RegisterOptions{Name: nativeHTTPWorkflow})
	w.RegisterActivityWithOptions(poster.Post, activity.RegisterOptions{Name: nativeHTTPActivity})
}

// nativeHTTPPost posts once to url, retried as an http action's delivery is by default, with
// the key of the tick its schedule started it for (its TemporalScheduledById and
// TemporalScheduledStartTime search attributes).
func nativeHTTPPost(ctx workflow.Context, url string) error {
	//lint:ignore SA1019 read as native.go reads the same attributes from visibility (untyped payloads); the typed reader depends on the type metadata Temporal's scheduler sets, which no bench run has checked
	fields := workflow.GetInfo(ctx).SearchAttributes.GetIndexedFields()
	dc := converter.GetDefaultDataConverter()
	var by string
	var scheduled time.Time
	if p := fields["TemporalScheduledById"]; p == nil || dc.FromPayload(p, &by) != nil {
		return temporal.NewNonRetryableApplicationError("no TemporalScheduledById: not started by a schedule", "BenchNotScheduled", nil)
	}
	if p := fields["TemporalScheduledStartTime"]; p == nil || dc.FromPayload(p, &scheduled) != nil {
		return temporal.NewNonRetryableApplicationError("no TemporalScheduledStartTime: not started by a schedule", "BenchNotScheduled", nil)
	}
	retry, err := domain.NormalizeRetry(nil, domain.ActionHTTP)
	if err != nil {
		return err
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    httpTimeout + 5*time.Second,
		ScheduleToCloseTimeout: time.Duration(retry.MaxAge),
		RetryPolicy:            activities.WorkflowRetryPolicy(*retry),
	})
	key := fmt.Sprintf("%s@%s", by, scheduled.UTC().Format(time.RFC3339Nano))
	return workflow.ExecuteActivity(actx, nativeHTTPActivity, nativePost{URL: url, Key: key}).Get(ctx, nil)
}

type nativePoster struct {
	client *http.Client
}

// Post makes one attempt; any answer but a 2xx is an error, tried again.
func (p *nativePoster) Post(ctx context.Context, in nativePost) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.URL, bytes.NewReader(httpBody))
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), "BenchBadURL", nil)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(domain.IdempotencyKeyHeader, in.Key)
	resp, err := p.client.Do(req)
	if err != nil {
		return fmt.Errorf("post %s: %w", in.URL, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("post %s: HTTP %d", in.URL, resp.StatusCode)
	}
	return nil
}

// runNativeHTTPBurst runs the http burst's specs as native Temporal Schedules (overlap
// ALLOW_ALL) starting nativeHTTPPost on the target worker, posting to the receiver's
// native path; a fire's lateness is its request's arrival at the receiver − its scheduled
// time, as for tickgate's. Bursts are paced by the started workflows closing (a visibility
// count, once a second) or -drain-timeout. The schedules are deleted after.
func runNativeHTTPBurst(ctx context.Context, e *env, rcv *receiver) (httpBurstResult, error) {
	n := *flagHTTP
	res := httpBurstResult{burstResult: burstResult{schedules: n}}
	if err := nativeCron(); err != nil {
		return res, err
	}
	_, compiled, err := burstSpec()
	if err != nil {
		return res, err
	}
	url := rcv.url + receiverPathNative
	ids, took, remove, err := createNativeSchedules(ctx, e, "nhttp", n, func(id string) *client.ScheduleWorkflowAction {
		return &client.ScheduleWorkflowAction{ID: id, Workflow: nativeHTTPWorkflow, TaskQueue: targetTaskQueue, Args: []any{url}}
	})
	defer remove()
	if err != nil {
		return res, err
	}
	res.created = took
	ticks := planBursts("native http", compiled, n, took, *flagHTTPWarmup+*flagHTTPBursts)
	if _, _, err := res.waitBursts(ctx, e, "native http", "closed", ticks, *flagHTTPWarmup, n, time.Second,
		func(ctx context.Context, tick time.Time) (int, error) {
			return countNative(ctx, e.tc, nativeHTTPWorkflow, tick, true)
		}); err != nil {
		return res, err
	}
	for _, tick := range res.ticks {
		if got := rcv.received(receiverPathNative, tick); got < n {
			log.Printf("native http: burst %s: %d/%d requests received", tick.Format(time.TimeOnly), got, n)
		}
	}
	res.late = rcv.lateness(receiverPathNative, ids, res.ticks)
	res.tallyBursts()
	res.duplicates, res.unkeyed = rcv.duplicates(receiverPathNative)
	return res, nil
}
