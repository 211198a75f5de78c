package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/tickgate/tickgate/store"
)

// Problem is an RFC 9457 problem details body; Field names the offending request field.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	Field  string `json:"field,omitempty"`
}

func (p *Problem) Error() string {
	if p.Field != "" {
		return fmt.Sprintf("%d %s: %s", p.Status, p.Field, p.Detail)
	}
	return fmt.Sprintf("%d %s", p.Status, p.Detail)
}

// problemTypes gives each status a stable type URI and title.
var problemTitles = map[int]string{
	http.StatusBadRequest:            "invalid-request",
	http.StatusUnauthorized:          "unauthorized",
	http.StatusForbidden:             "forbidden",
	http.StatusNotFound:              "not-found",
	http.StatusMethodNotAllowed:      "method-not-allowed",
	http.StatusConflict:              "conflict",
	http.StatusPreconditionFailed:    "precondition-failed",
	http.StatusRequestEntityTooLarge: "payload-too-large",
	http.StatusUnsupportedMediaType:  "unsupported-media-type",
	http.StatusUnprocessableEntity:   "unprocessable",
	http.StatusTooManyRequests:       "too-many-requests",
	http.StatusServiceUnavailable:    "unavailable",
	http.StatusInternalServerError:   "internal",
}

// NewProblem builds a problem for status, naming field (may be empty).
func NewProblem(status int, field, format string, args ...any) *Problem {
	slug, ok := problemTitles[status]
	if !ok {
		slug = "error"
	}
	return &Problem{
		Type: "https://tickgate.dev/problems/" + slug, Title: http.StatusText(status), Status: status,
		Detail: fmt.Sprintf(format, args...), Field: field,
	}
}

// BadRequest is a 400 naming field.
func BadRequest(field, format string, args ...any) *Problem {
	return NewProblem(http.StatusBadRequest, field, format, args...)
}

// NotFound is a 404.
func NotFound(format string, args ...any) *Problem {
	return NewProblem(http.StatusNotFound, "", format, args...)
}

// Conflict is a 409.
func Conflict(field, format string, args ...any) *Problem {
	return NewProblem(http.StatusConflict, field, format, args...)
}

// temporalBusy reports whether err is Temporal refusing a call for now: an update or query
// of a workflow whose task is failing and being retried (WorkflowNotReady: the server under
// load timed it out), the server shedding load, or not reachable; or a call it did not
// answer in time (a gRPC DeadlineExceeded, which the SDK wraps for an update in
// WorkflowUpdateServiceTimeoutOrCanceledError: the server or the workflow's worker cut off
// by the network, as the chaos run's partitions from Temporal showed, when they were 500s).
func temporalBusy(err error) bool {
	var notReady *serviceerror.WorkflowNotReady
	var exhausted *serviceerror.ResourceExhausted
	var unavailable *serviceerror.Unavailable
	var deadline *serviceerror.DeadlineExceeded
	var updateTimeout *client.WorkflowUpdateServiceTimeoutOrCanceledError
	return errors.As(err, &notReady) || errors.As(err, &exhausted) || errors.As(err, &unavailable) ||
		errors.As(err, &deadline) || errors.As(err, &updateTimeout)
}

// ErrorHandler renders every error as application/problem+json: a *Problem as is, Echo's
// own errors (404 route, 405, 413 body limit) with their status, store sentinels mapped,
// an unreachable database as a 503 with Retry-After, anything else as a 500 whose detail
// hides internals.
func ErrorHandler(logf func(string, ...any)) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		var p *Problem
		var he *echo.HTTPError
		switch {
		case errors.As(err, &p):
			if p.Status == http.StatusServiceUnavailable && c.Response().Header().Get("Retry-After") == "" {
				c.Response().Header().Set("Retry-After", "1") // every 503 says when to come back
			}
		case errors.As(err, &he):
			p = NewProblem(he.Code, "", "%v", he.Message)
		case errors.Is(err, store.ErrNotFound):
			p = NotFound("%v", err)
		case errors.Is(err, store.ErrConflict):
			p = Conflict("", "%v", err)
		case errors.Is(err, store.ErrStale):
			p = NewProblem(http.StatusPreconditionFailed, "version", "%v", err)
		case temporalBusy(err):
			// Temporal cannot take the command right now (the workflow's task is being
			// retried, the server sheds load): nothing changed, and the same request may be
			// sent again shortly.
			if logf != nil {
				logf("api: %s %s: temporal busy: %v", c.Request().Method, c.Request().URL.Path, err)
			}
			c.Response().Header().Set("Retry-After", "1")
			p = NewProblem(http.StatusServiceUnavailable, "", "the workflow engine cannot take this now, retry shortly: %v", err)
		case store.IsUnavailable(err):
			// PostgreSQL restarting or unreachable: the same request may be sent again
			// shortly (an agent's claim or result, an operator's command); see IsUnavailable.
			if logf != nil {
				logf("api: %s %s: database unavailable: %v", c.Request().Method, c.Request().URL.Path, err)
			}
			c.Response().Header().Set("Retry-After", "1")
			p = NewProblem(http.StatusServiceUnavailable, "", "database unavailable, retry shortly")
		default:
			if logf != nil {
				logf("api: %s %s: %v", c.Request().Method, c.Request().URL.Path, err)
			}
			p = NewProblem(http.StatusInternalServerError, "", "internal error")
		}
		c.Response().Header().Set(echo.HeaderContentType, "application/problem+json")
		c.Response().WriteHeader(p.Status)
		if c.Request().Method != http.MethodHead {
			_ = c.JSON(p.Status, p) // header already written; JSON writes the body
		}
	}
}
