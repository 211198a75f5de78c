package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/metrics"
	"github.com/tickgate/tickgate/store"
)

// PUT /schedules/{name}: a schedule's whole definition, created or replaced — the door
// schedules as code (tickgate apply, docs/gitops.md) goes through. The body is a create's.
//
// A body whose definition is the stored one changes nothing at all: no new version, no
// history entry, no word to the schedule's workflow, so no armed fire is retracted or armed
// again. A different one replaces the definition as PATCH does (one history entry naming
// each changed field, the workflow told to reload). paused and note count only when the
// schedule is created: pausing an existing schedule is an operator's act, which a replace
// leaves as it is. A spec without start_at keeps the stored anchor of an interval.
//
// If-Match (the ETag, "3") makes it optimistic: a schedule at another version is a 412 and
// nothing changes — unless the body asks for exactly what is stored, which is answered
// "unchanged" (RFC 9110 §13.1.1: the change is already made). If-Match on a name that holds
// no schedule is a 412; If-None-Match: * makes the PUT a create only (412 if the name is
// held). ?dry_run=true answers what the PUT would do, and does nothing.

// AppliedScheduleView answers a PUT /schedules/{name}.
type AppliedScheduleView struct {
	// Outcome is "created", "updated" or "unchanged".
	Outcome string `json:"outcome"`
	// Changes are the definition's fields the PUT changed (or would change, on a dry run),
	// each with its value before and after, as the schedule's history records them.
	Changes  []store.FieldChange `json:"changes"`
	DryRun   bool                `json:"dry_run,omitempty"`
	Schedule ScheduleView        `json:"schedule"`
	// SigningSecret is the new signing secret of a schedule that became (or was created as)
	// an http one, shown this once.
	SigningSecret string `json:"signing_secret,omitempty"`
}

// Outcomes of a PUT.
const (
	OutcomeCreated   = "created"
	OutcomeUpdated   = "updated"
	OutcomeUnchanged = "unchanged"
)

// maxPutRaces is how often a PUT without If-Match reads the schedule again when another
// change lands between its read and its write.
const maxPutRaces = 3

func (s *Server) putSchedule(c echo.Context) error {
	name := c.Param("name")
	var req CreateScheduleRequest
	if err := Decode(c, &req, false); err != nil {
		return err
	}
	if req.Name == "" {
		req.Name = name
	}
	if req.Name != name {
		return BadRequest("name", "%q disagrees with the schedule %q of the path: a schedule is not renamed", req.Name, name)
	}
	dryRun := false
	if v := c.QueryParam("dry_run"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return BadRequest("dry_run", "want true or false, got %q", v)
		}
		dryRun = b
	}
	expected, err := expectedVersion(c, 0)
	if err != nil {
		return err
	}
	createOnly := c.Request().Header.Get("If-None-Match") == "*"
	ctx := c.Request().Context()
	for race := 0; ; race++ {
		row, err := s.Store.GetSchedule(ctx, name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			if expected != 0 {
				return NewProblem(http.StatusPreconditionFailed, "If-Match", "no schedule named %q to match", name)
			}
			err := s.putCreate(c, req, dryRun)
			if errors.Is(err, errPutRace) && race < maxPutRaces {
				continue
			}
			return err
		case err != nil:
			return err
		}
		if createOnly {
			return NewProblem(http.StatusPreconditionFailed, "If-None-Match", "a schedule named %q exists", name)
		}
		err = s.putReplace(c, row, req, expected, dryRun)
		if errors.Is(err, errPutRace) && race < maxPutRaces {
			continue
		}
		return err
	}
}

// errPutRace is another writer between a PUT's read and its write (only when the PUT gave
// no If-Match): the PUT reads again.
var errPutRace = errors.New("the schedule changed under the PUT")

