package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/version"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// MaxRolloutTasks caps the tasks of one rollout (the 1 MiB body limit binds first for
// large payloads).
const MaxRolloutTasks = 10000

// registerRollouts mounts /rollouts and /task-runs (docs/rollouts.md).
func (s *Server) registerRollouts(g *echo.Group) {
	g.POST("/rollouts", s.createRollout)
	g.GET("/rollouts", s.listRollouts)
	g.GET("/rollouts/:id", s.getRollout)
	g.GET("/rollouts/:id/tasks", s.listRolloutTasks)
	g.POST("/rollouts/:id/pause", s.pauseRollout)
	g.POST("/rollouts/:id/resume", s.resumeRollout)
	g.POST("/rollouts/:id/cancel", s.cancelRollout)
	g.GET("/task-runs/:id", s.getTaskRun)
	g.POST("/task-runs/:id/retry", s.retryTaskRun)
	g.POST("/task-runs/:id/skip", s.skipTaskRun)
	g.POST("/task-runs/:id/cancel", s.cancelTaskRun)
	g.POST("/task-runs/:id/result", s.taskRunResult)
}

// RolloutRequest is the body of POST /rollouts.
type RolloutRequest struct {
	Name          string        `json:"name"`
	ParallelLimit *int          `json:"parallel_limit"`
	Tasks         []TaskRequest `json:"tasks"`
	// Strategy is the rollout's progressive delivery (docs/progressive.md); optional.
	Strategy *domain.Strategy `json:"strategy,omitempty"`
}

// TaskRequest is one task of a new rollout.
type TaskRequest struct {
	Database string          `json:"database"`
	Type     domain.TaskType `json:"type"`
	Version  string          `json:"version"`
	RunAt    *string         `json:"run_at,omitempty"`
	Executor domain.Executor `json:"executor"`
	Payload  json.RawMessage `json:"payload,omitempty"`
}

// RolloutView is a rollout as the API shows it. Status is the store's derived status (the
// rollout_summaries view, the one definition shared with the CLI and the dashboard):
// RUNNING or PAUSED while a task is active, then DONE, FAILED or CANCELED. A new rollout's
// tasks start PENDING; pausing keeps them PENDING with the waiting cause "rollout_paused"
// and stops claims.
type RolloutView struct {
	ID            int64            `json:"id"`
	Name          string           `json:"name"`
	ParallelLimit int32            `json:"parallel_limit"`
	Status        string           `json:"status"`
	Counts        map[string]int64 `json:"counts"`
	Progress      Progress         `json:"progress"`
	CreatedAt     time.Time        `json:"created_at"`
	UpdatedAt     time.Time        `json:"updated_at"`
	// StatusReason says why the engine paused or canceled the rollout (an abort
	// threshold, a failed wave) or who paused it; empty otherwise.
	StatusReason string `json:"status_reason"`
	// Strategy is the rollout's strategy as given (null: none); Wave is the open wave and
	// how many there are.
	Strategy *domain.Strategy `json:"strategy"`
	Wave     WaveProgress     `json:"wave"`
	// GET /rollouts/{id} (and the freeze routes) add the waves, the freeze in force on the
	// rollout (its own or the global one) and its freeze history.
	Waves         []WaveView   `json:"waves,omitempty"`
	Frozen        *FreezeView  `json:"frozen,omitempty"`
	FreezeHistory []FreezeView `json:"freeze_history,omitempty"`
}

// WaveProgress is a rollout's open wave (the last whose tasks may start) of its count.
type WaveProgress struct {
	Open  int32 `json:"open"`
	Count int32 `json:"count"`
}

// Progress is how far a rollout is: finished counts DONE, SKIPPED, FAILED and CANCELED tasks.
type Progress struct {
	Total    int64   `json:"total"`
	Finished int64   `json:"finished"`
	Percent  float64 `json:"percent"`
}

