package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/store"
)

// authApp is the API on a running stack, with the agent routes stubbed (answering 204)
// when the devices engine has not registered them, so their authorisation is tested either way.
type authApp struct {
	stack *teststack.Stack
	e     *echo.Echo
	url   string
}

var agentRoutes = []string{"/api/v1/agent/pcs/:name/claim", "/api/v1/agent/task-devices/:id/ack", "/api/v1/agent/task-devices/:id/result"}

func newAuthApp(t *testing.T) *authApp {
	t.Helper()
	st := teststack.Start(t, teststack.Options{})
	e := api.New(&api.Server{Store: st.Store, Temporal: st.Temporal,
		Starter: &starter.Starter{Client: st.Temporal, TaskQueue: st.Config.TaskQueue}, Logf: t.Logf})
	have := map[string]bool{}
	for _, r := range e.Routes() {
		have[r.Method+" "+r.Path] = true
	}
	for _, p := range agentRoutes {
		if !have["POST "+p] {
			e.POST(p, func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })
		}
	}
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return &authApp{stack: st, e: e, url: srv.URL}
}

func (a *authApp) do(t *testing.T, method, path, token string, body string, header ...string) (int, []byte, http.Header) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, a.url+path, r)
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := teststack.ContractClient(t).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b, resp.Header
}

var paramRE = regexp.MustCompile(`:[a-z_]+|\*`)

// concrete fills a route's parameters with values that name nothing.
func concrete(path string) string {
	return paramRE.ReplaceAllStringFunc(path, func(p string) string {
		switch p {
		case ":id":
			return "987654"
		case "*":
			return "app.js"
		}
		return "nothing-here"
	})
}

