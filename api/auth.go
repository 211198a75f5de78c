package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store"
)

// Permission is what a route requires of the caller's token.
type Permission int

// Permissions, from least to most guarded. Agent permissions are scoped: the token's PC
// must own the PC or task_device the route names.
const (
	PermPublic         Permission = iota + 1 // no token (health checks, the dashboard's static files)
	PermRead                                 // viewer, operator, deployer, admin
	PermWrite                                // operator, deployer, admin: create and change (what runs code on targets: deployer, admin; see mayRunCode)
	PermAdmin                                // admin only: tokens
	PermAgentPC                              // an agent of PC :name, or admin
	PermAgentExecution                       // an agent of the PC running task_device :id, or admin
	// PermAgentResult is PermAgentExecution checked in two steps: the middleware checks the
	// role, and the statement that records the result checks the PC (store.SuccessReport's
	// AgentPC), so a result costs no statement of its own for it.
	PermAgentResult
)

func (p Permission) String() string {
	switch p {
	case PermPublic:
		return "public"
	case PermRead:
		return "read"
	case PermWrite:
		return "write"
	case PermAdmin:
		return "admin"
	case PermAgentPC, PermAgentExecution, PermAgentResult:
		return "agent"
	}
	return "unknown"
}

// RoutePermissions maps "METHOD path" (Echo's route path, c.Path()) to the permission the
// route needs. A registered route missing here is refused to everyone (default deny); a
// test checks that every route of the application is listed.
var RoutePermissions = map[string]Permission{
	"GET /healthz":             PermPublic,
	"GET /readyz":              PermPublic,
	"GET /":                    PermPublic,
	"GET /ui/*":                PermPublic,
	"GET /metrics":             PermRead,
	"GET /api/v1/openapi.yaml": PermRead,

	"POST /api/v1/schedules":                     PermWrite,
	"POST /api/v1/schedules/bulk":                PermWrite,
	"GET /api/v1/schedules":                      PermRead,
	"GET /api/v1/schedules/:name":                PermRead,
	"PATCH /api/v1/schedules/:name":              PermWrite,
	"PUT /api/v1/schedules/:name":                PermWrite,
	"DELETE /api/v1/schedules/:name":             PermWrite,
	"GET /api/v1/schedules/:name/runs":           PermRead,
	"POST /api/v1/schedules/pause":               PermWrite,
	"POST /api/v1/schedules/resume":              PermWrite,
	"GET /api/v1/schedules/:name/history":        PermRead,
	"POST /api/v1/schedules/:name/pause":         PermWrite,
	"POST /api/v1/schedules/:name/resume":        PermWrite,
	"POST /api/v1/schedules/:name/trigger":       PermWrite,
	"POST /api/v1/schedules/:name/reschedule":    PermWrite,
	"POST /api/v1/schedules/:name/backfill":      PermWrite,
	"POST /api/v1/schedules/:name/secret":        PermWrite,
	"POST /api/v1/runs/:id/redrive":              PermWrite,
	"POST /api/v1/runs/redrive":                  PermWrite,
	"POST /api/v1/schedules/preview":             PermRead,
	"POST /api/v1/calendars":                     PermWrite,
	"GET /api/v1/calendars":                      PermRead,
	"GET /api/v1/calendars/:name":                PermRead,
	"PUT /api/v1/calendars/:name":                PermWrite,
	"DELETE /api/v1/calendars/:name":             PermWrite,
	"GET /api/v1/schedules/:name/stats":          PermRead,
	"GET /api/v1/stats/overview":                 PermRead,
	"GET /api/v1/runs":                           PermRead,
	"GET /api/v1/pcs/:name/slots":                PermRead,
	"GET /api/v1/events":                         PermRead,
	"POST /api/v1/rollouts":                      PermWrite,
	"GET /api/v1/rollouts":                       PermRead,
	"GET /api/v1/rollouts/:id":                   PermRead,
	"GET /api/v1/rollouts/:id/tasks":             PermRead,
	"POST /api/v1/rollouts/:id/pause":            PermWrite,
	"POST /api/v1/rollouts/:id/resume":           PermWrite,
	"POST /api/v1/rollouts/:id/cancel":           PermWrite,
	"GET /api/v1/task-runs/:id":                  PermRead,
	"GET /api/v1/freeze":                         PermRead,
	"POST /api/v1/freeze":                        PermWrite,
	"DELETE /api/v1/freeze":                      PermWrite,
	"POST /api/v1/rollouts/:id/freeze":           PermWrite,
	"POST /api/v1/rollouts/:id/unfreeze":         PermWrite,
	"POST /api/v1/task-runs/:id/retry":           PermWrite,
	"POST /api/v1/task-runs/:id/skip":            PermWrite,
	"POST /api/v1/task-runs/:id/cancel":          PermWrite,
	"POST /api/v1/task-runs/:id/result":          PermWrite,
	"POST /api/v1/pcs":                           PermWrite,
	"GET /api/v1/pcs":                            PermRead,
	"GET /api/v1/pcs/:name":                      PermRead,
	"GET /api/v1/devices":                        PermRead,
	"POST /api/v1/devices":                       PermWrite,
	"GET /api/v1/devices/:serial":                PermRead,
	"PATCH /api/v1/devices/:serial":              PermWrite,
	"POST /api/v1/tasks":                         PermWrite,
	"GET /api/v1/tasks":                          PermRead,
	"GET /api/v1/tasks/:id":                      PermRead,
	"GET /api/v1/tasks/:id/devices":              PermRead,
	"POST /api/v1/tasks/:id/cancel":              PermWrite,
	"GET /api/v1/task-devices/:id":               PermRead,
	"GET /api/v1/task-devices/:id/events":        PermRead,
	"POST /api/v1/agent/pcs/:name/claim":         PermAgentPC,
	"POST /api/v1/agent/task-devices/:id/ack":    PermAgentExecution,
	"POST /api/v1/agent/task-devices/:id/result": PermAgentResult,
	"POST /api/v1/tokens":                        PermAdmin,
	"GET /api/v1/tokens":                         PermAdmin,
	"DELETE /api/v1/tokens/:id":                  PermAdmin,
}

