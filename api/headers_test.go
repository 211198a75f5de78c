package api_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/store"
)

// startPlainApp serves the application on a real PostgreSQL and Temporal (no worker) and
// returns its URL, its routes ("METHOD path") and an admin token.
func startPlainApp(t *testing.T) (string, []string, string) {
	t.Helper()
	st := testenv.Store(t)
	tc := testenv.TemporalClient(t)
	e := api.New(&api.Server{Store: st, Temporal: tc, Starter: &starter.Starter{Client: tc, TaskQueue: "tq-" + t.Name()}, Logf: t.Logf})
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	_, tok, err := st.CreateToken(context.Background(), store.NewToken{Role: domain.RoleAdmin})
	require.NoError(t, err)
	var routes []string
	for _, r := range e.Routes() {
		routes = append(routes, r.Method+" "+r.Path)
	}
	sort.Strings(routes)
	return srv.URL, routes, tok
}

func send(t *testing.T, method, url, token string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := teststack.ContractClient(t).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

// TestSecurityHeadersOnEveryAnswer: API answers, problems (401, 400, 404, 405), the
// dashboard's page and assets and HEAD answers all carry the Content-Security-Policy
// (scripts and styles from this origin only, no framing), nosniff and a Referrer-Policy.
func TestSecurityHeadersOnEveryAnswer(t *testing.T) {
	t.Parallel()
	base, _, tok := startPlainApp(t)
	for _, c := range []struct {
		method, path, token string
		status              int
	}{
		{http.MethodGet, "/api/v1/schedules", tok, http.StatusOK},
		{http.MethodGet, "/api/v1/schedules?cursor=garbage", tok, http.StatusBadRequest},
		{http.MethodGet, "/api/v1/schedules", "", http.StatusUnauthorized},
		{http.MethodGet, "/api/v1/no-such-thing", tok, http.StatusNotFound},
		{http.MethodDelete, "/healthz", tok, http.StatusMethodNotAllowed},
		{http.MethodGet, "/healthz", "", http.StatusOK},
		{http.MethodGet, "/", "", http.StatusOK},
		{http.MethodGet, "/ui/app.js", "", http.StatusOK},
		{http.MethodGet, "/ui/no-such-file.js", "", http.StatusNotFound},
		{http.MethodHead, "/", "", http.StatusOK},
		{http.MethodHead, "/api/v1/schedules", tok, http.StatusOK},
	} {
		resp, body := send(t, c.method, base+c.path, c.token)
		require.Equal(t, c.status, resp.StatusCode, "%s %s: %s", c.method, c.path, body)
		csp := resp.Header.Get("Content-Security-Policy")
		directives := map[string]string{}
		for _, d := range strings.Split(csp, ";") {
			name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
			directives[name] = value
		}
		assert.Equal(t, "'self'", directives["script-src"], "%s %s: CSP %q", c.method, c.path, csp)
		assert.Equal(t, "'self'", directives["style-src"], "%s %s: CSP %q", c.method, c.path, csp)
		assert.Equal(t, "'none'", directives["frame-ancestors"], "%s %s: CSP %q", c.method, c.path, csp)
		assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), "%s %s", c.method, c.path)
		assert.Equal(t, "no-referrer", resp.Header.Get("Referrer-Policy"), "%s %s", c.method, c.path)
	}
}

// TestHeadAnsweredWhereGetIs: every GET route answers HEAD with GET's status and content
// type and no body (a 405 before), for a caller with and without a token; a route without
// GET still refuses HEAD.
func TestHeadAnsweredWhereGetIs(t *testing.T) {
	t.Parallel()
	base, routes, tok := startPlainApp(t)
	gets := 0
	for _, r := range routes {
		path, ok := strings.CutPrefix(r, "GET ")
		if !ok {
			continue
		}
		gets++
		url := base + concreteGet(path)
		for _, token := range []string{tok, ""} {
			get, getBody := send(t, http.MethodGet, url, token)
			head, headBody := send(t, http.MethodHead, url, token)
			require.Equal(t, get.StatusCode, head.StatusCode, "HEAD %s (token %v): GET answered %s", path, token != "", getBody)
			require.NotEqual(t, http.StatusMethodNotAllowed, head.StatusCode, "HEAD %s", path)
			require.Equal(t, get.Header.Get("Content-Type"), head.Header.Get("Content-Type"), "HEAD %s", path)
			require.Empty(t, headBody, "HEAD %s", path)
		}
	}
	require.Greater(t, gets, 20, "the application's GET routes")
	resp, body := send(t, http.MethodHead, base+"/api/v1/task-runs/1/retry", tok)
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "%s", body)
}

// concreteGet fills a GET route's parameters so that the route answers 200 where it can
// (the dashboard's app.js) and a 404 for an unknown name or id otherwise.
func concreteGet(path string) string {
	if path == "/ui/*" {
		return "/ui/app.js"
	}
	return regexp.MustCompile(`:[a-z_]+`).ReplaceAllStringFunc(path, func(p string) string {
		if p == ":id" {
			return "424242"
		}
		return "no-such-" + p[1:]
	})
}

// TestDashboardHasNoInlineCode: the dashboard runs under a policy that refuses inline
// scripts and styles, so neither its page nor the markup its script builds may hold a
// <script> body, a <style> element, a style attribute, an on* handler or a javascript: URL
// (each would be silently blocked in the browser).
func TestDashboardHasNoInlineCode(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "web", "static", "*"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	forbidden := map[string]*regexp.Regexp{
		"inline script":   regexp.MustCompile(`(?i)<script(\s[^>]*)?>\s*[^<\s]`),
		"style element":   regexp.MustCompile(`(?i)<style[\s>]`),
		"style attribute": regexp.MustCompile(`(?i)[\s'"]style\s*=`),
		"event handler":   regexp.MustCompile(`(?i)\son[a-z]+\s*=\s*\\?['"]`),
		"javascript: URL": regexp.MustCompile(`(?i)javascript:`),
	}
	scriptTag := regexp.MustCompile(`(?i)<script[^>]*>`)
	for _, f := range files {
		if !strings.HasSuffix(f, ".html") && !strings.HasSuffix(f, ".js") {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for what, re := range forbidden {
			assert.Nil(t, re.FindIndex(b), "%s holds a %s: %q", f, what, re.Find(b))
		}
		for _, tag := range scriptTag.FindAll(b, -1) {
			assert.Contains(t, string(tag), "src=", "%s: a script that is not a file of this origin: %s", f, tag)
		}
	}
}
