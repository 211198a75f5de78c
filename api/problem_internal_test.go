package api

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
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