// Principal is the authenticated caller.
type Principal struct {
	TokenID int64
	Role    domain.TokenRole
	PC      string // agent tokens only
	Note    string // the token's note, naming who holds it
}

// Name is who the caller is in a schedule's history: the token's note and id ("ops-alice
// (token 7)"), or the id alone for a token without a note.
func (p *Principal) Name() string {
	if p == nil {
		return "anonymous"
	}
	if p.Note == "" {
		return fmt.Sprintf("token %d", p.TokenID)
	}
	return fmt.Sprintf("%s (token %d)", p.Note, p.TokenID)
}

const principalKey = "tickgate.principal"

// PrincipalOf returns the caller of an authenticated request (nil on public routes).
func PrincipalOf(c echo.Context) *Principal {
	p, _ := c.Get(principalKey).(*Principal)
	return p
}

// roleGrants says which plain permissions a role has; agent permissions are checked apart.
func roleGrants(role domain.TokenRole, p Permission) bool {
	switch role {
	case domain.RoleAdmin:
		return true
	case domain.RoleOperator, domain.RoleDeployer:
		return p == PermRead || p == PermWrite
	case domain.RoleViewer:
		return p == PermRead
	}
	return false
}

// authenticate is the middleware that enforces RoutePermissions. It runs after routing, so
// c.Path() is the matched route; a request that matched no route goes on to Echo's 404/405
// once a valid token is shown.
func (s *Server) authenticate(routes func() []*echo.Route) echo.MiddlewareFunc {
	var once sync.Once
	var registered map[string]bool
	isRoute := func(key string) bool {
		once.Do(func() {
			registered = map[string]bool{}
			for _, r := range routes() {
				registered[r.Method+" "+r.Path] = true
			}
		})
		return registered[key]
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			method := c.Request().Method
			if method == http.MethodHead {
				method = http.MethodGet
			}
			key := method + " " + c.Path()
			perm, known := RoutePermissions[key]
			if known && perm == PermPublic {
				return next(c)
			}
			p, err := s.principal(c)
			if err != nil {
				return err
			}
			c.Set(principalKey, p)
			if !known {
				if isRoute(key) {
					return NewProblem(http.StatusForbidden, "", "route %s has no permission rule: refused", key)
				}
				return next(c) // no such route: Echo answers 404 or 405
			}
			if err := s.authorize(c, p, perm); err != nil {
				return err
			}
			return next(c)
		}
	}
}