// putCreate creates the schedule a PUT names, as POST /schedules does.
func (s *Server) putCreate(c echo.Context, req CreateScheduleRequest, dryRun bool) error {
	now := s.Now().UTC()
	spec, pol, err := s.validateSchedule(&req, now)
	if err != nil {
		return err
	}
	if _, err := headerValues(req.Action, nil); err != nil {
		return err
	}
	newRow := s.newScheduleRow(req, spec, pol, now)
	if dryRun {
		return c.JSON(http.StatusOK, AppliedScheduleView{Outcome: OutcomeCreated, Changes: []store.FieldChange{}, DryRun: true,
			Schedule: scheduleView(store.Schedule{Name: req.Name, Spec: newRow.Spec, Action: newRow.Action, Overlap: newRow.Overlap,
				CatchupWindowMs: newRow.CatchupWindowMs, SkipIfSuccessful: newRow.SkipIfSuccessful, Retry: newRow.Retry,
				Paused: newRow.Paused, PauseNote: newRow.PauseNote, Labels: newRow.Labels, MaxConcurrent: newRow.MaxConcurrent,
				OverlapWhenFull: newRow.OverlapWhenFull, NextRunAt: newRow.NextRunAt, AfterCompletion: newRow.AfterCompletion})})
	}
	ctx := c.Request().Context()
	var row store.Schedule
	opts := []store.CreateOption{store.ExcludingCalendars(spec.Spec.ExcludeCalendars...), store.CreatedBy(PrincipalOf(c).Name())}
	if req.Metrics {
		row, err = s.Store.CreateScheduleWithMetrics(ctx, newRow, metrics.MaxScheduleSeries, opts...)
	} else {
		row, err = s.Store.CreateSchedule(ctx, newRow, opts...)
	}
	if p := unknownCalendars(err, "spec.exclude_calendars"); p != nil {
		return p
	}
	switch {
	case errors.Is(err, store.ErrConflict):
		return errPutRace // created by another request since the read: judge it as a replace
	case errors.Is(err, store.ErrMetricsFull):
		return metricsFull()
	case err != nil:
		return err
	}
	c.Response().Header().Set("ETag", etag(row.Version))
	noStoreIfSecret(c, newRow.SigningSecret)
	return c.JSON(http.StatusCreated, AppliedScheduleView{Outcome: OutcomeCreated, Changes: []store.FieldChange{},
		Schedule: scheduleView(row), SigningSecret: newRow.SigningSecret})
}

// noStoreIfSecret marks an answer that shows a signing secret as one no cache may keep.
func noStoreIfSecret(c echo.Context, secret string) {
	if secret != "" {
		c.Response().Header().Set("Cache-Control", "no-store")
	}
}

