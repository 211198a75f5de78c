package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
)

// HTTPDeliveryWorkflowType is the registered name of HTTPDeliveryWorkflow.
const HTTPDeliveryWorkflowType = activities.HTTPDeliveryWorkflowType

// deliveryMargin is how much longer than its request's timeout an attempt may take before
// Temporal gives it up (a worker that died mid-attempt): the request itself is bounded by
// the action's timeout.
const deliveryMargin = 10 * time.Second

var deliveryActs *activities.HTTPDeliveries

// HTTPDeliveryWorkflow is the run of an http action (docs/schedules.md "HTTP action"): it
// sends the request — one DeliverHTTP activity, retried under the schedule's retry policy
// by Temporal — and succeeds when an attempt got a 2xx. It runs under the run's workflow
// id, so a tick is delivered by one series only (S1); a redrive is a series of its own.
// When the series ends without a success, it fails with the reason the run records: the
// last attempt's answer and why no attempt followed (a final answer, max_attempts,
// max_age).
//
// Its input names the run and is trusted for nothing else: the delivery is loaded by the
// run's id (LoadHTTPDelivery), which ends it unless the run belongs to the schedule named
// and to this workflow, and each attempt reads the action and its secrets again by the run.
func HTTPDeliveryWorkflow(ctx workflow.Context, in activities.HTTPDelivery) error {
	pinChanges(ctx, HTTPDeliveryWorkflowType)
	if workflow.GetVersion(ctx, httpDeliveryLoadsRunChange, workflow.DefaultVersion, 1) == 1 {
		loaded, err := loadDelivery(ctx, in)
		if err != nil {
			return err
		}
		in = loaded
	}
	if workflow.GetVersion(ctx, httpDeliveryAfterFirstAttemptChange, workflow.DefaultVersion, 1) == 1 && in.First != nil {
		branchTaken(ctx, httpDeliveryAfterFirstAttemptChange)
		return deliverAfterFirstAttempts(ctx, in)
	}
	r := in.Retry
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    time.Duration(in.Action.Timeout) + deliveryMargin,
		ScheduleToCloseTimeout: time.Duration(r.MaxAge),
		RetryPolicy:            activities.WorkflowRetryPolicy(r),
		Summary:                in.Action.Method + " " + in.Action.URL,
	})
	began := workflow.Now(ctx)
	err := workflow.ExecuteActivity(actx, deliveryActs.DeliverHTTP, in).Get(ctx, nil)
	if err == nil || temporal.IsCanceledError(err) {
		return err
	}
	return temporal.NewNonRetryableApplicationError(deliveryFailure(err, r, workflow.Now(ctx).Sub(began)), activities.ErrHTTPDeliveryFailed, nil)
}

// httpDeliveryLoadsRunChange: a delivery loads what it sends by its run's id instead of
// taking it from its input (workflows.Changes).
const httpDeliveryLoadsRunChange = "http-delivery-loads-run"

// loadDelivery reads the delivery in names (activities.LoadHTTPDelivery). A run that does
// not belong to the schedule named, or to this workflow, fails the delivery at once.
func loadDelivery(ctx workflow.Context, in activities.HTTPDelivery) (activities.HTTPDelivery, error) {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second, ScheduleToCloseTimeout: waitOutOutages,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 10 * time.Second},
	})
	var loaded activities.HTTPDelivery
	err := workflow.ExecuteLocalActivity(lctx, deliveryActs.LoadHTTPDelivery, in).Get(ctx, &loaded)
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.NonRetryable() {
		return loaded, temporal.NewNonRetryableApplicationError(app.Message(), activities.ErrHTTPDeliveryFailed, nil)
	}
	return loaded, err
}

// httpDeliveryAfterFirstAttemptChange: a delivery whose series began with a first attempt
// sent by the worker that released the fire counts it (workflows.Changes).
const httpDeliveryAfterFirstAttemptChange = "http-delivery-after-first-attempt"

