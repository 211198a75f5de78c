package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store"
)

// Progressive delivery over HTTP (docs/progressive.md): a rollout's strategy is validated
// here; its waves are shown with the rollout; freezes are set, lifted and listed with
// their history.

// registerProgressive mounts /freeze and a rollout's /freeze and /unfreeze.
func (s *Server) registerProgressive(g *echo.Group) {
	g.GET("/freeze", s.getFreeze)
	g.POST("/freeze", s.setGlobalFreeze)
	g.DELETE("/freeze", s.liftGlobalFreeze)
	g.POST("/rollouts/:id/freeze", s.freezeRollout)
	g.POST("/rollouts/:id/unfreeze", s.unfreezeRollout)
}

// validateStrategy checks a rollout's strategy against its tasks' databases; errors name
// the field under "strategy". A health check's URL must pass the outbound rule
// (TICKGATE_HTTP_ALLOW) on its literal host.
func (s *Server) validateStrategy(st *domain.Strategy, tasks []store.NewTaskRun) error {
	if st == nil {
		return nil
	}
	var dbs []string
	seen := map[string]bool{}
	for _, t := range tasks {
		if !seen[t.Database] {
			seen[t.Database] = true
			dbs = append(dbs, t.Database)
		}
	}
	if err := st.Validate(dbs); err != nil {
		var fe *domain.FieldError
		if errors.As(err, &fe) {
			return BadRequest("strategy."+fe.Field, "%s", fe.Msg)
		}
		return BadRequest("strategy", "%v", err)
	}
	if st.Health != nil && st.Health.HTTP != "" {
		if err := s.HTTPAllow.CheckURL(st.Health.HTTP); err != nil {
			return BadRequest("strategy.health.http", "%v", err)
		}
	}
	return nil
}

// WaveView is one wave of a rollout: its databases and where it stands.
type WaveView struct {
	Wave       int32                `json:"wave"`
	Databases  []string             `json:"databases"`
	Status     string               `json:"status"`
	Reason     string               `json:"reason,omitempty"`
	Health     []store.HealthResult `json:"health"`
	StartedAt  *time.Time           `json:"started_at"`
	FinishedAt *time.Time           `json:"finished_at"`
	BakeUntil  *time.Time           `json:"bake_until"`
	CheckedAt  *time.Time           `json:"checked_at"`
	PassedAt   *time.Time           `json:"passed_at"`
}

func waveView(w store.RolloutWave) WaveView {
	v := WaveView{Wave: w.Wave, Databases: w.Databases, Status: w.Status, Reason: w.Reason, Health: []store.HealthResult{},
		StartedAt: utcp(w.StartedAt), FinishedAt: utcp(w.FinishedAt), BakeUntil: utcp(w.BakeUntil),
		CheckedAt: utcp(w.CheckedAt), PassedAt: utcp(w.PassedAt)}
	_ = json.Unmarshal(w.Health, &v.Health)
	return v
}