// principal reads and checks the bearer token. A failed check costs bounded work
// (auth_failures.go): a token known to be bad costs no statement, and a client address
// that failed too often is answered 429 for any token this process does not already know.
func (s *Server) principal(c echo.Context) (*Principal, error) {
	h := c.Request().Header.Get(echo.HeaderAuthorization)
	scheme, token, ok := strings.Cut(h, " ")
	if h == "" {
		return nil, unauthorized(c, "an Authorization: Bearer token is required")
	}
	token = strings.TrimSpace(token)
	wellFormed := ok && strings.EqualFold(scheme, "Bearer") && token != ""
	addr := clientKey(c)
	var row store.Token
	known := false
	if wellFormed {
		row, known = s.knownToken(token)
	}
	if !known {
		if wait, blocked := s.authGuard.blocked(addr); blocked {
			return nil, tooManyFailures(c, wait)
		}
	}
	if !wellFormed {
		s.authGuard.failed(addr)
		return nil, unauthorized(c, "the Authorization header must be \"Bearer <token>\"")
	}
	if !known {
		var err error
		row, err = s.authenticateToken(c.Request().Context(), token)
		if errors.Is(err, store.ErrNotFound) {
			s.authGuard.failed(addr)
			return nil, unauthorized(c, "unknown or revoked token")
		}
		if err != nil {
			return nil, err
		}
	}
	p := &Principal{TokenID: row.ID, Role: row.Role, Note: row.Note}
	if row.Pc != nil {
		p.PC = *row.Pc
	}
	return p, nil
}

// knownToken answers a token from the process's cache when it holds a fresh one
// (store.Listener's freshness rule), at no statement.
func (s *Server) knownToken(token string) (store.Token, bool) {
	if s.Listener == nil {
		return store.Token{}, false
	}
	return s.Listener.Known(token)
}

// authenticateToken reads a token from the process's cache when it has a fresh one, else
// from the database; a token found bad is remembered (authGuard.rememberBad), so showing
// it again costs no statement.
func (s *Server) authenticateToken(ctx context.Context, token string) (store.Token, error) {
	if s.authGuard.knownBad(token) {
		return store.Token{}, store.ErrNotFound
	}
	var row store.Token
	var err error
	if s.Listener != nil {
		row, err = s.Listener.Authenticate(ctx, s.Store, token)
	} else {
		row, err = s.Store.Authenticate(ctx, token)
	}
	if errors.Is(err, store.ErrNotFound) {
		s.authGuard.rememberBad(token)
	}
	return row, err
}

