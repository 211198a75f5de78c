package archtest

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/testing/treecopy"
)

// moduleRoot is tickgate's root, seen from this package's directory (where go test runs).
var moduleRoot = filepath.Join("..", "..", "..")

// TestImportRules: no non-test file of tickgate imports a package the rules forbid or its
// layer does not allow (see docs/architecture.md for the graph and the reasons).
func TestImportRules(t *testing.T) {
	module, err := ModulePath(moduleRoot)
	require.NoError(t, err)
	require.Equal(t, "github.com/tickgate/tickgate", module)
	policy := Tickgate(module)
	rep, err := Check(moduleRoot, module, policy)
	require.NoError(t, err)

	// A clean report means something only if the packages the rules are about were read.
	for _, pkg := range []string{"workflows", "activities", "api", "store", "starter", "worker", "cli"} {
		require.NotZero(t, rep.Files[module+"/"+pkg], "no Go file read in %s: wrong root?", pkg)
	}
	// And every limited layer is a package that exists: a renamed one leaves no stale row.
	for _, l := range policy.Layers {
		if l.Anything {
			continue // e2e holds only tests, which no rule binds
		}
		found := false
		for pkg := range rep.Files {
			found = found || under(pkg, module+"/"+l.Path)
		}
		require.True(t, found, "layer %s: no Go file under it", l.Path)
	}

	why := map[string]string{}
	for _, r := range policy.Rules {
		why[r.Name] = r.Why
	}
	for _, v := range rep.Violations {
		if w := why[v.Rule]; w != "" {
			t.Errorf("%s\n\twhy: %s", v, w)
		} else {
			t.Errorf("%s\n\twhy: see the package table in docs/architecture.md", v)
		}
	}
}

// TestImportRulesCatchPlantedViolations runs the same check on a planted tree
// (testdata/planted, the same module path) and asserts that it reports exactly the planted
// violations: each rule fires, on subpackages too; a layer refuses what its row does not
// list and a package with no row; and test files, allowed imports, the binary's entry point
// and a package merely sharing a prefix with a ruled one are left alone by the rules.
func TestImportRulesCatchPlantedViolations(t *testing.T) {
	root := filepath.Join("testdata", "planted")
	module, err := ModulePath(root)
	require.NoError(t, err)
	rep, err := Check(root, module, Tickgate(module))
	require.NoError(t, err)

	require.ElementsMatch(t, []string{
		"workflows/planted.go → github.com/jackc/pgx/v5/pgtype: workflows do no I/O",
		"workflows/planted.go → store: workflows do no I/O",
		"api/planted.go → activities: api does not import activities",
		"store/planted.go → workflows: store knows no engine and no HTTP",
		"store/dbgen/planted.go → api: store knows no engine and no HTTP",
		"domain/planted.go → os: domain does no I/O",
		"domain/planted.go → store: domain does no I/O",
		"metrics/planted.go → internal/testing/testenv: the product does not depend on tooling",
		"cli/planted.go → store: layers: cli may import only client",
		"storefront/planted.go → api: layers: storefront has no row in docs/architecture.md's package table",
	}, violationLines(rep, module))

	// The report points at the offending line.
	for _, v := range rep.Violations {
		if v.File == "workflows/planted.go" && v.Import == module+"/store" {
			require.Equal(t, 9, v.Line)
			require.Equal(t, module+"/workflows", v.Package)
		}
	}
}