func utcp(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// FreezeRequest is the body of POST /freeze and POST /rollouts/{id}/freeze.
type FreezeRequest struct {
	Reason string `json:"reason"`
}

// FreezeView is a freeze, in force or lifted.
type FreezeView struct {
	ID        int64      `json:"id"`
	Scope     string     `json:"scope"` // "global" or "rollout"
	RolloutID *int64     `json:"rollout_id,omitempty"`
	Reason    string     `json:"reason"`
	FrozenBy  string     `json:"frozen_by"`
	FrozenAt  time.Time  `json:"frozen_at"`
	LiftedBy  *string    `json:"lifted_by"`
	LiftedAt  *time.Time `json:"lifted_at"`
}

func freezeView(f store.Freeze) FreezeView {
	v := FreezeView{ID: f.ID, Scope: "global", RolloutID: f.RolloutID, Reason: f.Reason, FrozenBy: f.FrozenBy,
		FrozenAt: f.FrozenAt.UTC(), LiftedBy: f.LiftedBy, LiftedAt: utcp(f.LiftedAt)}
	if f.RolloutID != nil {
		v.Scope = "rollout"
	}
	return v
}

func freezeViews(fs []store.Freeze) []FreezeView {
	out := make([]FreezeView, len(fs))
	for i, f := range fs {
		out[i] = freezeView(f)
	}
	return out
}

// FreezeStateView answers GET /freeze: the global freeze in force (null: none), the
// rollouts frozen one by one, and the history of the global freezes, newest first.
type FreezeStateView struct {
	Frozen         *FreezeView  `json:"frozen"`
	RolloutsFrozen []FreezeView `json:"rollouts_frozen"`
	History        []FreezeView `json:"history"`
}

// freezeHistoryLength is how many past freezes a view lists.
const freezeHistoryLength = 50

// actor names the caller for the history: the token's id and note (or role).
func actor(c echo.Context) store.Actor {
	p := PrincipalOf(c)
	if p == nil {
		return store.Actor{Label: "anonymous"}
	}
	name := p.Note
	if name == "" {
		name = string(p.Role)
	}
	id := p.TokenID
	return store.Actor{TokenID: &id, Label: fmt.Sprintf("token %d (%s)", p.TokenID, name)}
}

func decodeFreeze(c echo.Context) (string, error) {
	var req FreezeRequest
	if err := Decode(c, &req, false); err != nil {
		return "", err
	}
	req.Reason = strings.TrimSpace(req.Reason)
	if req.Reason == "" || len(req.Reason) > 1000 {
		return "", BadRequest("reason", "is required (why nothing may start), at most 1000 characters")
	}
	return req.Reason, nil
}

// freezeErr maps the store's freeze errors: one in force already, none to lift.
func freezeErr(err error) error {
	switch {
	case errors.Is(err, store.ErrConflict):
		return Conflict("reason", "%v", err)
	case errors.Is(err, store.ErrNotFrozen):
		return Conflict("", "%v", err)
	}
	return err
}

func (s *Server) freezeState(ctx context.Context) (FreezeStateView, error) {
	active, err := s.Store.ActiveFreezes(ctx)
	if err != nil {
		return FreezeStateView{}, err
	}
	v := FreezeStateView{RolloutsFrozen: []FreezeView{}}
	for _, f := range active {
		fv := freezeView(f)
		if f.RolloutID == nil {
			v.Frozen = &fv
		} else {
			v.RolloutsFrozen = append(v.RolloutsFrozen, fv)
		}
	}
	hist, err := s.Store.FreezeHistory(ctx, nil, 0, freezeHistoryLength)
	if err != nil {
		return FreezeStateView{}, err
	}
	v.History = freezeViews(hist)
	return v, nil
}

func (s *Server) getFreeze(c echo.Context) error {
	v, err := s.freezeState(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// setGlobalFreeze: nothing new starts in any rollout or device task until it is lifted.
func (s *Server) setGlobalFreeze(c echo.Context) error {
	reason, err := decodeFreeze(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.Store.SetFreeze(ctx, nil, reason, actor(c)); err != nil {
		return freezeErr(err)
	}
	s.nudgePromoter(ctx) // the waiting causes say so
	v, err := s.freezeState(ctx)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, v)
}

func (s *Server) liftGlobalFreeze(c echo.Context) error {
	if err := emptyBody(c); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.Store.LiftFreeze(ctx, nil, actor(c)); err != nil {
		return freezeErr(err)
	}
	s.afterUnfreeze(ctx, nil)
	v, err := s.freezeState(ctx)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// afterUnfreeze nudges what a freeze held: the rollouts with AVAILABLE tasks left unclaimed
// (one rollout, or all), a promotion round, and the device dispatcher.
func (s *Server) afterUnfreeze(ctx context.Context, rolloutID *int64) {
	ids := []int64{}
	if rolloutID != nil {
		ids = append(ids, *rolloutID)
	} else if got, err := s.Store.RolloutsWithAvailableTasks(ctx); err == nil {
		ids = got
	} else {
		s.Logf("unfreeze: %v", err)
	}
	if len(ids) > 0 && s.Starter != nil {
		if err := s.Starter.NudgeRollouts(ctx, ids); err != nil {
			s.Logf("unfreeze: %v", err)
		}
	}
	s.nudgePromoter(ctx)
	if rolloutID == nil && s.Starter != nil {
		if err := s.Starter.CheckDispatcher(ctx); err != nil {
			s.Logf("unfreeze: %v", err)
		}
	}
}

func (s *Server) freezeRollout(c echo.Context) error {
	id, err := pathID(c, "rollout")
	if err != nil {
		return err
	}
	reason, err := decodeFreeze(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.Store.SetFreeze(ctx, &id, reason, actor(c)); err != nil {
		return freezeErr(err)
	}
	s.nudgePromoter(ctx)
	v, err := s.rolloutDetailView(ctx, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

func (s *Server) unfreezeRollout(c echo.Context) error {
	id, err := pathID(c, "rollout")
	if err != nil {
		return err
	}
	if err := emptyBody(c); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.Store.LiftFreeze(ctx, &id, actor(c)); err != nil {
		return freezeErr(err)
	}
	s.afterUnfreeze(ctx, &id)
	v, err := s.rolloutDetailView(ctx, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// rolloutDetailView is a rollout as GET /rollouts/{id} shows it: its summary, its waves,
// the freeze in force on it (its own, else the global one) and its freeze history.
func (s *Server) rolloutDetailView(ctx context.Context, id int64) (RolloutView, error) {
	v, err := s.rolloutView(ctx, id)
	if err != nil {
		return RolloutView{}, err
	}
	if v.Strategy != nil && len(v.Strategy.Waves) > 0 {
		waves, err := s.Store.ListRolloutWaves(ctx, id)
		if err != nil {
			return RolloutView{}, err
		}
		v.Waves = make([]WaveView, len(waves))
		for i, w := range waves {
			v.Waves[i] = waveView(w)
		}
	}
	own, err := s.Store.ActiveFreeze(ctx, &id)
	if err != nil {
		return RolloutView{}, err
	}
	if own == nil {
		if own, err = s.Store.ActiveFreeze(ctx, nil); err != nil {
			return RolloutView{}, err
		}
	}
	if own != nil {
		fv := freezeView(*own)
		v.Frozen = &fv
	}
	hist, err := s.Store.FreezeHistory(ctx, &id, 0, freezeHistoryLength)
	if err != nil {
		return RolloutView{}, err
	}
	v.FreezeHistory = freezeViews(hist)
	return v, nil
}

// deviceTaskWaitingCause says what holds the running device task's sends back now, in
// words ("" when nothing does): the global freeze, its windows, its rate.
func (s *Server) deviceTaskWaitingCause(ctx context.Context, id int64) (string, error) {
	h, err := s.Store.DeviceTaskGatesOf(ctx, id)
	if err != nil {
		return "", err
	}
	switch {
	case h.Frozen:
		f, err := s.Store.ActiveFreeze(ctx, nil)
		if err != nil || f == nil {
			return "frozen", err
		}
		return fmt.Sprintf("frozen (everything) by %s: %s", f.FrozenBy, f.Reason), nil
	case h.OutsideWindows && h.OpensAt != nil:
		return "outside every window; the next opens " + h.OpensAt.UTC().Format("2006-01-02 15:04") + " UTC", nil
	case h.OutsideWindows:
		return "outside every window", nil
	case h.Rate > 0 && h.RateRoom <= 0:
		return fmt.Sprintf("rate: %d executions sent in the last minute", h.Rate), nil
	}
	return "", nil
}