func unauthorized(c echo.Context, detail string) *Problem {
	c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="tickgate"`)
	return NewProblem(http.StatusUnauthorized, "Authorization", "%s", detail)
}

func (s *Server) authorize(c echo.Context, p *Principal, perm Permission) error {
	switch perm {
	case PermAgentPC:
		if p.Role == domain.RoleAdmin {
			return nil
		}
		if p.Role != domain.RoleAgent {
			return forbidden(p, perm)
		}
		if c.Param("name") != p.PC {
			return NewProblem(http.StatusForbidden, "name", "this agent token belongs to PC %q, not %q", p.PC, c.Param("name"))
		}
		return nil
	case PermAgentExecution, PermAgentResult:
		if p.Role == domain.RoleAdmin {
			return nil
		}
		if p.Role != domain.RoleAgent {
			return forbidden(p, perm)
		}
		id, err := pathID(c, "task_device")
		if err != nil || perm == PermAgentResult {
			return err // the result's statement checks the PC
		}
		return s.checkAgentExecution(c.Request().Context(), p, id, "")
	}
	if !roleGrants(p.Role, perm) {
		return forbidden(p, perm)
	}
	return nil
}

// checkAgentExecution refuses an agent task_device id of another PC than its own; pc is
// the execution's PC when the caller knows it already ("": read it).
func (s *Server) checkAgentExecution(ctx context.Context, p *Principal, id int64, pc string) error {
	if p == nil || p.Role != domain.RoleAgent {
		return nil
	}
	if pc == "" {
		var err error
		pc, err = s.Store.DeviceExecutionPC(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return NotFound("no task_device %d", id)
		}
		if err != nil {
			return err
		}
	}
	if pc != p.PC {
		return NewProblem(http.StatusForbidden, "id", "task_device %d runs on another PC than this agent's (%q)", id, p.PC)
	}
	return nil
}

func forbidden(p *Principal, perm Permission) *Problem {
	return NewProblem(http.StatusForbidden, "", "a %s token may not do this (needs %s)", p.Role, perm)
}

// --- /tokens ---------------------------------------------------------------------------

func (s *Server) registerTokens(g *echo.Group) {
	g.POST("/tokens", s.createToken)
	g.GET("/tokens", s.listTokens)
	g.DELETE("/tokens/:id", s.revokeToken)
}

// TokenRequest is the body of POST /tokens.
type TokenRequest struct {
	Role domain.TokenRole `json:"role"`
	PC   string           `json:"pc,omitempty"`
	Note string           `json:"note,omitempty"`
}

// TokenView is a token as listed: never the token itself.
type TokenView struct {
	ID        int64            `json:"id"`
	Role      domain.TokenRole `json:"role"`
	PC        string           `json:"pc,omitempty"`
	Note      string           `json:"note,omitempty"`
	Prefix    string           `json:"prefix"`
	CreatedAt time.Time        `json:"created_at"`
	RevokedAt *time.Time       `json:"revoked_at,omitempty"`
}

// CreatedToken is the answer to POST /tokens: the only time the token is shown.
type CreatedToken struct {
	TokenView
	Token string `json:"token"`
}

func tokenView(t store.Token) TokenView {
	v := TokenView{ID: t.ID, Role: t.Role, Note: t.Note, Prefix: t.Prefix, CreatedAt: t.CreatedAt.UTC(), RevokedAt: t.RevokedAt}
	if t.Pc != nil {
		v.PC = *t.Pc
	}
	if v.RevokedAt != nil {
		u := v.RevokedAt.UTC()
		v.RevokedAt = &u
	}
	return v
}

var pcNameOK = func(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i, r := range s {
		alnum := (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		if !alnum && (i == 0 || (r != '.' && r != '_' && r != '-')) {
			return false
		}
	}
	return true
}

func (req TokenRequest) validate() error {
	if !req.Role.Valid() {
		return BadRequest("role", "must be admin, deployer, operator, viewer or agent, got %q", req.Role)
	}
	if req.Role == domain.RoleAgent && !pcNameOK(req.PC) {
		return BadRequest("pc", "an agent token needs the name of its PC, got %q", req.PC)
	}
	if req.Role != domain.RoleAgent && req.PC != "" {
		return BadRequest("pc", "only an agent token is bound to a PC")
	}
	if len(req.Note) > 200 {
		return BadRequest("note", "at most 200 characters")
	}
	return nil
}

func (s *Server) createToken(c echo.Context) error {
	var req TokenRequest
	if err := Decode(c, &req, false); err != nil {
		return err
	}
	if err := req.validate(); err != nil {
		return err
	}
	row, token, err := s.Store.CreateToken(c.Request().Context(), store.NewToken{Role: req.Role, PC: req.PC, Note: req.Note})
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusCreated, CreatedToken{TokenView: tokenView(row), Token: token})
}

func (s *Server) listTokens(c echo.Context) error {
	return listPage(c, idCursor, s.Store.ListTokens, tokenView, func(t store.Token) int64 { return t.ID })
}

func (s *Server) revokeToken(c echo.Context) error {
	id, err := pathID(c, "token")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	// Every API process drops its cached tokens when the revocation commits; the answer
	// waits until each has said so (or has stopped trusting its cache), so the token is
	// refused everywhere from the next request on.
	var watch *store.TokenChangeWatch
	if s.Listener != nil {
		watch = s.Listener.WatchTokenChange(id)
		defer watch.Stop()
	}
	row, err := s.Store.RevokeToken(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return NotFound("no token %d", id)
	}
	if err != nil {
		return err
	}
	if watch != nil {
		missing, err := watch.Await(ctx, s.Store)
		if err != nil {
			return err
		}
		if len(missing) > 0 {
			s.Logf("api: token %d revoked; listeners %v did not acknowledge in time, and no longer trust their caches", id, missing)
		}
	}
	return c.JSON(http.StatusOK, tokenView(row))
}
