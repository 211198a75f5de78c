package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/outbound"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/store"
)

// The HTTP action (docs/schedules.md "HTTP action"): its signing secret, shown once at
// create and at each rotation; its runs' delivery attempts and redrives; the dead letter.

// registerHTTPAction mounts the HTTP action's own routes.
func (s *Server) registerHTTPAction(g *echo.Group) {
	g.POST("/schedules/:name/secret", s.rotateScheduleSecret)
	g.POST("/runs/:id/redrive", s.redriveRun)
	g.POST("/runs/redrive", s.redriveRuns)
}

// CreatedScheduleView answers a create: the schedule, and for an http action its signing
// secret, shown this once. The same request replayed by its Idempotency-Key answers the
// schedule without the secret, and says so in SigningSecretNote.
type CreatedScheduleView struct {
	ScheduleView
	SigningSecret     string `json:"signing_secret,omitempty"`
	SigningSecretNote string `json:"signing_secret_note,omitempty"`
}

// SecretView answers a rotation: the new signing secret, shown this once (a replay of the
// request says so in SigningSecretNote instead), and until when the old one signs too.
type SecretView struct {
	Name               string     `json:"name"`
	SigningSecret      string     `json:"signing_secret,omitempty"`
	SigningSecretNote  string     `json:"signing_secret_note,omitempty"`
	RotatedAt          time.Time  `json:"rotated_at"`
	PreviousValidUntil *time.Time `json:"previous_valid_until"`
}

// RotateSecretRequest is the (optional) body of POST /schedules/{name}/secret.
type RotateSecretRequest struct {
	// Grace keeps the old secret signing, beside the new one, for this long (0: it stops
	// at once), so that receivers can move to the new one without refusing a request.
	Grace schedulespec.Duration `json:"grace,omitempty"`
}

// MaxSecretGrace is the longest grace period of a rotation.
const MaxSecretGrace = 7 * 24 * time.Hour

// secretShownOnce is what a replayed answer says in place of the secret it showed.
const secretShownOnce = "the signing secret was shown once, in the first answer to this request, and is not kept: " +
	"rotate it (POST /schedules/{name}/secret) if it was lost"

// AttemptView is one delivery attempt of an http action's run.
type AttemptView struct {
	Attempt int `json:"attempt"`
	// Redrive is the series it belongs to: 0 the run's first, n its redrive n.
	Redrive    int       `json:"redrive"`
	WorkflowID string    `json:"workflow_id"`
	StartedAt  time.Time `json:"started_at"`
	// LatencyMs is how long the answer's headers took (or the error).
	LatencyMs  int64 `json:"latency_ms"`
	StatusCode *int  `json:"status_code"`
	// Outcome: sending (recorded before it was sent, its answer not yet recorded), succeeded,
	// retryable (tried again if max_attempts and max_age allow), final, or lost (its sender
	// stopped before recording the answer).
	Outcome    string     `json:"outcome"`
	FinishedAt *time.Time `json:"finished_at"`
	// Direct: sent by the worker that released the fire (a first attempt), not by the run's
	// delivery workflow.
	Direct        bool   `json:"direct"`
	Error         string `json:"error,omitempty"`
	ResponseStart string `json:"response_start,omitempty"`
	RetryAfterMs  *int64 `json:"retry_after_ms,omitempty"`
}

// RedriveView is one redrive of a run, with the failure it answered.
type RedriveView struct {
	N                  int       `json:"n"`
	WorkflowID         string    `json:"workflow_id"`
	PreviousWorkflowID string    `json:"previous_workflow_id"`
	PreviousError      string    `json:"previous_error"`
	FailedAt           time.Time `json:"failed_at"`
	RequestedAt        time.Time `json:"requested_at"`
}

// newSigningSecret is a fresh signing secret, the Standard Webhooks way: whsec_ and the
// base64 of 32 random bytes.
func newSigningSecret() string {
	b := make([]byte, domain.NewSigningKeyBytes)
	_, _ = rand.Read(b)
	return domain.SigningSecret(b)
}

