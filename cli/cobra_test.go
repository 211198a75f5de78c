package cli_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/tickgate/tickgate/cli"
	"github.com/tickgate/tickgate/internal/testing/teststack"
)

// TestCLICompletionOutputsAndUsage: shell completion scripts for bash, zsh and fish; a
// schedule name completed from the server; -o yaml on a record and a list; the one-dash long
// flags the CLI took before cobra; and the usage errors (exit 2) of a bad command line.
func TestCLICompletionOutputsAndUsage(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	admin := st.AdminToken
	for _, name := range []string{"alpha-1", "alpha-2", "beta"} {
		r := run(t, st, admin, "schedule", "create", name, "--interval", "1h", "--topic", "t", "--type", "x")
		require.Equal(t, 0, r.code, r.errOut)
	}

	for shell, marker := range map[string]string{"bash": "__start_tickgate", "zsh": "#compdef tickgate", "fish": "complete -c tickgate"} {
		r := run(t, st, admin, "completion", shell)
		require.Equal(t, 0, r.code, r.errOut)
		require.Contains(t, r.out, marker, shell)
	}
	// What the scripts call: cobra's __complete, answered with names from the server.
	r := run(t, st, admin, "__complete", "schedule", "get", "al")
	require.Equal(t, 0, r.code, r.errOut)
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	require.Equal(t, []string{"alpha-1", "alpha-2", ":4"}, lines, "two names and ShellCompDirectiveNoFileComp")
	r = run(t, st, admin, "__complete", "schedule", "pause", "")
	require.Contains(t, r.out, "beta")
	r = run(t, st, admin, "__complete", "schedule", "")
	require.Contains(t, r.out, "create")
	require.Contains(t, r.out, "rotate-secret")
	r = run(t, st, "", "__complete", "schedule", "get", "al")
	require.Equal(t, 0, r.code, "no token: no names, and no error either")
	require.NotContains(t, r.out, "alpha-1")

	r = run(t, st, admin, "schedule", "get", "alpha-1", "-o", "yaml")
	require.Equal(t, 0, r.code, r.errOut)
	var sched map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(r.out), &sched), r.out)
	require.Equal(t, "alpha-1", sched["name"])
	require.Equal(t, 1, sched["version"], "an integer, not a float")
	r = run(t, st, admin, "schedule", "list", "--limit", "2", "--output", "yaml")
	require.Equal(t, 0, r.code, r.errOut)
	var page struct {
		Items      []map[string]any `yaml:"items"`
		NextCursor string           `yaml:"next_cursor"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(r.out), &page), r.out)
	require.Len(t, page.Items, 2)
	require.NotEmpty(t, page.NextCursor)

	r = run(t, st, admin, "schedule", "list", "-limit", "1", "-all")
	require.Equal(t, 0, r.code, r.errOut)
	require.Len(t, strings.Split(strings.TrimSpace(r.out), "\n"), 4, "the header and every schedule, one page at a time: %s", r.out)

	for _, args := range [][]string{
		{"schedule"}, {"schedule", "fly"}, {"schedule", "get", "a", "b"}, {"schedule", "list", "--nope"}, {"schedule", "get", "alpha-1", "-o", "xml"},
	} {
		r := run(t, st, admin, args...)
		require.Equal(t, cli.ExitUsage, r.code, "%v: %s", args, r.errOut)
	}
}