// TestCheckFailsOnForbiddenImportsPlantedInACopy copies tickgate's own source into a
// temporary directory, checks that the copy passes, then plants forbidden imports in it —
// the I/O a workflow must not do, api reaching into the worker, the CLI into the store —
// and checks that exactly those fail, each under the rule or layer that forbids it.
func TestCheckFailsOnForbiddenImportsPlantedInACopy(t *testing.T) {
	module, err := ModulePath(moduleRoot)
	require.NoError(t, err)
	copyRoot := t.TempDir()
	// The go.mod files and the Go sources; dot directories and testdata, which Check skips.
	require.NoError(t, treecopy.Copy(moduleRoot, copyRoot, func(rel string, d fs.DirEntry) bool {
		if d.IsDir() {
			return strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules"
		}
		return d.Name() != "go.mod" && !strings.HasSuffix(rel, ".go")
	}))

	clean, err := Check(copyRoot, module, Tickgate(module))
	require.NoError(t, err)
	require.Empty(t, clean.Violations, "the unchanged copy passes")

	plant := func(rel, pkg string, imports ...string) {
		var b strings.Builder
		b.WriteString("package " + pkg + "\n\nimport (\n")
		for _, imp := range imports {
			b.WriteString("\t_ \"" + imp + "\"\n")
		}
		b.WriteString(")\n")
		require.NoError(t, os.WriteFile(filepath.Join(copyRoot, rel), []byte(b.String()), 0o644))
	}
	plant("workflows/zz_planted.go", "workflows",
		"net/http", "os", "database/sql", "go.temporal.io/sdk/client", module+"/metrics")
	plant("api/zz_planted.go", "api", module+"/worker")
	plant("cli/zz_planted.go", "cli", module+"/store")

	rep, err := Check(copyRoot, module, Tickgate(module))
	require.NoError(t, err)
	require.ElementsMatch(t, []string{
		"workflows/zz_planted.go → net/http: workflows do no I/O",
		"workflows/zz_planted.go → os: workflows do no I/O",
		"workflows/zz_planted.go → database/sql: workflows do no I/O",
		"workflows/zz_planted.go → go.temporal.io/sdk/client: workflows do no I/O",
		"workflows/zz_planted.go → metrics: workflows do no I/O",
		"api/zz_planted.go → worker: layers: api may import only starter, store, deviceengine, domain, metrics, web, internal/readiness, internal/schedulespec, internal/scheduleplan, internal/telemetry, internal/version, internal/outbound, workflows",
		"cli/zz_planted.go → store: layers: cli may import only client",
	}, violationLines(rep, module))
}

// violationLines gives each violation as "file → import: rule", imports of the module
// relative to it.
func violationLines(rep Report, module string) []string {
	var out []string
	for _, v := range rep.Violations {
		out = append(out, v.File+" → "+strings.TrimPrefix(v.Import, module+"/")+": "+v.Rule)
	}
	return out
}

// TestLayersMatchTheDocs: the "may import" column of docs/architecture.md's package table
// names the same tickgate packages as Layers, row for row — the table is what the check
// enforces, so neither can change alone.
func TestLayersMatchTheDocs(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(moduleRoot, "docs", "architecture.md"))
	require.NoError(t, err)
	rows := docLayers(t, string(doc))
	require.NotEmpty(t, rows, "no package table found in docs/architecture.md")

	layers := map[string]Layer{}
	for _, l := range Layers() {
		layers[l.Path] = l
	}
	for path, may := range rows {
		l, ok := layers[path]
		require.True(t, ok, "docs/architecture.md has a row for %s, Layers has none", path)
		if l.Anything {
			require.Equal(t, []string{"*"}, may, "%s may import anything in Layers; say so in its row", path)
			continue
		}
		want := append([]string{}, l.MayImport...)
		slices.Sort(want)
		require.Equal(t, want, may, "the tickgate packages %s may import: docs/architecture.md vs Layers", path)
	}
	for path := range layers {
		_, ok := rows[path]
		require.True(t, ok, "Layers has %s, docs/architecture.md's package table has no row for it", path)
	}
}

var backticked = regexp.MustCompile("`([^`]+)`")

// docLayers reads the package table ("| package | what it is | may import |"): for each
// row, the package's path and the sorted tickgate packages of its third column, or ["*"]
// when that column says everything or anything. Rows whose column is "—" (separate modules)
// are left out.
func docLayers(t *testing.T, doc string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	inTable := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "| package | what it is | may import |") {
			inTable = true
			continue
		}
		if !inTable {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 3 || strings.HasPrefix(strings.TrimSpace(cells[0]), "---") {
			continue
		}
		names := backticked.FindStringSubmatch(cells[0])
		require.NotNil(t, names, "row without a package: %s", line)
		path := strings.TrimSuffix(strings.TrimSuffix(names[1], "/*"), "/")
		may := strings.TrimSpace(cells[2])
		switch {
		case may == "—":
			continue
		case strings.HasPrefix(may, "everything") || strings.HasPrefix(may, "anything"):
			out[path] = []string{"*"}
			continue
		}
		pkgs := []string{}
		for _, m := range backticked.FindAllStringSubmatch(may, -1) {
			if !strings.Contains(m[1], ".") { // tickgate packages; import paths of other modules have a dot
				pkgs = append(pkgs, m[1])
			}
		}
		slices.Sort(pkgs)
		out[path] = slices.Compact(pkgs)
	}
	return out
}

// TestCheckRefusesAnEmptyTree: a root with no Go file is an error, not a clean report.
func TestCheckRefusesAnEmptyTree(t *testing.T) {
	_, err := Check(t.TempDir(), "example.com/empty", Tickgate("example.com/empty"))
	require.ErrorContains(t, err, "no Go file")
}