// headerValues are the values of an http action's own headers after a create or an update:
// those the action gives (headers), and for each name it lists in header_names without a
// value, the value stored (stored: nil for a create, which has none). A name with no value
// either way is a 400 naming it.
func headerValues(act domain.Action, stored map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for i, name := range act.HeaderNames {
		if _, given := act.Headers[name]; given {
			continue
		}
		v, ok := stored[name]
		if !ok {
			if stored == nil {
				return nil, BadRequest(fmt.Sprintf("action.header_names[%d]", i), "%q has no stored value to keep: a create gives each header's value in action.headers", name)
			}
			return nil, BadRequest(fmt.Sprintf("action.header_names[%d]", i), "%q has no stored value to keep: give its value in action.headers", name)
		}
		out[name] = v
	}
	for name, v := range act.Headers {
		out[name] = v
	}
	return out, nil
}

// headerValuesJSON is the values as the store keeps them (nil: none).
func headerValuesJSON(values map[string]string) []byte {
	if len(values) == 0 {
		return nil
	}
	b, _ := json.Marshal(values)
	return b
}

// validateRetry checks a schedule's retry policy against its action (normalized, the
// defaults filled in: an http action always has one), naming the field under "retry".
func validateRetry(r *domain.Retry, act domain.ActionKind) (*domain.Retry, error) {
	out, err := domain.NormalizeRetry(r, act)
	var fe *domain.FieldError
	if errors.As(err, &fe) {
		field := "retry"
		if fe.Field != "" {
			field += "." + fe.Field
		}
		return nil, BadRequest(field, "%s", fe.Msg)
	}
	return out, err
}

// checkOutbound refuses an http action whose URL names an address the outbound rule
// refuses (a loopback, link-local or private address not in TICKGATE_HTTP_ALLOW). A host
// name is checked when it is resolved, at each attempt.
func checkOutbound(act domain.Action, rule outbound.Rule) error {
	if act.Kind != domain.ActionHTTP {
		return nil
	}
	if err := rule.CheckURL(act.URL); err != nil {
		return BadRequest("action.url", "%v", err)
	}
	return nil
}

// decodeRotateSecret reads a rotation's body (empty, {} or {"grace": "24h"}) and judges its
// grace: 0 to MaxSecretGrace.
func decodeRotateSecret(c echo.Context) (RotateSecretRequest, error) {
	var req RotateSecretRequest
	if err := Decode(c, &req, true); err != nil {
		return req, err
	}
	if d := time.Duration(req.Grace); d < 0 || d > MaxSecretGrace {
		return req, BadRequest("grace", "want a duration from 0 to %s such as \"24h\", got %s", MaxSecretGrace, d)
	}
	return req, nil
}

// rotateScheduleSecret gives an http schedule a new signing secret and shows it, once. The
// old one may go on signing beside it for a grace period; the rotation is recorded in the
// schedule's history (never the secret). Requests signed from then on carry the new one; an
// attempt in flight may still carry the old one.
func (s *Server) rotateScheduleSecret(c echo.Context) error {
	row, err := s.scheduleByName(c)
	if err != nil {
		return err
	}
	req, err := decodeRotateSecret(c)
	if err != nil {
		return err
	}
	var act domain.Action
	if err := json.Unmarshal(row.Action, &act); err != nil {
		return err
	}
	if act.Kind != domain.ActionHTTP {
		return Conflict("action.kind", "schedule %q has a %s action: only an http action's requests are signed", row.Name, act.Kind)
	}
	secret := newSigningSecret()
	rot := store.SecretRotation{Schedule: row.Name, Secret: secret, Actor: PrincipalOf(c).Name(), Door: domain.DoorAPI}
	if req.Grace > 0 {
		until := s.Now().UTC().Add(time.Duration(req.Grace)).Truncate(time.Microsecond)
		rot.GraceUntil = &until
	}
	at, err := s.Store.RotateScheduleSecret(c.Request().Context(), rot)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return NotFound("no schedule named %q", row.Name)
		}
		return err
	}
	view := SecretView{Name: row.Name, SigningSecret: secret, RotatedAt: at, PreviousValidUntil: rot.GraceUntil}
	replay := view
	replay.SigningSecret, replay.SigningSecretNote = "", secretShownOnce
	showsSecret(c, replay)
	return c.JSON(http.StatusOK, view)
}