// putReplace replaces an existing schedule's definition with the PUT's, or leaves it be when
// they are the same.
func (s *Server) putReplace(c echo.Context, row store.Schedule, req CreateScheduleRequest, expected int64, dryRun bool) error {
	cur := scheduleView(row)
	if req.Spec.StartAt == nil && cur.Spec.StartAt != nil {
		req.Spec.StartAt = cur.Spec.StartAt // the interval keeps its anchor
	}
	req.storedAt = cur.Spec.At
	spec, pol, err := s.validateSchedule(&req, s.Now().UTC())
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	// The header values are write-only: a header named in header_names without a value keeps
	// its stored one, and the values are compared with the stored ones, never shown.
	var values, storedValues map[string]string
	if cur.Action.Kind == domain.ActionHTTP {
		if storedValues, err = s.Store.ScheduleHeaderValues(ctx, row.Name); err != nil {
			return err
		}
	}
	if req.Action.Kind == domain.ActionHTTP {
		if values, err = headerValues(req.Action, storedValues); err != nil {
			return err
		}
	}
	req.Action, _ = req.Action.SplitHeaders()
	asked := NewScheduleRow(req, spec, pol, s.Now().UTC())
	changes := definitionChanges(cur, spec.Spec, req.Action, pol, req.Labels)
	changes = append(changes, headerValueChanges(storedValues, values)...)
	if !sameRetry(row.Retry, asked.Retry) {
		changes = append(changes, store.FieldChange{Field: "retry", From: jsonOrNull(row.Retry), To: jsonOrNull(asked.Retry)})
	}
	if row.AfterCompletion != asked.AfterCompletion {
		from, _ := json.Marshal(row.AfterCompletion)
		to, _ := json.Marshal(asked.AfterCompletion)
		changes = append(changes, store.FieldChange{Field: "after_completion", From: from, To: to})
	}
	metricsChange := req.Metrics != row.Metrics
	if metricsChange {
		from, _ := json.Marshal(row.Metrics)
		to, _ := json.Marshal(req.Metrics)
		changes = append(changes, store.FieldChange{Field: "metrics", From: from, To: to})
	}
	if len(changes) == 0 {
		// The same definition: nothing is written, whatever version If-Match named.
		c.Response().Header().Set("ETag", etag(row.Version))
		return c.JSON(http.StatusOK, AppliedScheduleView{Outcome: OutcomeUnchanged, Changes: []store.FieldChange{}, DryRun: dryRun, Schedule: cur})
	}
	if expected != 0 && expected != row.Version {
		return NewProblem(http.StatusPreconditionFailed, "version", "the schedule changed since version %d; read it again and retry", expected)
	}
	if dryRun {
		return c.JSON(http.StatusOK, AppliedScheduleView{Outcome: OutcomeUpdated, Changes: changes, DryRun: true, Schedule: cur})
	}
	if metricsChange && req.Metrics {
		n, err := s.Store.CountSchedulesWithMetrics(ctx)
		if err != nil {
			return err
		}
		if n >= metrics.MaxScheduleSeries {
			return metricsFull()
		}
	}
	defChanges := make([]store.FieldChange, 0, len(changes))
	redefined := false
	for _, ch := range changes {
		switch ch.Field {
		case "metrics":
		case "labels":
			defChanges = append(defChanges, ch)
		default:
			defChanges = append(defChanges, ch)
			redefined = true
		}
	}
	var secret string
	if req.Action.Kind == domain.ActionHTTP && cur.Action.Kind != domain.ActionHTTP {
		secret = asked.SigningSecret
	}
	updated := row
	if len(defChanges) > 0 {
		change := store.ScheduleChange{
			Name: row.Name, ExpectedVersion: row.Version, Spec: asked.Spec, Action: asked.Action, Overlap: asked.Overlap,
			CatchupWindowMs: asked.CatchupWindowMs, SkipIfSuccessful: asked.SkipIfSuccessful, Retry: asked.Retry, SigningSecret: secret,
			SetHeaderValues: true, HeaderValues: headerValuesJSON(values),
			AfterCompletion: asked.AfterCompletion, Calendars: spec.Spec.ExcludeCalendars, Labels: asked.Labels,
			MaxConcurrent: asked.MaxConcurrent, OverlapWhenFull: asked.OverlapWhenFull,
			History: &store.HistoryEntry{Kind: domain.HistoryUpdate, Actor: PrincipalOf(c).Name(), Door: domain.DoorAPI, Changes: defChanges},
		}
		updated, err = s.Store.UpdateSchedule(ctx, change)
		if p := unknownCalendars(err, "spec.exclude_calendars"); p != nil {
			return p
		}
		if errors.Is(err, store.ErrStale) {
			if expected != 0 {
				return NewProblem(http.StatusPreconditionFailed, "version", "the schedule changed since version %d; read it again and retry", expected)
			}
			return errPutRace
		}
		if err != nil {
			return err
		}
	}
	if metricsChange {
		if err := s.Store.SetScheduleMetrics(ctx, row.Name, req.Metrics, metrics.MaxScheduleSeries); err != nil {
			if errors.Is(err, store.ErrMetricsFull) {
				return metricsFull()
			}
			return err
		}
		updated.Metrics = req.Metrics
	}
	// The workflow reloads the definition and recomputes its next fire; runs in flight go
	// on. (Labels are no part of what it runs: a change of labels alone leaves it be.)
	if redefined {
		if err := s.Starter.RefreshSchedule(ctx, row.ID, row.Name); err != nil {
			s.Logf("api: refresh workflow of schedule %s: %v", row.Name, err)
		}
	}
	c.Response().Header().Set("ETag", etag(updated.Version))
	noStoreIfSecret(c, secret)
	return c.JSON(http.StatusOK, AppliedScheduleView{Outcome: OutcomeUpdated, Changes: changes, Schedule: scheduleView(updated), SigningSecret: secret})
}

// sameRetry compares two stored retry policies (absent and null alike).
func sameRetry(a, b json.RawMessage) bool {
	return jsonEqual(jsonOrNull(a), jsonOrNull(b))
}

func jsonOrNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}
