package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/outbound"
	"github.com/tickgate/tickgate/internal/scheduleplan"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/internal/telemetry"
	"github.com/tickgate/tickgate/metrics"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// registerSchedules mounts /schedules (docs/schedules.md).
func (s *Server) registerSchedules(g *echo.Group) {
	g.POST("/schedules", s.createSchedule)
	g.POST("/schedules/bulk", s.bulkCreateSchedules)
	g.POST("/schedules/preview", s.previewSchedule)
	g.POST("/schedules/pause", s.pauseSelected)
	g.POST("/schedules/resume", s.resumeSelected)
	g.GET("/schedules/:name/history", s.scheduleHistory)
	g.GET("/schedules", s.listSchedules)
	g.GET("/schedules/:name", s.getSchedule)
	g.DELETE("/schedules/:name", s.deleteSchedule)
	g.GET("/schedules/:name/runs", s.listScheduleRuns)
	g.POST("/schedules/:name/pause", s.pauseSchedule)
	g.POST("/schedules/:name/resume", s.resumeSchedule)
	g.POST("/schedules/:name/trigger", s.triggerSchedule)
	g.PATCH("/schedules/:name", s.updateSchedule)
	g.PUT("/schedules/:name", s.putSchedule)
	g.POST("/schedules/:name/reschedule", s.rescheduleSchedule)
	g.POST("/schedules/:name/backfill", s.backfillSchedule)
	s.registerHTTPAction(g)
}

// SchedulePolicies are a schedule's policies as sent over the API.
type SchedulePolicies struct {
	Overlap          domain.Overlap        `json:"overlap"`
	CatchupWindow    schedulespec.Duration `json:"catchup_window"`
	SkipIfSuccessful bool                  `json:"skip_if_successful"`
	// MaxConcurrent caps the runs in flight under allow_all (nil: no cap); a tick beyond it
	// waits, or is skipped under OverlapWhenFull skip (domain.CheckConcurrency).
	MaxConcurrent   *int            `json:"max_concurrent,omitempty"`
	OverlapWhenFull domain.WhenFull `json:"overlap_when_full,omitempty"`
}

// ScheduleAction is what a fire does: the action the schedule's workflow performs.
type ScheduleAction = domain.Action

// CreateScheduleRequest is the body of POST /schedules.
type CreateScheduleRequest struct {
	Name     string            `json:"name"`
	Spec     schedulespec.Spec `json:"spec"`
	Action   ScheduleAction    `json:"action"`
	Policies *SchedulePolicies `json:"policies,omitempty"`
	// Retry is the retry policy of an http or workflow action (schedules_http.go).
	Retry  *domain.Retry `json:"retry,omitempty"`
	Paused bool          `json:"paused"`
	Note   string        `json:"note,omitempty"`
	// Metrics asks for Prometheus series of the schedule's own (docs/console.md#prometheus).
	Metrics bool `json:"metrics,omitempty"`
	// AfterCompletion, for a one-time schedule (spec.at): "keep" (default) or "delete" it
	// once its run has ended (schedules_one_time.go).
	AfterCompletion string `json:"after_completion,omitempty"`
	// storedAt, for an update, is the schedule's at as stored: given again unchanged, it is
	// not judged against the clock (the update changes something else).
	storedAt *time.Time
	// Labels select the schedule in lists and bulk commands (domain.CheckLabels).
	Labels domain.Labels `json:"labels,omitempty"`
}