// TaskRunView is a task run as the API shows it (a sql task's DSN is worker configuration
// and never appears here).
type TaskRunView struct {
	ID           int64                `json:"id"`
	RolloutID    int64                `json:"rollout_id"`
	Database     string               `json:"database"`
	Type         domain.TaskType      `json:"type"`
	Version      string               `json:"version"`
	Status       domain.TaskRunStatus `json:"status"`
	Wave         int32                `json:"wave"`
	WaitingCause json.RawMessage      `json:"waiting_cause"`
	RunAt        *time.Time           `json:"run_at"`
	Executor     domain.Executor      `json:"executor"`
	Payload      json.RawMessage      `json:"payload"`
	Attempt      int32                `json:"attempt"`
	Error        string               `json:"error"`
	Output       json.RawMessage      `json:"output"`
	StartedAt    *time.Time           `json:"started_at"`
	FinishedAt   *time.Time           `json:"finished_at"`
	CreatedAt    time.Time            `json:"created_at"`
}

func validateRollout(req *RolloutRequest) ([]store.NewTaskRun, error) {
	req.Name = strings.TrimSpace(req.Name)
	if req.Name == "" || len(req.Name) > 200 {
		return nil, BadRequest("name", "is required, at most 200 characters")
	}
	if req.ParallelLimit == nil {
		return nil, BadRequest("parallel_limit", "is required (a positive integer)")
	}
	if *req.ParallelLimit <= 0 || *req.ParallelLimit > 100000 {
		return nil, BadRequest("parallel_limit", "must be from 1 to 100000, got %d", *req.ParallelLimit)
	}
	if len(req.Tasks) == 0 {
		return nil, BadRequest("tasks", "at least one task is required")
	}
	if len(req.Tasks) > MaxRolloutTasks {
		return nil, BadRequest("tasks", "at most %d tasks per rollout, got %d", MaxRolloutTasks, len(req.Tasks))
	}
	out := make([]store.NewTaskRun, 0, len(req.Tasks))
	for i, t := range req.Tasks {
		f := func(name string) string { return fmt.Sprintf("tasks[%d].%s", i, name) }
		if strings.TrimSpace(t.Database) == "" || len(t.Database) > 200 {
			return nil, BadRequest(f("database"), "is required, at most 200 characters")
		}
		if !t.Type.Valid() {
			return nil, BadRequest(f("type"), "must be DDL, SDL, DML or OTHER, got %q", t.Type)
		}
		key, err := version.Parse(t.Version)
		if err != nil {
			return nil, BadRequest(f("version"), "%v", err)
		}
		nt := store.NewTaskRun{Database: t.Database, Type: t.Type, Version: t.Version, VersionKey: key, Executor: t.Executor}
		if t.RunAt != nil {
			at, err := time.Parse(time.RFC3339Nano, *t.RunAt)
			if err != nil {
				return nil, BadRequest(f("run_at"), "want an RFC 3339 time such as 2026-01-02T15:04:05Z, got %q", *t.RunAt)
			}
			at = at.UTC()
			nt.RunAt = &at
		}
		payload := bytes.TrimSpace(t.Payload)
		if len(payload) == 0 || string(payload) == "null" {
			payload = []byte("{}")
		}
		if payload[0] != '{' {
			return nil, BadRequest(f("payload"), "must be a JSON object")
		}
		if err := domain.ValidatePayload(t.Executor, payload); err != nil {
			var pe *domain.PayloadError
			if errors.As(err, &pe) {
				field := f("payload")
				if pe.Field != "" {
					field += "." + pe.Field
				}
				return nil, BadRequest(field, "%s", pe.Msg)
			}
			return nil, BadRequest(f("executor"), "%v", err)
		}
		nt.Payload = json.RawMessage(payload)
		out = append(out, nt)
	}
	return out, nil
}

func (s *Server) createRollout(c echo.Context) error {
	var req RolloutRequest
	if err := Decode(c, &req, false); err != nil {
		return err
	}
	tasks, err := validateRollout(&req)
	if err != nil {
		return err
	}
	if err := s.checkExecutorURLs(tasks); err != nil {
		return err
	}
	if err := s.validateStrategy(req.Strategy, tasks); err != nil {
		return err
	}
	if err := mayRunCode(PrincipalOf(c), req.Strategy, tasks); err != nil {
		return err
	}
	ctx := c.Request().Context()
	r, err := s.Store.CreateRolloutWith(ctx, store.NewRollout{Name: req.Name, ParallelLimit: int32(*req.ParallelLimit), Strategy: req.Strategy, Tasks: tasks}) // #nosec G115 -- validateRollout bounds parallel_limit to 1..100000
	if err != nil {
		return err
	}
	// The rows are the truth: if Temporal is unreachable now, the promoter's next round
	// (its safety poll, or a worker's start) nudges the rollout.
	if err := s.Starter.StartRollout(ctx, r.ID); err != nil {
		s.Logf("rollouts: %v", err)
	}
	s.nudgePromoter(ctx)
	view, err := s.rolloutDetailView(ctx, r.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, view)
}