// redriveRun delivers a FAILED run of an http or workflow action again: the same tick key,
// a new series under a new workflow id (<id>~redrive-<n>), with the schedule's action and
// retry policy as they are now. The run is RUNNING again from the answer on, and a run
// watcher starts its series within a second.
func (s *Server) redriveRun(c echo.Context) error {
	id, err := pathID(c, "run")
	if err != nil {
		return err
	}
	var req struct{}
	if err := Decode(c, &req, true); err != nil {
		return err
	}
	ctx := c.Request().Context()
	res, err := s.Store.RedriveRun(ctx, id)
	var not *store.NotRedrivable
	switch {
	case errors.Is(err, store.ErrNotFound):
		return NotFound("no run %d", id)
	case errors.As(err, &not) && not.EventRun:
		return BadRequest("action.kind", "%s", not.Error())
	case errors.As(err, &not) && not.ActionNow != "":
		return Conflict("action.kind", "%s", not.Error())
	case errors.As(err, &not):
		return Conflict("status", "%s", not.Error())
	case err != nil:
		return err
	}
	views := []RunView{runView(res.Run)}
	if err := s.addDeliveries(ctx, views); err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, ScheduleRunView{Schedule: res.ScheduleName, RunView: views[0]})
}

// addDeliveries adds each run's delivery attempts and redrives to its view (two queries
// for the lot).
func (s *Server) addDeliveries(ctx context.Context, views []RunView) error {
	ids := make([]int64, 0, len(views))
	for _, v := range views {
		ids = append(ids, v.ID)
	}
	attempts, err := s.Store.RunAttempts(ctx, ids)
	if err != nil {
		return err
	}
	redrives, err := s.Store.RunRedrives(ctx, ids)
	if err != nil {
		return err
	}
	for i := range views {
		v := &views[i]
		for _, a := range attempts[v.ID] {
			v.Attempts = append(v.Attempts, attemptView(a))
		}
		for _, r := range redrives[v.ID] {
			v.Redrives = append(v.Redrives, RedriveView{
				N: int(r.N), WorkflowID: r.WorkflowID, PreviousWorkflowID: r.PreviousWorkflowID, PreviousError: r.PreviousError,
				FailedAt: r.FailedAt.UTC(), RequestedAt: r.RequestedAt.UTC(),
			})
		}
	}
	return nil
}

func attemptView(a store.RunAttempt) AttemptView {
	v := AttemptView{
		Attempt: int(a.Attempt), Redrive: int(a.Redrive), WorkflowID: a.WorkflowID, StartedAt: a.StartedAt.UTC(), LatencyMs: a.LatencyMs,
		Outcome: a.Outcome, Error: a.Error, ResponseStart: a.ResponseStart, RetryAfterMs: a.RetryAfterMs, Direct: a.Direct,
	}
	if a.FinishedAt != nil {
		at := a.FinishedAt.UTC()
		v.FinishedAt = &at
	}
	if a.StatusCode != nil {
		code := int(*a.StatusCode)
		v.StatusCode = &code
	}
	return v
}

// addRunDeliveries adds the attempts and redrives to a page of runs of many schedules.
func (s *Server) addRunDeliveries(ctx context.Context, items []ScheduleRunView) error {
	views := make([]RunView, len(items))
	for i := range items {
		views[i] = items[i].RunView
	}
	if err := s.addDeliveries(ctx, views); err != nil {
		return err
	}
	for i := range items {
		items[i].RunView = views[i]
	}
	return nil
}

// OptionalRetry is a PATCH's retry: absent (Set false: unchanged), null (removed) or a
// policy, decoded as strictly as the rest of the body.
type OptionalRetry struct {
	Set   bool
	Retry *domain.Retry
}

// UnmarshalJSON reads null or a retry policy; unknown fields are refused.
func (o *OptionalRetry) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(bytes.TrimSpace(b)) == "null" {
		o.Retry = nil
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var r domain.Retry
	if err := dec.Decode(&r); err != nil {
		return fmt.Errorf("retry: %w", err)
	}
	o.Retry = &r
	return nil
}

// MarshalJSON writes the policy (null when none).
func (o OptionalRetry) MarshalJSON() ([]byte, error) { return json.Marshal(o.Retry) }
