package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tickgate/tickgate/store"
)

// IdempotencyHeader is the request header that makes a POST safe to retry.
const IdempotencyHeader = "Idempotency-Key"

// ReplayedHeader marks an answer that is the stored first response to an earlier request.
const ReplayedHeader = "Idempotent-Replayed"

// IdempotencyRetention is how long a stored first response is replayed; older keys are
// pruned (at most once an hour per process, in the background of a keyed request).
const IdempotencyRetention = 24 * time.Hour

var lastPrune atomic.Int64

func (s *Server) maybePrune() {
	now := time.Now()
	last := lastPrune.Load()
	if now.Sub(time.Unix(0, last)) < time.Hour || !lastPrune.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := s.Store.PruneIdempotencyKeys(ctx, now.Add(-IdempotencyRetention)); err != nil {
			s.Logf("api: %v", err)
		}
	}()
}

// idempotency makes a POST carrying Idempotency-Key run once per (token, key, path): the
// first successful (2xx) answer is stored and returned again for the same request (an
// answer that showed a secret is stored without it, showsSecret); a
// request with the same key but another body is refused (422), and one arriving while the
// first is still running gets 409. A 4xx or 5xx answer changed nothing and is not kept, so
// bad input leaves no row behind and the client may retry (or correct) under the same key.
// A claim left by a process that died mid-request, or by one whose database connection
// broke mid-request, stays "in progress" until pruned: whether that request's own
// transaction committed is unknown, and running it again could apply a create twice.
//
// On the routes of foldedIdempotency the handler records the key itself, in the statement
// that does the request's work (keyedRequestOf); this middleware only checks the key and
// hashes the body for it.
func (s *Server) idempotency(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		kr, err := s.keyedRequest(c)
		if err != nil || kr == nil {
			if err != nil {
				return err
			}
			return next(c)
		}
		if foldedIdempotency[c.Path()] {
			c.Set(keyedRequestKey, kr)
			return next(c)
		}
		return s.runIdempotent(c, kr, next, nil)
	}
}

// foldedIdempotency lists the routes whose handler records the Idempotency-Key in its own
// statement: an agent's result (store.ResultBatcher).
var foldedIdempotency = map[string]bool{"/api/v1/agent/task-devices/:id/result": true}

// keyedRequest is a POST's Idempotency-Key, scoped to its token and path, and the hash of
// its body.
type keyedRequest struct {
	key  store.IdempotencyKey
	hash []byte
}

const keyedRequestKey = "tickgate.idempotency"

// keyedRequestOf returns the key of a request on a folded route (nil when it carries none).
func keyedRequestOf(c echo.Context) *keyedRequest {
	kr, _ := c.Get(keyedRequestKey).(*keyedRequest)
	return kr
}