// ScheduleView is a schedule as the API answers it.
type ScheduleView struct {
	Name     string            `json:"name"`
	Spec     schedulespec.Spec `json:"spec"`
	Action   ScheduleAction    `json:"action"`
	Policies SchedulePolicies  `json:"policies"`
	Retry    *domain.Retry     `json:"retry,omitempty"`
	Labels   domain.Labels     `json:"labels"`
	Paused   bool              `json:"paused"`
	Note     string            `json:"note"`
	// AutoPaused, while a pause the schedule made itself stands (its http action's
	// auto_pause rule met), says when and why; a resume clears it.
	AutoPaused *AutoPausedView `json:"auto_paused,omitempty"`
	// FailedInARow counts the runs in a row that ended FAILED (kept for a schedule whose
	// action has auto_pause; a success or a resume starts it again).
	FailedInARow int `json:"failed_in_a_row,omitempty"`
	// State is "active", "paused" or "completed" (a one-time schedule whose run has ended).
	State string `json:"state"`
	// AfterCompletion and CompletedAt, of a one-time schedule: what happens once its run has
	// ended, and when it was completed.
	AfterCompletion string     `json:"after_completion,omitempty"`
	CompletedAt     *time.Time `json:"completed_at,omitempty"`
	// Metrics: the schedule has Prometheus series of its own (docs/console.md#prometheus).
	Metrics   bool       `json:"metrics"`
	Version   int64      `json:"version"`
	NextRunAt *time.Time `json:"next_run_at"`
	LastRunAt *time.Time `json:"last_run_at"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	// Only on GET /schedules/{name}:
	NextFireTimes []time.Time      `json:"next_fire_times,omitempty"`
	RecentRuns    []RunView        `json:"recent_runs,omitempty"`
	RunningRuns   []RunView        `json:"running_runs,omitempty"`
	Counters      *ScheduleCounter `json:"counters,omitempty"`
	// Waiting: counts in a list, with the ticks and ranges on GET /schedules/{name}.
	Waiting *ScheduleWaiting `json:"waiting,omitempty"`
	// RefusedCommands: the newest command signals it refused, on GET /schedules/{name}.
	RefusedCommands []RefusedCommandView `json:"refused_commands,omitempty"`
	WorkflowID      string               `json:"workflow_id"`
}

// RefusedCommandView is a command signal the schedule refused for bad input.
type RefusedCommandView struct {
	Command   string    `json:"command"`
	Door      string    `json:"door"`
	Field     string    `json:"field"`
	Reason    string    `json:"reason"`
	Payload   string    `json:"payload"`
	RefusedAt time.Time `json:"refused_at"`
}

// maxRefusalsShown is how many refused commands a schedule's view lists.
const maxRefusalsShown = 10

// ScheduleWaiting is what a schedule has still to run: ticks buffered under its overlap
// policy and backfill ticks not yet fired.
type ScheduleWaiting struct {
	Buffered      int64                   `json:"buffered"`
	Backfill      int64                   `json:"backfill"`
	BufferedTicks []BufferedTickView      `json:"buffered_ticks,omitempty"`
	Backfills     []store.PendingBackfill `json:"backfills,omitempty"`
}

// BufferedTickView is a tick waiting under the overlap policy (a BUFFERED run).
type BufferedTickView struct {
	RunID       int64          `json:"run_id"`
	ScheduledAt time.Time      `json:"scheduled_at"`
	Trigger     domain.Trigger `json:"trigger"`
	Reason      string         `json:"reason"`
}

// ScheduleCounter counts a schedule's ticks by outcome.
type ScheduleCounter struct {
	Fired   int64 `json:"fired"`
	Skipped int64 `json:"skipped"`
	Missed  int64 `json:"missed"`
}

// RunView is a schedule run as the API answers it.
type RunView struct {
	ID          int64            `json:"id"`
	ScheduledAt time.Time        `json:"scheduled_at"`
	FiredAt     *time.Time       `json:"fired_at"`
	Trigger     domain.Trigger   `json:"trigger"`
	Status      domain.RunStatus `json:"status"`
	Reason      string           `json:"reason"`
	WorkflowID  string           `json:"workflow_id,omitempty"`
	Error       string           `json:"error,omitempty"`
	FinishedAt  *time.Time       `json:"finished_at"`
	// TraceID is the trace of the run's fire, when it was recorded with tracing on.
	TraceID string `json:"trace_id,omitempty"`
	// Attempts are an http action's delivery attempts, in the order they were made (every
	// series: the first, then each redrive's); Redrives the run's redrives.
	Attempts []AttemptView `json:"attempts,omitempty"`
	Redrives []RedriveView `json:"redrives,omitempty"`
}

var (
	scheduleNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
)

func validOverlap(field string, v domain.Overlap) error {
	if !v.Valid() {
		return BadRequest(field, "must be one of %s; got %q", domain.Join(domain.Overlaps), v)
	}
	return nil
}

// validate checks a create request and returns its normalized spec and policies; it
// normalizes the action and the retry policy in place. An http action's URL must pass the
// outbound rule.
func (req *CreateScheduleRequest) validate(now time.Time, rule outbound.Rule) (*schedulespec.Compiled, SchedulePolicies, error) {
	pol := SchedulePolicies{Overlap: domain.DefaultOverlap}
	if !scheduleNameRE.MatchString(req.Name) {
		return nil, pol, BadRequest("name", "must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	if len(req.Note) > workflows.MaxPauseNote {
		// The pause note a paused create starts with: bounded as a pause's own note is.
		return nil, pol, BadRequest("note", "must be at most %d bytes; got %d", workflows.MaxPauseNote, len(req.Note))
	}
	spec, err := schedulespec.Normalize(req.Spec, now)
	if err != nil {
		var fe *schedulespec.FieldError
		if errors.As(err, &fe) {
			return nil, pol, BadRequest(fe.Field, "%s", fe.Detail)
		}
		return nil, pol, BadRequest("spec", "%v", err)
	}
	if err := validateAction(&req.Action); err != nil {
		return nil, pol, err
	}
	if err := checkOutbound(req.Action, rule); err != nil {
		return nil, pol, err
	}
	if req.Retry, err = validateRetry(req.Retry, req.Action.Kind); err != nil {
		return nil, pol, err
	}
	if req.Policies != nil {
		pol = *req.Policies
		if pol.Overlap == "" {
			pol.Overlap = domain.DefaultOverlap
		}
		if err := validOverlap("policies.overlap", pol.Overlap); err != nil {
			return nil, pol, err
		}
		if pol.CatchupWindow < 0 {
			return nil, pol, BadRequest("policies.catchup_window", "must not be negative")
		}
	}
	if err := req.validateOneTime(spec, pol, now); err != nil {
		return nil, pol, err
	}
	whenFull, err := domain.CheckConcurrency(pol.MaxConcurrent, pol.OverlapWhenFull, pol.Overlap, req.Action.Kind)
	if err != nil {
		return nil, pol, fieldProblem("policies", err)
	}
	pol.OverlapWhenFull = whenFull
	if err := domain.CheckLabels(req.Labels); err != nil {
		return nil, pol, fieldProblem("labels", err)
	}
	return spec, pol, nil
}

// validateSchedule checks a create request (validate) against this server's rules too: a
// workflow action may start users' workflows only, never tickgate's own types or task
// queues (workflowTargets).
func (s *Server) validateSchedule(req *CreateScheduleRequest, now time.Time) (*schedulespec.Compiled, SchedulePolicies, error) {
	spec, pol, err := req.validate(now, s.HTTPAllow)
	if err != nil {
		return spec, pol, err
	}
	if err := s.checkWorkflowTarget(req.Action); err != nil {
		return spec, pol, err
	}
	return spec, pol, nil
}

// workflowTargets is the rule of the workflows a workflow action may start, with this
// server's task queue and TICKGATE_WORKFLOW_TASK_QUEUES.
func (s *Server) workflowTargets() domain.WorkflowTargets {
	queue := ""
	if s.Starter != nil {
		queue = s.Starter.TaskQueue
	}
	return workflows.OwnTargets(queue, s.WorkflowTaskQueues)
}

// checkWorkflowTarget refuses a workflow action that names one of tickgate's own workflow
// types or task queues (or a queue TICKGATE_WORKFLOW_TASK_QUEUES does not list), naming
// the field.
func (s *Server) checkWorkflowTarget(act domain.Action) error {
	if act.Kind != domain.ActionWorkflow {
		return nil
	}
	if fe := s.workflowTargets().Check(act.WorkflowType, act.TaskQueue); fe != nil {
		return BadRequest("action."+fe.Field, "%s", fe.Msg)
	}
	return nil
}

// fieldProblem is a 400 naming a domain.FieldError's field under prefix (either may be
// empty); another error is a 400 naming prefix.
func fieldProblem(prefix string, err error) error {
	var fe *domain.FieldError
	if !errors.As(err, &fe) {
		return BadRequest(prefix, "%v", err)
	}
	field := prefix
	switch {
	case field == "":
		field = fe.Field
	case fe.Field != "":
		field += "." + fe.Field
	}
	return BadRequest(field, "%s", fe.Msg)
}

// validateAction checks an action (and fills an event action's defaults), naming the
// offending field under "action".
func validateAction(act *ScheduleAction) error {
	err := act.Normalize()
	var fe *domain.FieldError
	if errors.As(err, &fe) {
		field := "action"
		if fe.Field != "" {
			field += "." + fe.Field
		}
		return BadRequest(field, "%s", fe.Msg)
	}
	return err
}

func (s *Server) createSchedule(c echo.Context) error {
	var req CreateScheduleRequest
	if err := Decode(c, &req, false); err != nil {
		return err
	}
	now := s.Now().UTC()
	spec, pol, err := s.validateSchedule(&req, now)
	if err != nil {
		return err
	}
	if _, err := headerValues(req.Action, nil); err != nil {
		return err
	}
	ctx := c.Request().Context()
	newRow := s.newScheduleRow(req, spec, pol, now)
	var row store.Schedule
	if req.Metrics {
		row, err = s.Store.CreateScheduleWithMetrics(ctx, newRow, metrics.MaxScheduleSeries,
			store.ExcludingCalendars(spec.Spec.ExcludeCalendars...), store.CreatedBy(PrincipalOf(c).Name()))
	} else {
		row, err = s.Store.CreateSchedule(ctx, newRow, store.ExcludingCalendars(spec.Spec.ExcludeCalendars...), store.CreatedBy(PrincipalOf(c).Name()))
	}
	if p := unknownCalendars(err, "spec.exclude_calendars"); p != nil {
		return p
	}
	if errors.Is(err, store.ErrConflict) {
		return Conflict("name", "a schedule named %q already exists", req.Name)
	}
	if errors.Is(err, store.ErrMetricsFull) {
		return metricsFull()
	}
	if err != nil {
		return err
	}
	return answerCreated(c, http.StatusCreated, CreatedScheduleView{ScheduleView: scheduleView(row), SigningSecret: newRow.SigningSecret})
}

// answerCreated answers a create or an update; one that shows a signing secret is kept for
// a replay without it (showsSecret).
func answerCreated(c echo.Context, status int, v CreatedScheduleView) error {
	if v.SigningSecret != "" {
		replay := v
		replay.SigningSecret, replay.SigningSecretNote = "", secretShownOnce
		showsSecret(c, replay)
	}
	return c.JSON(status, v)
}

// NewScheduleRow is the row of a new schedule: at rest, its ticks counted from now, with the
// planner's first look at it (scheduleplan: its first fires armed ahead, or its workflow
// woken before its first fire). Creating a schedule makes no call to Temporal. An http
// action's row carries a new signing secret and its header values, inserted with it apart
// from the action, which names its headers only.
func NewScheduleRow(req CreateScheduleRequest, spec *schedulespec.Compiled, pol SchedulePolicies, now time.Time) store.NewSchedule {
	specJSON, _ := json.Marshal(spec.Spec)
	storedAction, values := req.Action.SplitHeaders()
	req.Action = storedAction
	actionJSON, _ := json.Marshal(storedAction)
	var retryJSON []byte
	if req.Retry != nil {
		retryJSON, _ = json.Marshal(req.Retry)
	}
	watermark := countFrom(spec, now)
	plan := scheduleplan.Schedule{
		Name: req.Name, Spec: spec, Action: req.Action, Overlap: pol.Overlap, SkipIfSuccessful: pol.SkipIfSuccessful,
		Paused: req.Paused, Watermark: watermark,
	}
	row := store.NewSchedule{
		Name: req.Name, Spec: specJSON, Action: actionJSON, Overlap: pol.Overlap,
		CatchupWindowMs: time.Duration(pol.CatchupWindow).Milliseconds(), SkipIfSuccessful: pol.SkipIfSuccessful,
		Paused: req.Paused, PauseNote: req.Note, Watermark: &watermark, Retry: retryJSON, AfterCompletion: afterCompletion(req, spec),
		Labels: labelsJSON(req.Labels),
	}
	if req.Action.Kind == domain.ActionHTTP {
		row.SigningSecret = newSigningSecret()
		row.HeaderValues = headerValuesJSON(values)
	}
	row.MaxConcurrent, row.OverlapWhenFull = capColumns(pol)
	if row.MaxConcurrent != nil {
		plan.MaxConcurrent = int(*row.MaxConcurrent)
	}
	if tick, _, ok := plan.Next(); ok {
		row.NextRunAt = &tick
	}
	if p := plan.AtRest(); p.At != nil {
		row.PlanAt, row.PlanAction = p.At, &p.Action
	}
	return row
}

// newScheduleRow is NewScheduleRow with this process's settings: with resident schedules,
// the planner's first look at the new schedule is at once and wakes its workflow, which
// takes the schedule, rests it in place as the planner's, and stays open.
func (s *Server) newScheduleRow(req CreateScheduleRequest, spec *schedulespec.Compiled, pol SchedulePolicies, now time.Time) store.NewSchedule {
	row := NewScheduleRow(req, spec, pol, now)
	s.openIfResident(&row, now)
	return row
}

// openIfResident plans a new schedule's first look as a wake in resident mode, so that the
// planner opens its workflow at once.
func (s *Server) openIfResident(row *store.NewSchedule, now time.Time) {
	if s.SchedulesResident {
		wake := scheduleplan.Wake
		row.PlanAt, row.PlanAction = &now, &wake
	}
}

func scheduleView(row store.Schedule) ScheduleView {
	v := ScheduleView{
		Name: row.Name, Paused: row.Paused, Note: row.PauseNote, Metrics: row.Metrics, Version: row.Version,
		NextRunAt: utcPtr(row.NextRunAt), LastRunAt: utcPtr(row.LastRunAt), CreatedAt: row.CreatedAt.UTC(), UpdatedAt: row.UpdatedAt.UTC(),
		Policies: SchedulePolicies{
			Overlap: row.Overlap, CatchupWindow: schedulespec.Duration(time.Duration(row.CatchupWindowMs) * time.Millisecond),
			SkipIfSuccessful: row.SkipIfSuccessful,
		},
		WorkflowID: workflows.ScheduleWorkflowID(row.Name),
		State:      scheduleState(row),
	}
	if row.MaxConcurrent != nil && row.OverlapWhenFull != nil {
		n := int(*row.MaxConcurrent)
		v.Policies.MaxConcurrent, v.Policies.OverlapWhenFull = &n, domain.WhenFull(*row.OverlapWhenFull)
	}
	_ = json.Unmarshal(row.Spec, &v.Spec)
	_ = json.Unmarshal(row.Action, &v.Action)
	if len(row.Retry) > 0 {
		v.Retry = new(domain.Retry)
		_ = json.Unmarshal(row.Retry, v.Retry)
	}
	if v.Spec.At != nil {
		v.AfterCompletion, v.CompletedAt = row.AfterCompletion, utcPtr(row.CompletedAt)
	}
	v.Labels = domain.Labels{}
	_ = json.Unmarshal(row.Labels, &v.Labels)
	if row.AutoPausedAt != nil && row.Paused {
		v.AutoPaused = &AutoPausedView{At: row.AutoPausedAt.UTC()}
		if row.AutoPauseReason != nil {
			v.AutoPaused.Reason = *row.AutoPauseReason
		}
	}
	v.FailedInARow = int(row.FailureStreak)
	return v
}

// AutoPausedView is a pause a schedule made itself: when, and why.
type AutoPausedView struct {
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
}

// capColumns is a concurrency cap as the row holds it (both nil: none).
func capColumns(pol SchedulePolicies) (*int32, *string) {
	if pol.MaxConcurrent == nil {
		return nil, nil
	}
	n, whenFull := int32(*pol.MaxConcurrent), string(pol.OverlapWhenFull) // #nosec G115 -- domain bounds max_concurrent to 1..MaxConcurrentLimit before this
	return &n, &whenFull
}

// labelsJSON is labels as the row holds them: an object, {} for none.
func labelsJSON(l domain.Labels) json.RawMessage {
	if len(l) == 0 {
		return json.RawMessage(`{}`)
	}
	b, _ := json.Marshal(l)
	return b
}

func runView(r store.ScheduleRun) RunView {
	return RunView{
		ID: r.ID, ScheduledAt: r.ScheduledAt.UTC(), FiredAt: utcPtr(r.FiredAt), Trigger: r.Trigger, Status: r.Status,
		Reason: r.Reason, WorkflowID: r.WorkflowID, Error: r.Error, FinishedAt: utcPtr(r.FinishedAt),
		TraceID: traceID(r.TraceContext),
	}
}

// traceID is the trace id a run's recorded trace context names ("" when none).
func traceID(tc *string) string {
	if tc == nil {
		return ""
	}
	return telemetry.TraceID(*tc)
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// listSchedules pages through schedules by name, filtered by ?state=active|paused and
// ?name= (names holding it, case-insensitive).
func (s *Server) listSchedules(c echo.Context) error {
	states, err := listValues(c, "state", scheduleStates, strings.ToLower)
	if err != nil {
		return err
	}
	if len(states) > 1 {
		return BadRequest("state", "give one state (active, paused or completed), not %d", len(states))
	}
	sel, err := selectorParam(c)
	if err != nil {
		return err
	}
	f := store.ScheduleFilter{NamePart: c.QueryParam("name"), Selector: sel}
	if len(states) == 1 {
		f.State = states[0]
	}
	if len(f.NamePart) > maxNameFilterLen || !readable(f.NamePart) {
		return BadRequest("name", "at most %d characters of UTF-8 text", maxNameFilterLen)
	}
	page, rows, err := pageOf(c, nameCursor, func(ctx context.Context, after string, limit int) ([]store.Schedule, error) {
		return s.Store.ListSchedulesFiltered(ctx, f, after, limit)
	}, scheduleView, func(r store.Schedule) string { return r.Name })
	if err != nil {
		return err
	}
	if err := s.addWaitingCounts(c.Request().Context(), rows, page.Items); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page)
}

// addWaitingCounts sets each listed schedule's waiting counts (views[i] is rows[i]'s):
// one query for the page's buffered ticks, the backfills from the rows.
func (s *Server) addWaitingCounts(ctx context.Context, rows []store.Schedule, views []ScheduleView) error {
	ids := make([]int64, len(views))
	for i := range views {
		ids[i] = rows[i].ID
	}
	buffered, err := s.Store.BufferedCounts(ctx, ids)
	if err != nil {
		return err
	}
	for i := range views {
		w, err := waitingOf(rows[i], buffered[rows[i].ID])
		if err != nil {
			return err
		}
		views[i].Waiting = &w
	}
	return nil
}

// waitingOf is a schedule's waiting counts, from its row and its number of BUFFERED runs.
func waitingOf(row store.Schedule, buffered int64) (ScheduleWaiting, error) {
	backfills, err := store.Backfills(row)
	if err != nil {
		return ScheduleWaiting{}, err
	}
	w := ScheduleWaiting{Buffered: buffered, Backfills: backfills}
	for _, b := range backfills {
		w.Backfill += int64(b.Remaining)
	}
	return w, nil
}

func (s *Server) scheduleByName(c echo.Context) (store.Schedule, error) {
	name := c.Param("name")
	row, err := s.Store.GetSchedule(c.Request().Context(), name)
	if errors.Is(err, store.ErrNotFound) {
		return row, NotFound("no schedule named %q", name)
	}
	return row, err
}

func (s *Server) getSchedule(c echo.Context) error {
	row, err := s.scheduleByName(c)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag(row.Version))
	ctx := c.Request().Context()
	v := scheduleView(row)
	v.Counters = &ScheduleCounter{Fired: row.FiredCount, Skipped: row.SkippedCount, Missed: row.MissedCount}
	if !row.Paused && row.CompletedAt == nil {
		var stored schedulespec.Spec
		if err := json.Unmarshal(row.Spec, &stored); err == nil {
			if spec, err := schedulespec.Normalize(stored, row.CreatedAt); err == nil {
				cals, err := s.calendarsOf(ctx, spec)
				if err != nil {
					return err
				}
				v.NextFireTimes = upcomingFires(spec, cals, row.NextRunAt, s.Now().UTC(), 10)
			}
		}
	}
	recent, err := s.Store.ListRuns(ctx, row.ID, 0, 10)
	if err != nil {
		return err
	}
	v.RecentRuns = []RunView{}
	for _, r := range recent {
		v.RecentRuns = append(v.RecentRuns, runView(r))
	}
	running, err := s.Store.RunningRuns(ctx, row.ID)
	if err != nil {
		return err
	}
	v.RunningRuns = []RunView{}
	for _, r := range running {
		v.RunningRuns = append(v.RunningRuns, runView(r))
	}
	if err := s.addDeliveries(ctx, v.RecentRuns); err != nil {
		return err
	}
	if err := s.addDeliveries(ctx, v.RunningRuns); err != nil {
		return err
	}
	buffered, err := s.Store.BufferedRuns(ctx, row.ID)
	if err != nil {
		return err
	}
	waiting, err := waitingOf(row, int64(len(buffered)))
	if err != nil {
		return err
	}
	waiting.BufferedTicks = []BufferedTickView{}
	for _, r := range buffered {
		waiting.BufferedTicks = append(waiting.BufferedTicks, BufferedTickView{RunID: r.ID, ScheduledAt: r.ScheduledAt.UTC(), Trigger: r.Trigger, Reason: r.Reason})
	}
	if waiting.Backfills == nil {
		waiting.Backfills = []store.PendingBackfill{}
	}
	v.Waiting = &waiting
	refused, err := s.Store.ScheduleRefusals(ctx, row.ID, maxRefusalsShown)
	if err != nil {
		return err
	}
	v.RefusedCommands = []RefusedCommandView{}
	for _, r := range refused {
		v.RefusedCommands = append(v.RefusedCommands, RefusedCommandView{
			Command: r.Command, Door: r.Door, Field: r.Field, Reason: r.Reason, Payload: r.Payload, RefusedAt: r.RefusedAt.UTC(),
		})
	}
	return c.JSON(http.StatusOK, v)
}

// upcomingFires lists the next n fires, leaving out the ticks the schedule's calendars
// exclude: from the workflow's next planned fire (next_run_at, which may be due already or
// moved by a reschedule — the spec's ticks follow it again), else from now.
func upcomingFires(spec *schedulespec.Compiled, cals schedulespec.Calendars, next *time.Time, now time.Time, n int) []time.Time {
	if next == nil {
		return spec.NextNOutside(now, n, cals)
	}
	fires := spec.NextNOutside(next.Add(-time.Nanosecond), n, cals)
	if cals.ExcludedBy(*next) != "" {
		return fires // the next tick is one a calendar excludes: it is recorded SKIPPED, not fired
	}
	if len(fires) == 0 || !fires[0].Equal(*next) {
		// A rescheduled fire off the spec's grid is a fire of its own.
		fires = append([]time.Time{next.UTC()}, fires...)
	}
	return fires[:min(len(fires), n)]
}

func (s *Server) deleteSchedule(c echo.Context) error {
	name := c.Param("name")
	ctx := c.Request().Context()
	_, delayedStarts, err := s.Store.DeleteSchedule(ctx, name)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return NotFound("no schedule named %q", name)
		}
		return err
	}
	// The row is gone, so no fire can commit any more (RecordFire locks the row); stopping
	// the workflow is cleanup: a run that outlives it finds its row gone and stops itself.
	if err := s.Starter.StopSchedule(ctx, name, "schedule deleted"); err != nil {
		s.Logf("api: stop workflow of deleted schedule %s: %v", name, err)
	}
	// Targets started ahead of their ticks (armed workflow fires) must not run for a
	// schedule that is gone.
	if err := s.Starter.StopDelayedStarts(context.WithoutCancel(ctx), delayedStarts); err != nil {
		s.Logf("api: deleted schedule %s: %v", name, err)
	}
	return c.NoContent(http.StatusNoContent)
}

// listScheduleRuns pages through a schedule's runs, newest first, filtered by ?status=
// and ?trigger= (each a comma-separated list).
func (s *Server) listScheduleRuns(c echo.Context) error {
	row, err := s.scheduleByName(c)
	if err != nil {
		return err
	}
	f, err := runFilter(c)
	if err != nil {
		return err
	}
	page, _, err := pageOf(c, idCursor, func(ctx context.Context, before int64, limit int) ([]store.ScheduleRun, error) {
		return s.Store.ListScheduleRunsFiltered(ctx, row.ID, f, before, limit)
	}, runView, func(r store.ScheduleRun) int64 { return r.ID })
	if err != nil {
		return err
	}
	if err := s.addDeliveries(c.Request().Context(), page.Items); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page)
}

// scheduleCommandError maps a failed workflow command to a problem.
func (s *Server) scheduleCommandError(name string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return NewProblem(http.StatusServiceUnavailable, "", "the workflow of schedule %q did not answer in time (is a worker running?)", name)
	}
	// The API judges a command by the same rules before sending it, but the workflow has
	// the last word (its clock, and a state that may have changed in between).
	if r := workflows.RefusalOf(err); r != nil {
		return refusalProblem(r)
	}
	return err
}

// decodeCommand reads a schedule command's body by the rules every door shares
// (workflows.DecodeCommand), so a body a signal would refuse is refused here in the same words.
func decodeCommand(c echo.Context, command string, dst any, allowEmpty bool) error {
	body, err := ReadBody(c, allowEmpty)
	if err != nil {
		return err
	}
	if r := workflows.DecodeCommand(command, body, dst); r != nil {
		return refusalProblem(r)
	}
	return nil
}

// refusalProblem answers a command the rules refused (schedule_commands.go in workflows):
// the same field and words at every door, with the status of its kind.
func refusalProblem(r *workflows.Refusal) *Problem {
	status := http.StatusBadRequest
	switch r.Kind {
	case workflows.ErrCommandConflict:
		status = http.StatusConflict
	case workflows.ErrBackfillEmpty:
		status = http.StatusUnprocessableEntity
	}
	return NewProblem(status, r.Field, "%s", r.Reason)
}

// commandTarget is what the command rules read of a schedule's row.
func commandTarget(row store.Schedule) (workflows.CommandTarget, error) {
	t := workflows.CommandTarget{Paused: row.Paused, CreatedAt: row.CreatedAt.UTC()}
	var act ScheduleAction
	if err := json.Unmarshal(row.Action, &act); err != nil {
		return t, fmt.Errorf("decode action of schedule %q: %w", row.Name, err)
	}
	t.Action = act.Kind
	var spec schedulespec.Spec
	if err := json.Unmarshal(row.Spec, &spec); err != nil {
		return t, fmt.Errorf("decode spec of schedule %q: %w", row.Name, err)
	}
	compiled, err := schedulespec.Normalize(spec, t.CreatedAt)
	if err != nil {
		return t, fmt.Errorf("stored spec of schedule %q: %w", row.Name, err)
	}
	t.Spec = compiled
	backfills, err := store.Backfills(row)
	if err != nil {
		return t, err
	}
	t.PendingBackfills = len(backfills)
	return t, nil
}

func (s *Server) pauseSchedule(c echo.Context) error {
	row, err := s.scheduleByName(c)
	if err != nil {
		return err
	}
	var body PauseScheduleRequest
	if err := decodeCommand(c, workflows.SchedulePause, &body, true); err != nil {
		return err
	}
	req := workflows.PauseRequest{Note: body.Note, Identity: PrincipalOf(c).Name()}
	if r := workflows.CheckPause(req); r != nil {
		return refusalProblem(r)
	}
	if _, err := s.Starter.PauseSchedule(c.Request().Context(), row.ID, row.Name, req); err != nil {
		return s.scheduleCommandError(row.Name, err)
	}
	return s.answerSchedule(c, row.Name)
}

// PauseScheduleRequest is the body of POST /schedules/{name}/pause. Who asks is not in it:
// the schedule's history names the API token that sent it.
type PauseScheduleRequest struct {
	Note string `json:"note"`
}

// ResumeScheduleRequest is the body of POST /schedules/{name}/resume (optional).
type ResumeScheduleRequest struct {
	Note string `json:"note,omitempty"`
}

func (s *Server) resumeSchedule(c echo.Context) error {
	row, err := s.scheduleByName(c)
	if err != nil {
		return err
	}
	var body ResumeScheduleRequest
	if err := decodeCommand(c, workflows.ScheduleResume, &body, true); err != nil {
		return err
	}
	req := workflows.ResumeRequest{Note: body.Note, Identity: PrincipalOf(c).Name()}
	if r := workflows.CheckResume(req); r != nil {
		return refusalProblem(r)
	}
	if _, err := s.Starter.ResumeSchedule(c.Request().Context(), row.ID, row.Name, req); err != nil {
		return s.scheduleCommandError(row.Name, err)
	}
	return s.answerSchedule(c, row.Name)
}

func (s *Server) answerSchedule(c echo.Context, name string) error {
	row, err := s.Store.GetSchedule(c.Request().Context(), name)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag(row.Version))
	return c.JSON(http.StatusOK, scheduleView(row))
}

func etag(version int64) string { return fmt.Sprintf(`"%d"`, version) }

// UpdateScheduleRequest is the body of PATCH /schedules/{name}: the parts to replace.
// Version (or an If-Match header with the ETag) makes the change optimistic: a stale one
// is answered 412 and changes nothing.
type UpdateScheduleRequest struct {
	Spec     *schedulespec.Spec `json:"spec,omitempty"`
	Action   *ScheduleAction    `json:"action,omitempty"`
	Policies *SchedulePolicies  `json:"policies,omitempty"`
	// Retry replaces the retry policy; null removes it. Absent, it stays — unless the
	// action's kind changes, which resets it to the new kind's (an http action's defaults).
	Retry           OptionalRetry `json:"retry"`
	AfterCompletion *string       `json:"after_completion,omitempty"`
	Metrics         *bool         `json:"metrics,omitempty"`
	// Labels replaces the schedule's labels ({} removes them all).
	Labels  *domain.Labels `json:"labels,omitempty"`
	Version int64          `json:"version,omitempty"`
}

// applyTo is the stored definition cur with what the update carries replaced.
func (req UpdateScheduleRequest) applyTo(cur CreateScheduleRequest) CreateScheduleRequest {
	kindBefore := cur.Action.Kind
	if req.Spec != nil {
		cur.Spec = *req.Spec
	}
	if req.Action != nil {
		cur.Action = *req.Action
	}
	if req.Policies != nil {
		cur.Policies = req.Policies
	}
	switch {
	case req.Retry.Set:
		cur.Retry = req.Retry.Retry
	case req.Action != nil && req.Action.Kind != kindBefore:
		cur.Retry = nil
	}
	if req.AfterCompletion != nil {
		cur.AfterCompletion = *req.AfterCompletion
	}
	if req.Labels != nil {
		cur.Labels = *req.Labels
	}
	return cur
}

func (s *Server) updateSchedule(c echo.Context) error {
	row, err := s.scheduleByName(c)
	if err != nil {
		return err
	}
	var req UpdateScheduleRequest
	if err := Decode(c, &req, false); err != nil {
		return err
	}
	expected := req.Version
	if req.Version < 0 {
		return BadRequest("version", "must be positive")
	}
	if m := c.Request().Header.Get("If-Match"); m != "" && m != "*" {
		v, err := strconv.ParseInt(strings.Trim(strings.TrimPrefix(m, "W/"), `"`), 10, 64)
		if err != nil || v <= 0 {
			return BadRequest("If-Match", "want the schedule's ETag, such as \"3\"")
		}
		if expected != 0 && expected != v {
			return BadRequest("version", "disagrees with If-Match")
		}
		expected = v
	}
	redefined := req.Spec != nil || req.Action != nil || req.Policies != nil || req.Retry.Set || req.AfterCompletion != nil
	if !redefined && req.Labels == nil && req.Metrics != nil {
		return s.setScheduleMetrics(c, row, expected, *req.Metrics)
	}
	cur := scheduleView(row)
	create := req.applyTo(CreateScheduleRequest{Name: row.Name, Spec: cur.Spec, Action: cur.Action, Policies: &cur.Policies, Retry: cur.Retry,
		AfterCompletion: cur.AfterCompletion, storedAt: cur.Spec.At, Labels: cur.Labels})
	if req.Spec != nil && req.Spec.At == nil && req.AfterCompletion == nil {
		create.AfterCompletion = "" // a spec that is not one-time any more does not complete
	}
	spec, pol, err := s.validateSchedule(&create, s.Now().UTC())
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	// The header values are write-only: an action given anew keeps the stored value of each
	// header it names in header_names without giving a value (headerValues).
	var values, storedValues map[string]string
	if req.Action != nil && cur.Action.Kind == domain.ActionHTTP {
		if storedValues, err = s.Store.ScheduleHeaderValues(ctx, row.Name); err != nil {
			return err
		}
	}
	if req.Action != nil && create.Action.Kind == domain.ActionHTTP {
		if values, err = headerValues(create.Action, storedValues); err != nil {
			return err
		}
	}
	create.Action, _ = create.Action.SplitHeaders()
	changes := definitionChanges(cur, spec.Spec, create.Action, pol, create.Labels)
	if req.Action != nil {
		changes = append(changes, headerValueChanges(storedValues, values)...)
	}
	specJSON, _ := json.Marshal(spec.Spec)
	actionJSON, _ := json.Marshal(create.Action)
	var retryJSON []byte
	if create.Retry != nil {
		retryJSON, _ = json.Marshal(create.Retry)
	}
	// A schedule that becomes an http one gets a signing secret of its own, shown this once.
	var secret string
	if create.Action.Kind == domain.ActionHTTP && cur.Action.Kind != domain.ActionHTTP {
		secret = newSigningSecret()
	}
	// An opt-in at the cap is refused before anything changes.
	if req.Metrics != nil && *req.Metrics && !row.Metrics {
		n, err := s.Store.CountSchedulesWithMetrics(ctx)
		if err != nil {
			return err
		}
		if n >= metrics.MaxScheduleSeries {
			return metricsFull()
		}
	}
	change := store.ScheduleChange{
		Name: row.Name, ExpectedVersion: expected, Spec: specJSON, Action: actionJSON, Overlap: pol.Overlap,
		CatchupWindowMs: time.Duration(pol.CatchupWindow).Milliseconds(), SkipIfSuccessful: pol.SkipIfSuccessful,
		Retry: retryJSON, SigningSecret: secret, SetHeaderValues: req.Action != nil, HeaderValues: headerValuesJSON(values),
		AfterCompletion: afterCompletion(create, spec), Calendars: spec.Spec.ExcludeCalendars,
		Labels:  labelsJSON(create.Labels),
		History: &store.HistoryEntry{Kind: domain.HistoryUpdate, Actor: PrincipalOf(c).Name(), Door: domain.DoorAPI, Changes: changes},
	}
	change.MaxConcurrent, change.OverlapWhenFull = capColumns(pol)
	updated, err := s.Store.UpdateSchedule(ctx, change)
	if p := unknownCalendars(err, "spec.exclude_calendars"); p != nil {
		return p
	}
	if errors.Is(err, store.ErrStale) {
		return NewProblem(http.StatusPreconditionFailed, "version", "the schedule changed since version %d; read it again and retry", expected)
	}
	if err != nil {
		return err
	}
	if req.Metrics != nil && *req.Metrics != updated.Metrics {
		if err := s.Store.SetScheduleMetrics(ctx, row.Name, *req.Metrics, metrics.MaxScheduleSeries); err != nil {
			if errors.Is(err, store.ErrMetricsFull) {
				return metricsFull()
			}
			return err
		}
		updated.Metrics = *req.Metrics
	}
	// The workflow reloads the definition and recomputes its next fire; runs in flight go on.
	// (Labels are no part of what it runs: a change of labels alone leaves it be.)
	if redefined {
		if err := s.Starter.RefreshSchedule(ctx, row.ID, row.Name); err != nil {
			s.Logf("api: refresh workflow of schedule %s: %v", row.Name, err)
		}
	}
	c.Response().Header().Set("ETag", etag(updated.Version))
	return answerCreated(c, http.StatusOK, CreatedScheduleView{ScheduleView: scheduleView(updated), SigningSecret: secret})
}