// deliverAfterFirstAttempts goes on with a series whose first attempt the worker that
// released the fire sent (in.First): a 2xx recorded for it meanwhile ends the delivery a
// success, and a final answer a failure, with nothing sent; otherwise it waits as the last
// answer asked (its Retry-After, or initial_backoff), and makes the attempts the retry policy
// has left — max_attempts counting those made, max_age counted from the first, the backoff
// going on from where they left it.
func deliverAfterFirstAttempts(ctx workflow.Context, in activities.HTTPDelivery) error {
	r, first := in.Retry, *in.First
	switch {
	case first.Delivered:
		return nil
	case first.Final:
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s (attempt %d; not retried)", first.Last, first.Made),
			activities.ErrHTTPDeliveryFailed, nil)
	case first.Made >= r.MaxAttempts:
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s (gave up after %d attempts: max_attempts)", first.Last, first.Made),
			activities.ErrHTTPDeliveryFailed, nil)
	}
	if wait := first.NextAt.Sub(workflow.Now(ctx)); wait > 0 {
		if err := workflow.Sleep(ctx, wait); err != nil {
			return err // canceled (overlap cancel_other)
		}
	}
	took := workflow.Now(ctx).Sub(first.Began)
	left := time.Duration(r.MaxAge) - took
	if left <= 0 {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s (gave up after %d attempts in %s: max_age %s)", first.Last, first.Made,
			took.Round(time.Millisecond), time.Duration(r.MaxAge)), activities.ErrHTTPDeliveryFailed, nil)
	}
	policy := activities.WorkflowRetryPolicy(r)
	policy.MaximumAttempts = int32(r.MaxAttempts - first.Made) // #nosec G115 -- max_attempts is bounded by domain.NormalizeRetry and first.Made is below it
	// The wait before attempt n+1 is initial_backoff·2^(n−1): the first of these followed the
	// sleep above, the next ones go on doubling from there.
	next := time.Duration(r.InitialBackoff)
	for i := 0; i < first.Made && next < time.Duration(r.MaxBackoff); i++ {
		next *= 2
	}
	policy.InitialInterval = min(next, time.Duration(r.MaxBackoff))
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    time.Duration(in.Action.Timeout) + deliveryMargin,
		ScheduleToCloseTimeout: left,
		RetryPolicy:            policy,
		Summary:                in.Action.Method + " " + in.Action.URL,
	})
	err := workflow.ExecuteActivity(actx, deliveryActs.DeliverHTTP, in).Get(ctx, nil)
	if err == nil || temporal.IsCanceledError(err) {
		return err
	}
	return temporal.NewNonRetryableApplicationError(deliveryFailure(err, r, workflow.Now(ctx).Sub(first.Began)), activities.ErrHTTPDeliveryFailed, nil)
}

// deliveryFailure says why a delivery's series ended without a success, after took: the
// last attempt's answer, and what stopped the retries.
func deliveryFailure(err error, r domain.Retry, took time.Duration) string {
	var last *temporal.ApplicationError
	var failure activities.HTTPAttemptFailure
	if !errors.As(err, &last) {
		// No attempt answered in time: the one in flight when max_age ran out.
		return fmt.Sprintf("gave up at max_age (%s): the attempt in flight did not finish (%v)", time.Duration(r.MaxAge), err)
	}
	if last.HasDetails() {
		_ = last.Details(&failure)
	}
	switch {
	case last.NonRetryable():
		return fmt.Sprintf("%s (attempt %d; not retried)", last.Message(), failure.Attempt)
	case failure.Attempt >= r.MaxAttempts:
		return fmt.Sprintf("%s (gave up after %d attempts: max_attempts)", last.Message(), failure.Attempt)
	}
	return fmt.Sprintf("%s (gave up after %d attempts in %s: max_age %s)", last.Message(), failure.Attempt,
		took.Round(time.Millisecond), time.Duration(r.MaxAge))
}
