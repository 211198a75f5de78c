package api_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/store"
)

type openAPIDoc struct {
	OpenAPI    string                    `yaml:"openapi"`
	Paths      map[string]map[string]any `yaml:"paths"`
	Components struct {
		Parameters map[string]map[string]any `yaml:"parameters"`
		Schemas    map[string]map[string]any `yaml:"schemas"`
	} `yaml:"components"`
}

var (
	httpMethods = map[string]bool{"get": true, "post": true, "put": true, "patch": true, "delete": true, "head": true, "options": true}
	braceParam  = regexp.MustCompile(`\{([^}]+)\}`)
)

// echoPath turns an OpenAPI path into Echo's form: {name} → :name, the dashboard's
// /ui/{file} → /ui/*.
func echoPath(p string) string {
	if p == "/ui/{file}" {
		return "/ui/*"
	}
	return braceParam.ReplaceAllString(p, ":$1")
}

func loadDoc(t *testing.T) openAPIDoc {
	t.Helper()
	var doc openAPIDoc
	require.NoError(t, yaml.Unmarshal(api.OpenAPIDocument, &doc))
	require.True(t, strings.HasPrefix(doc.OpenAPI, "3."), "openapi: %s", doc.OpenAPI)
	return doc
}

// TestOpenAPIMatchesRoutes: the document served at /api/v1/openapi.yaml lists exactly the
// application's routes (method and path, both ways); public operations are exactly the
// routes needing no token; each path parameter is declared; every $ref resolves; request
// bodies are closed objects (unknown fields refused, as the decoder does); every list takes
// limit and cursor.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	e := api.New(&api.Server{Store: st, Logf: t.Logf})
	doc := loadDoc(t)

	routes := map[string]bool{}
	for _, r := range e.Routes() {
		routes[r.Method+" "+r.Path] = true
	}
	// HEAD is answered wherever GET is (and only there); the document lists the GETs.
	for k := range routes {
		if path, ok := strings.CutPrefix(k, "HEAD "); ok {
			require.True(t, routes["GET "+path], "HEAD %s is answered but GET is not", path)
		} else if path, ok := strings.CutPrefix(k, "GET "); ok {
			require.True(t, routes["HEAD "+path], "GET %s is answered but HEAD is not", path)
		}
	}
	for k := range routes {
		if strings.HasPrefix(k, "HEAD ") {
			delete(routes, k)
		}
	}
	documented := map[string]bool{}
	for path, item := range doc.Paths {
		var pathParams []any
		if ps, ok := item["parameters"]; ok {
			pathParams, _ = ps.([]any)
		}
		for method, opAny := range item {
			if !httpMethods[method] {
				continue
			}
			key := strings.ToUpper(method) + " " + echoPath(path)
			documented[key] = true
			op, ok := opAny.(map[string]any)
			require.True(t, ok, "%s is not an operation object", key)
			// Path parameters are all declared.
			params := append([]any{}, pathParams...)
			if ps, ok := op["parameters"].([]any); ok {
				params = append(params, ps...)
			}
			declared := map[string]bool{}
			for _, p := range params {
				pm := resolveParam(t, doc, p)
				if pm["in"] == "path" {
					declared[pm["name"].(string)] = true
				}
			}
			for _, m := range braceParam.FindAllStringSubmatch(path, -1) {
				require.True(t, declared[m[1]], "%s: path parameter %q is not declared", key, m[1])
			}
			// Public in the document ⇔ public in the permission table.
			sec, hasSec := op["security"]
			public := hasSec && len(sec.([]any)) == 0
			require.Equal(t, api.RoutePermissions[key] == api.PermPublic, public, "%s: security in the document disagrees with api.RoutePermissions", key)
			// Lists are paginated.
			if method == "get" && strings.Contains(refsIn(op["responses"]), "Page\"") {
				names := map[string]bool{}
				for _, p := range params {
					names[resolveParam(t, doc, p)["name"].(string)] = true
				}
				require.True(t, names["limit"] && names["cursor"], "%s returns a page but takes no limit/cursor", key)
			}
		}
	}
	var missing, extra []string
	for k := range routes {
		if !documented[k] {
			missing = append(missing, k)
		}
	}
	for k := range documented {
		if !routes[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	require.Empty(t, missing, "routes missing from api/openapi.yaml")
	require.Empty(t, extra, "api/openapi.yaml documents routes that do not exist")
	// The permission table names no route that does not exist (every route having an entry
	// is checked by TestRouteRoleMatrix).
	for key := range api.RoutePermissions {
		require.True(t, routes[key], "api.RoutePermissions has an entry for a route that does not exist: %s", key)
	}

	// Every $ref resolves.
	for _, ref := range regexp.MustCompile(`\$ref: "#/components/(\w+)/(\w+)"`).FindAllStringSubmatch(string(api.OpenAPIDocument), -1) {
		switch ref[1] {
		case "schemas":
			require.Contains(t, doc.Components.Schemas, ref[2])
		case "parameters":
			require.Contains(t, doc.Components.Parameters, ref[2])
		}
	}
	// Request bodies of creating routes are closed objects.
	for name, s := range doc.Components.Schemas {
		if strings.HasSuffix(name, "Request") {
			require.Equal(t, false, s["additionalProperties"], "%s should refuse unknown fields", name)
		}
	}

	// The served document is this one.
	srv := httptest.NewServer(e)
	defer srv.Close()
	_, tok, err := st.CreateToken(context.Background(), store.NewToken{Role: domain.RoleViewer})
	require.NoError(t, err)
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/openapi.yaml", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := teststack.ContractClient(t).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, api.OpenAPIDocument, body)
	require.Contains(t, resp.Header.Get("Content-Type"), "yaml")
}

// TestOpenAPIDocumentValidates: an independent OpenAPI implementation (kin-openapi) loads
// the document and finds it valid: every $ref resolves, every schema, parameter, default
// and example is well-formed (formats and patterns included).
func TestOpenAPIDocumentValidates(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPIDocument)
	require.NoError(t, err)
	require.NoError(t, doc.Validate(context.Background(),
		openapi3.EnableSchemaFormatValidation(), openapi3.EnableSchemaPatternValidation(),
		openapi3.EnableSchemaDefaultsValidation(), openapi3.EnableExamplesValidation()))
}

func resolveParam(t *testing.T, doc openAPIDoc, p any) map[string]any {
	t.Helper()
	m, ok := p.(map[string]any)
	require.True(t, ok, "parameter %v", p)
	if ref, ok := m["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/components/parameters/")
		pm, ok := doc.Components.Parameters[name]
		require.True(t, ok, "unknown parameter %s", ref)
		return pm
	}
	return m
}

func refsIn(v any) string {
	b, _ := yaml.Marshal(v)
	return strings.ReplaceAll(string(b), "'", "\"")
}