func (s *Server) rescheduleSchedule(c echo.Context) error {
	row, err := s.scheduleByName(c)
	if err != nil {
		return err
	}
	var cmd workflows.RescheduleRequest
	if err := decodeCommand(c, workflows.ScheduleReschedule, &cmd, false); err != nil {
		return err
	}
	cmd.NextRunAt = cmd.NextRunAt.UTC()
	if r := workflows.CheckReschedule(cmd, workflows.CommandTarget{Paused: row.Paused}, s.Now()); r != nil {
		return refusalProblem(r)
	}
	if _, err := s.Starter.RescheduleSchedule(c.Request().Context(), row.ID, row.Name, cmd.NextRunAt); err != nil {
		return s.scheduleCommandError(row.Name, err)
	}
	return s.answerSchedule(c, row.Name)
}

// BackfillView answers a backfill.
type BackfillView struct {
	Ticks int `json:"ticks"`
}

func (s *Server) backfillSchedule(c echo.Context) error {
	row, err := s.scheduleByName(c)
	if err != nil {
		return err
	}
	var cmd workflows.BackfillRequest
	if err := decodeCommand(c, workflows.ScheduleBackfill, &cmd, false); err != nil {
		return err
	}
	cmd.Start, cmd.End = cmd.Start.UTC(), cmd.End.UTC()
	target, err := commandTarget(row)
	if err != nil {
		return err
	}
	if _, r := workflows.CheckBackfill(cmd, target, s.Now()); r != nil {
		return refusalProblem(r)
	}
	res, err := s.Starter.BackfillSchedule(c.Request().Context(), row.ID, row.Name, cmd)
	if err != nil {
		return s.scheduleCommandError(row.Name, err)
	}
	return c.JSON(http.StatusAccepted, BackfillView{Ticks: res.Ticks})
}

