package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// HTTPTimeouts bound how long one connection may hold the server, so that a slow or idle
// client cannot keep connections (and their goroutines) forever: a body trickled a byte at
// a time, an answer read as slowly, a kept-alive connection that never sends again.
type HTTPTimeouts struct {
	// ReadHeader bounds reading a request's line and headers.
	ReadHeader time.Duration
	// Read bounds reading a whole request, its body included (TICKGATE_API_READ_TIMEOUT).
	Read time.Duration
	// Write bounds the answer, from the end of the request's headers to its last byte
	// (TICKGATE_API_WRITE_TIMEOUT). A long-poll extends its own (extendWriteDeadline).
	Write time.Duration
	// Idle bounds a kept-alive connection's wait for its next request
	// (TICKGATE_API_IDLE_TIMEOUT).
	Idle time.Duration
}

// DefaultHTTPTimeouts: a 1 MiB body at 35 KB/s is read in time, any route but a long-poll
// answers well within a minute, and a client's keep-alive outlives its pauses between
// requests (an agent polls again at once).
var DefaultHTTPTimeouts = HTTPTimeouts{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Write: time.Minute, Idle: 2 * time.Minute}

// NewHTTPServer is the http.Server that serves h with timeouts t (a zero field takes
// DefaultHTTPTimeouts' value): the API's and the worker's metrics port both use it.
func NewHTTPServer(h http.Handler, t HTTPTimeouts) *http.Server {
	t = t.WithDefaults()
	return &http.Server{Handler: h, ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read, WriteTimeout: t.Write, IdleTimeout: t.Idle}
}

// WithDefaults is t with DefaultHTTPTimeouts' value in each zero field.
func (t HTTPTimeouts) WithDefaults() HTTPTimeouts {
	d := DefaultHTTPTimeouts
	if t.ReadHeader <= 0 {
		t.ReadHeader = d.ReadHeader
	}
	if t.Read <= 0 {
		t.Read = d.Read
	}
	if t.Write <= 0 {
		t.Write = d.Write
	}
	if t.Idle <= 0 {
		t.Idle = d.Idle
	}
	return t
}

// extendWriteDeadline lets the answer to c be written up to wait later than the server's
// write timeout allows: a long-poll that may hold its answer for wait (an agent's claim,
// the events feed) calls it before it waits, and keeps the usual bound for the writing
// itself. Without a write timeout (Timeouts.Write zero, as in tests that serve with
// httptest) there is nothing to extend.
func (s *Server) extendWriteDeadline(c echo.Context, wait time.Duration) {
	if s.Timeouts.Write <= 0 || wait <= 0 {
		return
	}
	err := http.NewResponseController(c.Response()).SetWriteDeadline(time.Now().Add(wait + s.Timeouts.Write))
	if err != nil && !errors.Is(err, http.ErrNotSupported) {
		s.Logf("api: extend the write deadline of %s %s: %v", c.Request().Method, c.Path(), err)
	}
}