// checkExecutorURLs refuses an http executor's URL that names an address the outbound rule
// refuses (TICKGATE_HTTP_ALLOW), as an http action's is: the worker would refuse it again
// at the call.
func (s *Server) checkExecutorURLs(tasks []store.NewTaskRun) error {
	for i, t := range tasks {
		if t.Executor != domain.ExecutorHTTP {
			continue
		}
		var p domain.HTTPPayload
		if err := json.Unmarshal(t.Payload, &p); err != nil {
			return BadRequest(fmt.Sprintf("tasks[%d].payload", i), "%v", err)
		}
		if err := s.HTTPAllow.CheckURL(p.URL); err != nil {
			return BadRequest(fmt.Sprintf("tasks[%d].payload.url", i), "%v", err)
		}
	}
	return nil
}

// mayRunCode refuses a rollout that would run code on its targets — a task whose executor
// runs its payload there (sql, http) or a wave's SQL probe — unless the caller's role may
// (deployer, admin): an operator keeps noop and external tasks. 403 naming the first such
// field.
func mayRunCode(p *Principal, strategy *domain.Strategy, tasks []store.NewTaskRun) error {
	role := domain.TokenRole("anonymous")
	if p != nil {
		role = p.Role
	}
	if role.RunsCodeOnTargets() {
		return nil
	}
	for i, t := range tasks {
		if t.Executor.RunsCode() {
			return NewProblem(http.StatusForbidden, fmt.Sprintf("tasks[%d].executor", i),
				"a %s token may not create a %s task: it runs code on the target; that needs a deployer or admin token", role, t.Executor)
		}
	}
	if strategy != nil && strategy.Health != nil && strategy.Health.SQL != "" {
		return NewProblem(http.StatusForbidden, "strategy.health.sql",
			"a %s token may not give an SQL health probe: it runs on the target databases; that needs a deployer or admin token", role)
	}
	return nil
}

func (s *Server) nudgePromoter(ctx context.Context) {
	if err := s.Starter.NudgePromoter(ctx); err != nil {
		s.Logf("rollouts: %v", err)
	}
}

// rolloutView reads a rollout's summary and shows it.
func (s *Server) rolloutView(ctx context.Context, id int64) (RolloutView, error) {
	r, err := s.Store.GetRolloutSummary(ctx, id)
	if err != nil {
		return RolloutView{}, err
	}
	return newRolloutView(r), nil
}

// newRolloutView shows a rollout summary; its status is the store's, never recomputed here.
func newRolloutView(r store.RolloutSummary) RolloutView {
	v := RolloutView{ID: r.ID, Name: r.Name, ParallelLimit: r.ParallelLimit, Status: string(r.Status), Counts: r.Counts,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), StatusReason: r.StatusReason, Strategy: r.Strategy,
		Wave: WaveProgress{Open: r.OpenWave, Count: r.WaveCount}}
	for st, n := range r.Counts {
		v.Progress.Total += n
		switch domain.TaskRunStatus(st) {
		case domain.TaskRunDone, domain.TaskRunSkipped, domain.TaskRunFailed, domain.TaskRunCanceled:
			v.Progress.Finished += n
		}
	}
	if v.Progress.Total > 0 {
		v.Progress.Percent = float64(int64(10000*v.Progress.Finished/v.Progress.Total)) / 100
	}
	return v
}

func taskRunView(t store.TaskRun) TaskRunView {
	utc := func(p *time.Time) *time.Time {
		if p == nil {
			return nil
		}
		u := p.UTC()
		return &u
	}
	raw := func(b []byte) json.RawMessage {
		if len(b) == 0 {
			return json.RawMessage("null")
		}
		return json.RawMessage(b)
	}
	return TaskRunView{
		ID: t.ID, RolloutID: t.RolloutID, Database: t.Database, Type: t.Type, Version: t.Version, Status: t.Status, Wave: t.Wave,
		WaitingCause: raw(t.WaitingCause), RunAt: utc(t.RunAt), Executor: t.Executor, Payload: raw(t.Payload),
		Attempt: t.Attempt, Error: t.Error, Output: raw(t.Output), StartedAt: utc(t.StartedAt),
		FinishedAt: utc(t.FinishedAt), CreatedAt: t.CreatedAt.UTC(),
	}
}

