package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/store"
)

// routeParamRE finds an Echo route's parameters (":name", and the dashboard's "*").
var routeParamRE = regexp.MustCompile(`:[a-z_]+|\*`)

// FuzzRouteParams sends the application's routes (every method and path) a fuzzed path
// parameter and a fuzzed raw query string — cursors, limits, after, filters, ids, names —
// against a real PostgreSQL and Temporal, as the request bodies are fuzzed in fuzz_test.go.
// No answer may be a 5xx; a 4xx is a problem with the answer's status that names, if it
// names a field, a parameter of the request; and every answer matches api/openapi.yaml.
// The committed corpus (testdata/fuzz/FuzzRouteParams) replays under `go test`.
func FuzzRouteParams(f *testing.F) {
	st := testenv.Store(f)
	tc := testenv.TemporalClient(f)
	e := api.New(&api.Server{Store: st, Temporal: tc, Starter: &starter.Starter{Client: tc, TaskQueue: "tq-fuzz-route-params"}}) // logs through the log package: f.Logf may not be called inside the target
	var routes []string
	for _, r := range e.Routes() {
		routes = append(routes, r.Method+" "+r.Path)
	}
	sort.Strings(routes)
	known := map[string]bool{}
	for _, r := range routes {
		known[r] = true
	}
	for _, r := range routes {
		f.Add(r, "1", "limit=1&cursor=MQ")
		f.Add(r, "a-name", "limit=500&after=0&topic=t&status=PENDING")
	}

	f.Fuzz(func(t *testing.T, route, param, query string) {
		if !known[route] {
			route = routes[crc32.ChecksumIEEE([]byte(route))%uint32(len(routes))]
		}
		method, path, _ := strings.Cut(route, " ")
		names := map[string]bool{}
		target := routeParamRE.ReplaceAllStringFunc(path, func(p string) string {
			name := strings.TrimPrefix(p, ":")
			if name == "*" {
				name = "file" // as the document names the dashboard's file
			}
			names[name] = true
			return url.PathEscape(param)
		})
		if query != "" {
			target += "?" + query
		}
		// A fresh token each time: the fuzzed DELETE /tokens/{id} may revoke the last one.
		_, tok, err := st.CreateToken(context.Background(), store.NewToken{Role: domain.RoleAdmin, Note: "fuzz"})
		if err != nil {
			t.Fatalf("create token: %v", err)
		}
		// Read the request as net/http's server would: what it refuses never reaches the API.
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(
			method + " " + target + " HTTP/1.1\r\nHost: tickgate.test\r\nAuthorization: Bearer " + tok + "\r\n\r\n")))
		if err != nil {
			return
		}
		req.URL.Scheme, req.URL.Host = "http", req.Host
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		resp := rec.Result()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 500 {
			t.Fatalf("%s %s answered %d: %s", method, target, resp.StatusCode, body)
		}
		if method == http.MethodHead {
			body = nil // the server sends HEAD's headers only
		}
		if resp.StatusCode >= 400 && method != http.MethodHead {
			if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
				t.Fatalf("%s %s answered %d as %q: %s", method, target, resp.StatusCode, ct, body)
			}
			var p api.Problem
			if err := json.Unmarshal(body, &p); err != nil {
				t.Fatalf("%s %s: problem %s: %v", method, target, body, err)
			}
			if p.Field != "" && p.Field != "Authorization" && !names[p.Field] && !req.URL.Query().Has(p.Field) {
				t.Fatalf("%s %s: problem names %q, not a parameter of the request: %s", method, target, p.Field, body)
			}
		}
		req.RequestURI = ""
		if err := teststack.CheckAnswer(req, resp.StatusCode, resp.Header, body); err != nil {
			t.Fatalf("%s %s answered %d against api/openapi.yaml: %v\nbody: %.2000s", method, target, resp.StatusCode, err, body)
		}
	})
}
