package cli_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/cli"
)

// TestReferencePagesAreFresh: docs/cli/ holds exactly the pages the commands generate today
// (one per command, the same text); a command, flag or help text changed without `make
// generate-cli-docs` fails here.
func TestReferencePagesAreFresh(t *testing.T) {
	t.Parallel()
	fresh := t.TempDir()
	require.NoError(t, cli.WriteReference(fresh))
	committed := filepath.Join("..", "docs", "cli")
	want, err := filepath.Glob(filepath.Join(fresh, "tickgate*.md"))
	require.NoError(t, err)
	have, err := filepath.Glob(filepath.Join(committed, "tickgate*.md"))
	require.NoError(t, err)
	names := func(paths []string) []string {
		out := make([]string, len(paths))
		for i, p := range paths {
			out[i] = filepath.Base(p)
		}
		return out
	}
	require.Equal(t, names(want), names(have), "docs/cli/ has other pages than the commands: run `make generate-cli-docs`")
	require.Greater(t, len(want), 50, "a page per command")
	for _, p := range want {
		a, err := os.ReadFile(p)
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(committed, filepath.Base(p)))
		require.NoError(t, err)
		require.Equal(t, string(a), string(b), "docs/cli/%s is stale: run `make generate-cli-docs`", filepath.Base(p))
	}
}