// rolloutErr maps the store's state error to 409.
func rolloutErr(err error) error {
	if errors.Is(err, store.ErrTaskState) {
		return Conflict("status", "%v", err)
	}
	return err
}

func (s *Server) getRollout(c echo.Context) error {
	id, err := pathID(c, "rollout")
	if err != nil {
		return err
	}
	v, err := s.rolloutDetailView(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// listRollouts pages through rollouts by id, filtered by ?status= (their derived status,
// a comma-separated list).
func (s *Server) listRollouts(c echo.Context) error {
	statuses, err := listValues(c, "status", rolloutStatuses, strings.ToUpper)
	if err != nil {
		return err
	}
	return listPage(c, idCursor, func(ctx context.Context, after int64, limit int) ([]store.RolloutSummary, error) {
		if len(statuses) > 0 {
			return s.Store.ListRolloutSummariesInStatus(ctx, statuses, after, limit)
		}
		return s.Store.ListRolloutSummaries(ctx, after, limit)
	}, newRolloutView, func(r store.RolloutSummary) int64 { return r.ID })
}

func (s *Server) listRolloutTasks(c echo.Context) error {
	id, err := pathID(c, "rollout")
	if err != nil {
		return err
	}
	statuses, err := listValues(c, "status", domain.TaskRunStatuses, strings.ToUpper)
	if err != nil {
		return err
	}
	return listPage(c, idCursor, func(ctx context.Context, after int64, limit int) ([]store.TaskRun, error) {
		if _, err := s.Store.GetRollout(ctx, id); err != nil {
			return nil, err
		}
		return s.Store.ListTaskRuns(ctx, id, after, statuses, limit)
	}, taskRunView, func(t store.TaskRun) int64 { return t.ID })
}

// emptyBody accepts an empty body or {} on action POSTs.
func emptyBody(c echo.Context) error {
	var req struct{}
	return Decode(c, &req, true)
}

func (s *Server) pauseRollout(c echo.Context) error {
	return s.setRolloutStatus(c, domain.RolloutPaused, domain.RolloutRunning)
}

// resumeRollout resumes a paused rollout (an operator's pause or the engine's): a wave that
// failed its health checks runs them again, and the abort threshold counts afresh.
func (s *Server) resumeRollout(c echo.Context) error {
	return s.setRolloutStatus(c, domain.RolloutRunning, domain.RolloutPaused)
}

func (s *Server) setRolloutStatus(c echo.Context, to, from domain.RolloutStatus) error {
	id, err := pathID(c, "rollout")
	if err != nil {
		return err
	}
	if err := emptyBody(c); err != nil {
		return err
	}
	ctx := c.Request().Context()
	reason := ""
	if to == domain.RolloutPaused {
		reason = "paused by " + actor(c).Label
	}
	if _, err := s.Store.SetRolloutStatusFor(ctx, id, to, reason, from); err != nil {
		return rolloutErr(err)
	}
	if to == domain.RolloutRunning {
		// AVAILABLE tasks left from before the pause are claimed at once.
		if err := s.Starter.NudgeRollouts(ctx, []int64{id}); err != nil {
			s.Logf("rollouts: %v", err)
		}
	}
	s.nudgePromoter(ctx) // new waiting causes ("rollout_paused"), or promotion after a resume
	v, err := s.rolloutDetailView(ctx, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

func (s *Server) cancelRollout(c echo.Context) error {
	id, err := pathID(c, "rollout")
	if err != nil {
		return err
	}
	if err := emptyBody(c); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, _, err := s.Store.CancelRolloutFor(ctx, id, "canceled by "+actor(c).Label); err != nil {
		return rolloutErr(err)
	}
	if err := s.Starter.StopRollout(ctx, id); err != nil {
		s.Logf("rollouts: %v", err)
	}
	s.nudgePromoter(ctx)
	v, err := s.rolloutView(ctx, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

func (s *Server) getTaskRun(c echo.Context) error {
	id, err := pathID(c, "task run")
	if err != nil {
		return err
	}
	t, err := s.Store.GetTaskRun(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, taskRunView(t))
}

func (s *Server) retryTaskRun(c echo.Context) error {
	id, err := pathID(c, "task run")
	if err != nil {
		return err
	}
	if err := emptyBody(c); err != nil {
		return err
	}
	ctx := c.Request().Context()
	t, err := s.Store.RetryTaskRun(ctx, id)
	if err != nil {
		return rolloutErr(err)
	}
	// The rollout's workflow may have ended with its last task: make sure it runs.
	if err := s.Starter.NudgeRollouts(ctx, []int64{t.RolloutID}); err != nil {
		s.Logf("rollouts: %v", err)
	}
	s.nudgePromoter(ctx)
	return c.JSON(http.StatusOK, taskRunView(t))
}

func (s *Server) skipTaskRun(c echo.Context) error {
	id, err := pathID(c, "task run")
	if err != nil {
		return err
	}
	if err := emptyBody(c); err != nil {
		return err
	}
	ctx := c.Request().Context()
	t, err := s.Store.SkipTaskRun(ctx, id)
	if err != nil {
		return rolloutErr(err)
	}
	s.nudgePromoter(ctx) // a skipped task no longer blocks the version gate
	return c.JSON(http.StatusOK, taskRunView(t))
}

func (s *Server) cancelTaskRun(c echo.Context) error {
	id, err := pathID(c, "task run")
	if err != nil {
		return err
	}
	if err := emptyBody(c); err != nil {
		return err
	}
	ctx := c.Request().Context()
	t, err := s.Store.CancelTaskRun(ctx, id)
	if errors.Is(err, store.ErrTaskState) {
		cur, gerr := s.Store.GetTaskRun(ctx, id)
		if gerr != nil {
			return gerr
		}
		if cur.Status != domain.TaskRunRunning {
			return rolloutErr(err)
		}
		// A RUNNING task is canceled in Postgres first (its executor's late result is then
		// ignored); its batch stops the executor at its next status check, and the workflow
		// stops waiting for an external task's result.
		t, err = s.Store.CancelRunningTaskRun(ctx, id)
		if err != nil {
			return rolloutErr(err)
		}
		if err := s.Starter.CancelRunningTaskRun(ctx, cur.RolloutID, id); err != nil {
			s.Logf("rollouts: %v", err)
		}
	}
	if err != nil {
		return rolloutErr(err)
	}
	s.nudgePromoter(ctx)
	return c.JSON(http.StatusOK, taskRunView(t))
}

// TaskResultRequest is the body of POST /task-runs/{id}/result: a task run's result.
type TaskResultRequest = domain.TaskRunResult

// validateTaskResult takes a reported result: DONE or FAILED, with an error of a bounded size.
func validateTaskResult(req TaskResultRequest) error {
	if req.Status != domain.TaskRunDone && req.Status != domain.TaskRunFailed {
		return BadRequest("status", "must be DONE or FAILED, got %q", req.Status)
	}
	if len(req.Error) > 10000 {
		return BadRequest("error", "at most 10000 characters")
	}
	return nil
}

func (s *Server) taskRunResult(c echo.Context) error {
	id, err := pathID(c, "task run")
	if err != nil {
		return err
	}
	var req TaskResultRequest
	if err := Decode(c, &req, false); err != nil {
		return err
	}
	if err := validateTaskResult(req); err != nil {
		return err
	}
	ctx := c.Request().Context()
	t, err := s.Store.GetTaskRun(ctx, id)
	if err != nil {
		return err
	}
	if t.Executor != domain.ExecutorExternal {
		return Conflict("executor", "task run %d uses the %s executor; only external tasks take a reported result", id, t.Executor)
	}
	if t.Status != domain.TaskRunRunning && t.Status != domain.TaskRunAvailable {
		return Conflict("status", "task run %d is %s; a result is taken only while it is AVAILABLE or RUNNING", id, t.Status)
	}
	res := workflows.ExternalTaskResult{TaskID: id, TaskRunResult: req}
	if err := s.Starter.SendExternalTaskResult(ctx, t.RolloutID, res); err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, taskRunView(t))
}