// keyedRequest checks the request's Idempotency-Key and hashes its body (restoring the body
// for the handler); nil when the request carries no key or is not an authenticated POST.
func (s *Server) keyedRequest(c echo.Context) (*keyedRequest, error) {
	req := c.Request()
	key := req.Header.Get(IdempotencyHeader)
	if req.Method != http.MethodPost || key == "" {
		return nil, nil
	}
	p := PrincipalOf(c)
	if p == nil {
		return nil, nil
	}
	if len(key) > 255 {
		return nil, BadRequest(IdempotencyHeader, "at most 255 characters")
	}
	if c.Path() == "/api/v1/tokens" {
		return nil, BadRequest(IdempotencyHeader, "not accepted on POST /tokens: a token is shown once and never stored")
	}
	s.maybePrune()
	body, err := io.ReadAll(io.LimitReader(req.Body, MaxBodyBytes+1))
	if err != nil {
		return nil, BadRequest("", "read body: %v", err)
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	sum := sha256.Sum256(body)
	return &keyedRequest{key: store.IdempotencyKey{TokenID: p.TokenID, Key: key, Method: req.Method, Path: req.URL.Path}, hash: sum[:]}, nil
}

// secretAnswerKey holds, for an answer that shows a secret (showsSecret), the answer a
// replay of its request gets instead.
const secretAnswerKey = "tickgate.secret-answer"

// showsSecret marks the answer being written as one that shows a secret (a signing secret,
// shown once): it is Cache-Control: no-store, and the idempotency cache keeps replay — the
// same answer without the secret, saying it was shown once — in its place, so that a
// secret is never stored there nor shown twice.
func showsSecret(c echo.Context, replay any) {
	c.Response().Header().Set("Cache-Control", "no-store")
	b, err := json.Marshal(replay)
	if err != nil {
		b = []byte(`{}`)
	}
	c.Set(secretAnswerKey, b)
}

// replayed writes a stored first answer again.
func replayed(c echo.Context, stored *store.StoredResponse) error {
	c.Response().Header().Set(ReplayedHeader, "true")
	if stored.ContentType != "" {
		c.Response().Header().Set(echo.HeaderContentType, stored.ContentType)
	}
	c.Response().WriteHeader(stored.Status)
	_, err := c.Response().Write(stored.Body)
	return err
}

// runIdempotent runs next once for kr's key (see idempotency). A replayed key whose first
// answer was kept as data (store.StoredResponse.Answer) is rendered by replayAnswer.
func (s *Server) runIdempotent(c echo.Context, kr *keyedRequest, next echo.HandlerFunc, replayAnswer func(echo.Context, []byte) error) error {
	req := c.Request()
	k := kr.key
	ctx := req.Context()
	stored, err := s.Store.BeginIdempotent(ctx, k, kr.hash)
	switch {
	case errors.Is(err, store.ErrInFlight):
		// Worth resending later: the first request is still running.
		c.Response().Header().Set("Retry-After", "1")
		return Conflict(IdempotencyHeader, "%v", err)
	case errors.Is(err, store.ErrKeyReused):
		return NewProblem(http.StatusUnprocessableEntity, IdempotencyHeader, "%v", err)
	case err != nil:
		return err
	case stored != nil && stored.Answer != nil && replayAnswer != nil:
		c.Response().Header().Set(ReplayedHeader, "true")
		return replayAnswer(c, stored.Answer)
	case stored != nil:
		return replayed(c, stored)
	}

	rec := &recorder{ResponseWriter: c.Response().Writer}
	c.Response().Writer = rec
	handlerErr := next(c)
	if handlerErr != nil {
		c.Error(handlerErr) // render now, so the problem document is what gets stored
	}
	c.Response().Writer = rec.ResponseWriter
	// Store even when the client has gone away.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	status := c.Response().Status
	if store.IsUnavailable(handlerErr) {
		// The database went away mid-request: what the request wrote may have committed,
		// and forgetting the key would let a resend apply it a second time. The key stays
		// in progress (409) until pruned.
		s.Logf("api: %s %s: database lost mid-request, Idempotency-Key kept in progress: %v", req.Method, req.URL.Path, handlerErr)
		return nil
	}
	if status < 200 || status >= 300 {
		if err := s.Store.ForgetIdempotent(sctx, k); err != nil {
			s.Logf("api: %v", err)
		}
		return nil
	}
	body := rec.body.Bytes()
	if replay, ok := c.Get(secretAnswerKey).([]byte); ok {
		body = replay // the answer showed a secret: what is kept is the answer without it
	}
	if err := s.Store.FinishIdempotent(sctx, k, store.StoredResponse{
		Status: status, ContentType: c.Response().Header().Get(echo.HeaderContentType), Body: body,
	}); err != nil {
		s.Logf("api: %v", err)
	}
	return nil
}

// recorder copies what a handler writes.
type recorder struct {
	http.ResponseWriter
	body bytes.Buffer
}

func (r *recorder) Write(b []byte) (int, error) {
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection (a long-poll's write deadline).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
