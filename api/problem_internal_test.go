package api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
)

// A command Temporal cannot take for now — the schedule workflow's task is failing and
// being retried on a loaded server, which the chaos run met when pausing — is a 503 with
// Retry-After, not a 500: nothing changed and the same request may be sent again.
func TestTemporalBusyIsA503WithRetryAfter(t *testing.T) {
	for _, err := range []error{
		serviceerror.NewWorkflowNotReady("Unable to perform workflow execution update due to Workflow Task in failed state."),
		serviceerror.NewResourceExhausted(0, "busy"),
		serviceerror.NewUnavailable("connection refused"),
	} {
		e := echo.New()
		rec := httptest.NewRecorder()
		c := e.NewContext(httptest.NewRequest(http.MethodPost, "/api/v1/schedules/s/pause", nil), rec)
		ErrorHandler(nil)(fmt.Errorf("pause schedule s: %w", err), c)
		require.Equal(t, http.StatusServiceUnavailable, rec.Code, "%T", err)
		require.Equal(t, "1", rec.Header().Get("Retry-After"))
		require.Equal(t, "application/problem+json", rec.Header().Get(echo.HeaderContentType))
	}
}

// A schedule command whose update Temporal did not answer in time — the server or the
// workflow's worker cut off by the network, as the chaos run's blackhole partition from
// Temporal did — is a 503, not a 500: the SDK wraps the call's deadline as a gRPC status
// (WorkflowUpdateServiceTimeoutOrCanceledError), which is not context.DeadlineExceeded. The
// same request may be sent again under its Idempotency-Key (the workflow knows its request
// id). Found by the chaos run's network faults: triggers answered 500 "internal error".
func TestScheduleCommandTimeoutIsA503(t *testing.T) {
	s := &Server{}
	for _, err := range []error{
		client.NewWorkflowUpdateServiceTimeoutOrCanceledError(serviceerror.NewDeadlineExceeded("context deadline exceeded")),
		fmt.Errorf("trigger schedule s: %w", client.NewWorkflowUpdateServiceTimeoutOrCanceledError(serviceerror.NewDeadlineExceeded("context deadline exceeded"))),
		fmt.Errorf("trigger schedule s: %w", serviceerror.NewDeadlineExceeded("context deadline exceeded")),
		fmt.Errorf("trigger schedule s: %w", context.DeadlineExceeded),
	} {
		e := echo.New()
		rec := httptest.NewRecorder()
		c := e.NewContext(httptest.NewRequest(http.MethodPost, "/api/v1/schedules/s/trigger", nil), rec)
		ErrorHandler(nil)(s.scheduleCommandError("s", err), c)
		require.Equal(t, http.StatusServiceUnavailable, rec.Code, "%v", err)
		require.Equal(t, "1", rec.Header().Get("Retry-After"), "%v", err)
	}
}