// TestRouteRoleMatrix sends every route of the application's route table (e.Routes(), so a
// new route without a rule in api.RoutePermissions fails here) as each actor — anonymous,
// viewer, operator, deployer, admin, an agent of the PC (or of the task_device's PC) the
// path names, and an agent of another PC — and checks the outcome the permission table
// documents: 401 without a token, 403 where the role lacks the permission, and neither
// where it has it. docs/security.md lists what each actor reaches.
func TestRouteRoleMatrix(t *testing.T) {
	t.Parallel()
	a := newAuthApp(t)
	ctx := context.Background()
	ownPC, otherPC := "pc-own", "pc-other"
	var taskID, pcID, devID, tdID int64
	pool := a.stack.Store.Pool
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO tasks (payload, status, started_at, max_attempts, device_timeout_ms)
		VALUES ('{}', 'running', now(), 3, 60000) RETURNING id`).Scan(&taskID))
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO pcs (name, device_capacity) VALUES ($1, 1) RETURNING id`, ownPC).Scan(&pcID))
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO devices (pc_id, serial) VALUES ($1, 'own-dev') RETURNING id`, pcID).Scan(&devID))
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO task_devices (task_id, device_id, pc_id, slot, max_attempts) VALUES ($1, $2, $3, 1, 3) RETURNING id`,
		taskID, devID, pcID).Scan(&tdID))

	actors := []struct{ name, token string }{
		{"anonymous", ""},
		{"viewer", a.stack.NewToken(t, domain.RoleViewer, "")},
		{"operator", a.stack.NewToken(t, domain.RoleOperator, "")},
		{"deployer", a.stack.NewToken(t, domain.RoleDeployer, "")},
		{"admin", a.stack.AdminToken},
		{"agent of the PC", a.stack.NewToken(t, domain.RoleAgent, ownPC)},
		{"agent of another PC", a.stack.NewToken(t, domain.RoleAgent, otherPC)},
	}
	// documented is the outcome api.RoutePermissions promises actor on a route needing
	// perm: 0 (allowed: neither 401 nor 403), 401 or 403.
	documented := func(actor string, perm api.Permission) int {
		if perm == api.PermPublic {
			return 0
		}
		if actor == "anonymous" {
			return http.StatusUnauthorized
		}
		allowed := map[api.Permission][]string{
			api.PermRead:           {"viewer", "operator", "deployer", "admin"},
			api.PermWrite:          {"operator", "deployer", "admin"},
			api.PermAdmin:          {"admin"},
			api.PermAgentPC:        {"admin", "agent of the PC"},
			api.PermAgentExecution: {"admin", "agent of the PC"},
			api.PermAgentResult:    {"admin", "agent of the PC"},
		}[perm]
		if slices.Contains(allowed, actor) {
			return 0
		}
		return http.StatusForbidden
	}
	seen := 0
	for _, r := range a.e.Routes() {
		method := r.Method
		if method == http.MethodHead {
			method = http.MethodGet // HEAD is GET without the body, under GET's rule
		}
		perm, ok := api.RoutePermissions[method+" "+r.Path]
		require.True(t, ok, "route %s %s has no entry in api.RoutePermissions", r.Method, r.Path)
		path := concrete(r.Path)
		body := ""
		if r.Method == http.MethodPost || r.Method == http.MethodPatch || r.Method == http.MethodPut {
			body = `{"zz_unknown_field": 1}` // never valid: nothing gets created
		}
		switch perm {
		case api.PermAgentPC:
			path = strings.Replace(r.Path, ":name", ownPC, 1)
		case api.PermAgentExecution, api.PermAgentResult:
			path = strings.Replace(r.Path, ":id", itoa(tdID), 1)
			if perm == api.PermAgentResult {
				// A result's PC is checked by the statement that records it, after its body
				// is read: a valid body reaches that check.
				body = `{"status":"failed","error":"matrix","retryable":true}`
			}
		}
		for _, actor := range actors {
			status, b, h := a.do(t, r.Method, path, actor.token, body)
			want := documented(actor.name, perm)
			msg := fmt.Sprintf("%s %s as %s (%s): %s", r.Method, path, actor.name, perm, b)
			switch want {
			case 0:
				require.NotContains(t, []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests}, status, msg)
			case http.StatusUnauthorized:
				require.Equal(t, want, status, msg)
				require.Equal(t, "application/problem+json", h.Get("Content-Type"), msg)
				require.Contains(t, h.Get("WWW-Authenticate"), "Bearer", msg)
			default:
				require.Equal(t, want, status, msg)
			}
			seen++
		}
	}
	require.Greater(t, seen, 7*60, "every route, as every actor")

	// A bad or revoked token is 401 everywhere.
	status, _, _ := a.do(t, http.MethodGet, "/api/v1/schedules", "tg_forged", "")
	require.Equal(t, http.StatusUnauthorized, status)
	req, _ := http.NewRequest(http.MethodGet, a.url+"/api/v1/schedules", nil)
	req.Header.Set("Authorization", "Basic dXNlcjpwYXNz")
	resp, err := teststack.ContractClient(t).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	row, tok, err := a.stack.Store.CreateToken(context.Background(), store.NewToken{Role: domain.RoleViewer})
	require.NoError(t, err)
	status, _, _ = a.do(t, http.MethodGet, "/api/v1/schedules", tok, "")
	require.Equal(t, http.StatusOK, status)
	status, _, _ = a.do(t, http.MethodDelete, "/api/v1/tokens/"+itoa(row.ID), a.stack.AdminToken, "")
	require.Equal(t, http.StatusOK, status)
	status, _, _ = a.do(t, http.MethodGet, "/api/v1/schedules", tok, "")
	require.Equal(t, http.StatusUnauthorized, status)

	// Unknown routes still answer 404 to a valid token, and 401 without one.
	status, _, _ = a.do(t, http.MethodGet, "/api/v1/no-such-thing", actors[1].token, "")
	require.Equal(t, http.StatusNotFound, status)
	status, _, _ = a.do(t, http.MethodGet, "/api/v1/no-such-thing", "", "")
	require.Equal(t, http.StatusUnauthorized, status)
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestAgentOnlyItsOwnPC: an agent token claims only its PC's commands and reports only on
// task_devices running on its PC; another PC's are 403 and an unknown one 404.
func TestAgentOnlyItsOwnPC(t *testing.T) {
	t.Parallel()
	a := newAuthApp(t)
	ctx := context.Background()
	pool := a.stack.Store.Pool
	var taskID, tdA, tdB int64
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO tasks (payload, status, started_at, max_attempts, device_timeout_ms)
		VALUES ('{}', 'running', now(), 3, 60000) RETURNING id`).Scan(&taskID))
	for pc, dst := range map[string]*int64{"pc-a": &tdA, "pc-b": &tdB} {
		var pcID, devID int64
		require.NoError(t, pool.QueryRow(ctx, `INSERT INTO pcs (name, device_capacity) VALUES ($1, 1) RETURNING id`, pc).Scan(&pcID))
		require.NoError(t, pool.QueryRow(ctx, `INSERT INTO devices (pc_id, serial) VALUES ($1, $2) RETURNING id`, pcID, pc+"-dev").Scan(&devID))
		require.NoError(t, pool.QueryRow(ctx, `INSERT INTO task_devices (task_id, device_id, pc_id, slot, max_attempts) VALUES ($1, $2, $3, 1, 3) RETURNING id`,
			taskID, devID, pcID).Scan(dst))
	}
	agentA := a.stack.NewToken(t, domain.RoleAgent, "pc-a")

	status, b, _ := a.do(t, http.MethodPost, "/api/v1/agent/pcs/pc-b/claim", agentA, `{"max": 1}`)
	require.Equal(t, http.StatusForbidden, status, "%s", b)
	var p api.Problem
	require.NoError(t, json.Unmarshal(b, &p))
	require.Equal(t, "name", p.Field)
	status, b, _ = a.do(t, http.MethodPost, "/api/v1/agent/pcs/pc-a/claim", agentA, `{"max": 1}`)
	require.NotEqual(t, http.StatusForbidden, status, "%s", b)
	require.NotEqual(t, http.StatusUnauthorized, status, "%s", b)

	for _, action := range []string{"ack", "result"} {
		status, b, _ = a.do(t, http.MethodPost, "/api/v1/agent/task-devices/"+itoa(tdB)+"/"+action, agentA, `{"status":"succeeded"}`)
		require.Equal(t, http.StatusForbidden, status, "%s on pc-b's task_device: %s", action, b)
		require.NoError(t, json.Unmarshal(b, &p))
		require.Equal(t, "id", p.Field)
		status, b, _ = a.do(t, http.MethodPost, "/api/v1/agent/task-devices/"+itoa(tdA)+"/"+action, agentA, `{"status":"succeeded"}`)
		require.NotEqual(t, http.StatusForbidden, status, "%s on own task_device: %s", action, b)
		require.NotEqual(t, http.StatusUnauthorized, status, "%s", b)
		status, _, _ = a.do(t, http.MethodPost, "/api/v1/agent/task-devices/99999999/"+action, agentA, `{"status":"succeeded"}`)
		require.Equal(t, http.StatusNotFound, status)
	}
	// The agent can read nothing else.
	status, _, _ = a.do(t, http.MethodGet, "/api/v1/pcs/pc-a", agentA, "")
	require.Equal(t, http.StatusForbidden, status)
}

// TestTokensAPI: an admin creates a token (shown once), lists tokens without their secret,
// and revokes one; bad input names the field and creates nothing.
func TestTokensAPI(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	var created api.CreatedToken
	st.JSON(t, http.MethodPost, "/api/v1/tokens", map[string]any{"role": "agent", "pc": "pc-7", "note": "rack 7"}, http.StatusCreated, &created)
	require.True(t, strings.HasPrefix(created.Token, "tg_"))
	require.Equal(t, "pc-7", created.PC)

	var page struct {
		Items      []map[string]any `json:"items"`
		NextCursor string           `json:"next_cursor"`
	}
	st.JSON(t, http.MethodGet, "/api/v1/tokens?limit=1", nil, http.StatusOK, &page)
	require.Len(t, page.Items, 1)
	require.NotEmpty(t, page.NextCursor)
	st.JSON(t, http.MethodGet, "/api/v1/tokens?cursor="+page.NextCursor, nil, http.StatusOK, &page)
	require.Len(t, page.Items, 1)
	require.Empty(t, page.NextCursor)
	_, raw := st.Do(t, http.MethodGet, "/api/v1/tokens", nil)
	require.NotContains(t, string(raw), created.Token)
	require.NotContains(t, string(raw), "token_hash")

	count := func() int {
		var n int
		require.NoError(t, st.Store.Pool.QueryRow(context.Background(), "SELECT count(*) FROM api_tokens").Scan(&n))
		return n
	}
	before := count()
	for _, tc := range []struct{ body, field string }{
		{`{"role":"root"}`, "role"},
		{`{"role":"agent"}`, "pc"},
		{`{"role":"agent","pc":"bad name!"}`, "pc"},
		{`{"role":"viewer","pc":"pc-1"}`, "pc"},
		{`{"role":"viewer","extra":1}`, "extra"},
		{`{"role":5}`, "role"},
		{`{"role":"viewer","note":"` + strings.Repeat("n", 201) + `"}`, "note"},
	} {
		status, b := st.Do(t, http.MethodPost, "/api/v1/tokens", tc.body)
		require.Equal(t, http.StatusBadRequest, status, "%s: %s", tc.body, b)
		var p api.Problem
		require.NoError(t, json.Unmarshal(b, &p))
		require.Equal(t, tc.field, p.Field, "%s", tc.body)
	}
	status, _ := st.Do(t, http.MethodPost, "/api/v1/tokens", bytes.Repeat([]byte("x"), api.MaxBodyBytes+10))
	require.Equal(t, http.StatusRequestEntityTooLarge, status)
	require.Equal(t, before, count())

	var revoked api.TokenView
	st.JSON(t, http.MethodDelete, "/api/v1/tokens/"+itoa(created.ID), nil, http.StatusOK, &revoked)
	require.NotNil(t, revoked.RevokedAt)
	st.JSON(t, http.MethodDelete, "/api/v1/tokens/4242", nil, http.StatusNotFound, nil)
	st.JSON(t, http.MethodDelete, "/api/v1/tokens/x", nil, http.StatusBadRequest, nil)
}