// TriggerScheduleRequest is the body of POST /schedules/{name}/trigger.
type TriggerScheduleRequest struct {
	Overlap domain.Overlap  `json:"overlap,omitempty"`
	Input   json.RawMessage `json:"input,omitempty"`
}

// TriggerView answers a trigger.
type TriggerView struct {
	Run    *RunView         `json:"run,omitempty"`
	Status domain.RunStatus `json:"status"`
	Reason string           `json:"reason,omitempty"`
}

func (s *Server) triggerSchedule(c echo.Context) error {
	row, err := s.scheduleByName(c)
	if err != nil {
		return err
	}
	var req TriggerScheduleRequest
	if err := decodeCommand(c, workflows.ScheduleTrigger, &req, true); err != nil {
		return err
	}
	// The Idempotency-Key makes a retried trigger return the first run instead of firing twice.
	cmd := workflows.TriggerRequest{RequestID: c.Request().Header.Get("Idempotency-Key"), Overlap: req.Overlap, Input: req.Input}
	target, err := commandTarget(row)
	if err != nil {
		return err
	}
	var act ScheduleAction
	if err := json.Unmarshal(row.Action, &act); err != nil {
		return err
	}
	// A schedule stored before the rule of workflow targets (or under another
	// TICKGATE_WORKFLOW_TASK_QUEUES) is refused here too; its fires fail at their start.
	if err := s.checkWorkflowTarget(act); err != nil {
		return err
	}
	if r := workflows.CheckTrigger(cmd, target); r != nil {
		if r.Field == "request_id" {
			r.Field = "Idempotency-Key" // the HTTP door carries the request id in this header
		}
		return refusalProblem(r)
	}
	if cmd.RequestID == "" {
		cmd.RequestID = randomID()
	}
	res, err := s.Starter.TriggerSchedule(c.Request().Context(), row.ID, row.Name, cmd)
	if err != nil {
		return s.scheduleCommandError(row.Name, err)
	}
	out := TriggerView{Status: res.Status, Reason: res.Reason}
	if res.RunID != 0 {
		run, err := s.Store.GetRun(c.Request().Context(), row.ID, res.RunID)
		if err != nil {
			return err
		}
		v := runView(run)
		out.Run = &v
	}
	return c.JSON(http.StatusOK, out)
}

func randomID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// metricsFull refuses a schedule's opt-in to series of its own at the cap.
func metricsFull() error {
	return Conflict("metrics", "%d schedules already have Prometheus series of their own (the cap, docs/console.md#prometheus): turn one off first", metrics.MaxScheduleSeries)
}

// setScheduleMetrics answers a PATCH that only opts the schedule in or out of series of its
// own: the definition is unchanged, so its version stays and its workflow is not disturbed.
func (s *Server) setScheduleMetrics(c echo.Context, row store.Schedule, expected int64, on bool) error {
	if expected != 0 && expected != row.Version {
		return NewProblem(http.StatusPreconditionFailed, "version", "the schedule changed since version %d; read it again and retry", expected)
	}
	if err := s.Store.SetScheduleMetrics(c.Request().Context(), row.Name, on, metrics.MaxScheduleSeries); err != nil {
		if errors.Is(err, store.ErrMetricsFull) {
			return metricsFull()
		}
		return err
	}
	row.Metrics = on
	c.Response().Header().Set("ETag", etag(row.Version))
	return c.JSON(http.StatusOK, scheduleView(row))
}
