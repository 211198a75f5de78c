package devstack_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.yaml.in/yaml/v3"

	"github.com/tickgate/tickgate/internal/dev/devstack"
	"github.com/tickgate/tickgate/workflows"
)

// compose is the part of docker-compose.yml the test reads.
type compose struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Build       string            `yaml:"build"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
	} `yaml:"services"`
}

// debianPostgres is the PostgreSQL major version each Debian release packages: the one
// scripts/ensure-postgres.sh installs for `make dev` and the tests on the Debian release the
// Dockerfile's image is built on.
var debianPostgres = map[string]int{"bullseye": 13, "bookworm": 15, "trixie": 17}

// TestComposeFileIsInStepWithTheCode reads docker-compose.yml, which nothing here can run
// (no Docker engine), and checks it against the code: every variable it sets on tickgate's
// services is one config.FromEnv reads, the Temporal images are the server version the
// tools module builds (and `make dev`/`make test-cluster` run) and the UI version the CLI
// embeds, PostgreSQL is the major version Debian packages on the Dockerfile's release (the
// one `make dev` and the tests run), the search attributes it registers are the ones the
// workflows set, and the Dockerfile builds with the Go version tickgate's go.mod names.
func TestComposeFileIsInStepWithTheCode(t *testing.T) {
	root, err := devstack.RepoRoot()
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	require.NoError(t, err)
	var c compose
	require.NoError(t, yaml.Unmarshal(b, &c))

	known := configEnvVars(t, filepath.Join(root, "internal", "config"))
	tickgate := 0
	for name, svc := range c.Services {
		if svc.Build == "" {
			continue
		}
		tickgate++
		require.NotEmpty(t, svc.Environment, "service %s sets no environment", name)
		for v := range svc.Environment {
			require.True(t, known[v], "service %s sets %s, which config.FromEnv does not read", name, v)
		}
		require.NotEmpty(t, svc.Environment["DATABASE_URL"], name)
		require.NotEmpty(t, svc.Environment["TEMPORAL_ADDRESS"], name)
	}
	require.Equal(t, 2, tickgate, "the worker and the API are built from this checkout")

	server := moduleVersion(t, filepath.Join(root, "tools", "temporal", "go.mod"), "go.temporal.io/server")
	ui := moduleVersion(t, filepath.Join(root, "tools", "temporal", "go.mod"), "github.com/temporalio/ui-server/v2")
	images := map[string]string{}
	for _, svc := range c.Services {
		if svc.Image != "" {
			repo, tag, _ := strings.Cut(svc.Image, ":")
			images[repo] = tag
		}
	}
	require.Equal(t, server, images["temporalio/auto-setup"], "the Temporal server in compose is the one the tools module builds")
	require.Equal(t, server, images["temporalio/admin-tools"], "the admin tools match the server")
	require.Equal(t, ui, images["temporalio/ui"], "the Web UI is the one the CLI embeds")
	pg, err := strconv.Atoi(images["postgres"])
	require.NoError(t, err, "postgres is pinned to a major version, got %q", images["postgres"])
	require.GreaterOrEqual(t, pg, 12, "Temporal's postgres12 plugin needs PostgreSQL 12 or newer")

	goVersion := moduleGoVersion(t, filepath.Join(root, "go.mod"))
	dockerfile, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^FROM golang:(\d+\.\d+)[-.\w]* AS build`).FindSubmatch(dockerfile)
	require.NotNil(t, m, "the Dockerfile builds FROM golang:<version>")
	require.True(t, strings.HasPrefix(goVersion, string(m[1])), "Dockerfile's Go %s, go.mod's %s", m[1], goVersion)

	m = regexp.MustCompile(`(?m)^FROM debian:(\w+)`).FindSubmatch(dockerfile)
	require.NotNil(t, m, "the Dockerfile's image is FROM debian:<release>")
	release := string(m[1])
	require.Contains(t, debianPostgres, release, "Debian release %s", release)
	require.Equal(t, debianPostgres[release], pg, "compose's PostgreSQL is the one Debian %s packages (what make dev and the tests run)", release)

	// The search attributes temporal-setup registers are the ones the workflows set and
	// `make dev` registers.
	setup := strings.Join(c.Services["temporal-setup"].Command, " ")
	sas := regexp.MustCompile(`for sa in ([\w ]+);`).FindStringSubmatch(setup)
	require.NotNil(t, sas, "temporal-setup loops over the search attributes: %s", setup)
	require.ElementsMatch(t, devstack.SearchAttributes, strings.Fields(sas[1]))
	for _, key := range []temporal.SearchAttributeKeyKeyword{workflows.KindKey, workflows.ScheduleKey, workflows.RolloutKey, workflows.PCKey, workflows.TaskKey} {
		require.Contains(t, devstack.SearchAttributes, key.GetName())
	}
}

// moduleVersion is the version go.mod at path requires of module (without the v).
func moduleVersion(t *testing.T, path, module string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(module) + `\s+v(\S+)`).FindSubmatch(b)
	require.NotNil(t, m, "%s requires no %s", path, module)
	return string(m[1])
}

func moduleGoVersion(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^go (\S+)`).FindSubmatch(b)
	require.NotNil(t, m, "%s names no go version", path)
	return string(m[1])
}

// configEnvVars are the variables config.FromEnv reads: the string constants passed to
// os.Getenv, os.LookupEnv and getenv in the non-test files of the package in dir.
func configEnvVars(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	vars := map[string]bool{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		require.NoError(t, err)
		collectEnvVars(f, vars)
	}
	require.True(t, vars["DATABASE_URL"] && vars["TICKGATE_DEVICE_TIMEOUT"], "found the config's variables: %v", vars)
	return vars
}

func collectEnvVars(f *ast.File, vars map[string]bool) {
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		fn := ""
		switch f := call.Fun.(type) {
		case *ast.Ident:
			fn = f.Name
		case *ast.SelectorExpr:
			if x, ok := f.X.(*ast.Ident); ok {
				fn = x.Name + "." + f.Sel.Name
			}
		}
		if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING && (fn == "os.Getenv" || fn == "os.LookupEnv" || fn == "getenv") {
			name, _ := strconv.Unquote(lit.Value)
			vars[name] = true
		}
		return true
	})
}
