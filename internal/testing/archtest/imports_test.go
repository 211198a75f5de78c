package archtest

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// moduleRoot is tickgate's root, seen from this package's directory (where go test runs).
var moduleRoot = filepath.Join("..", "..", "..")

// TestImportRules: no non-test file of tickgate imports a package the rules forbid (see
// docs/architecture.md for the graph and the reasons).
func TestImportRules(t *testing.T) {
	module, err := ModulePath(moduleRoot)
	require.NoError(t, err)
	require.Equal(t, "github.com/tickgate/tickgate", module)
	rules := Rules(module)
	rep, err := Check(moduleRoot, module, rules)
	require.NoError(t, err)

	// A clean report means something only if the packages the rules are about were read.
	for _, pkg := range []string{"workflows", "activities", "api", "store", "starter", "worker"} {
		require.NotZero(t, rep.Files[module+"/"+pkg], "no Go file read in %s: wrong root?", pkg)
	}

	why := map[string]string{}
	for _, r := range rules {
		why[r.Name] = r.Why
	}
	for _, v := range rep.Violations {
		t.Errorf("%s\n\twhy: %s", v, why[v.Rule])
	}
}

// TestImportRulesCatchPlantedViolations runs the same check on a planted tree
// (testdata/planted, the same module path) and asserts that it reports exactly the planted
// violations: each rule fires, on subpackages too, and test files, allowed imports, the
// binary's entry point and a package merely sharing a prefix are left alone.
func TestImportRulesCatchPlantedViolations(t *testing.T) {
	root := filepath.Join("testdata", "planted")
	module, err := ModulePath(root)
	require.NoError(t, err)
	rep, err := Check(root, module, Rules(module))
	require.NoError(t, err)

	var got []string
	for _, v := range rep.Violations {
		got = append(got, v.File+" → "+strings.TrimPrefix(v.Import, module+"/")+": "+v.Rule)
	}
	require.ElementsMatch(t, []string{
		"workflows/planted.go → github.com/jackc/pgx/v5/pgtype: workflows do no I/O",
		"workflows/planted.go → store: workflows do no I/O",
		"api/planted.go → activities: api does not run engine steps",
		"store/planted.go → workflows: store knows no engine and no HTTP",
		"store/dbgen/planted.go → api: store knows no engine and no HTTP",
		"domain/planted.go → os: domain does no I/O",
		"domain/planted.go → store: domain does no I/O",
		"metrics/planted.go → internal/testing/testenv: the product does not depend on tooling",
	}, got)

	// The report points at the offending line.
	for _, v := range rep.Violations {
		if v.File == "workflows/planted.go" && v.Import == module+"/store" {
			require.Equal(t, 9, v.Line)
			require.Equal(t, module+"/workflows", v.Package)
		}
	}
}

// TestCheckRefusesAnEmptyTree: a root with no Go file is an error, not a clean report.
func TestCheckRefusesAnEmptyTree(t *testing.T) {
	_, err := Check(t.TempDir(), "example.com/empty", Rules("example.com/empty"))
	require.ErrorContains(t, err, "no Go file")
}
