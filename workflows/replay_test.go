package workflows_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/tickgate/tickgate/worker"
)

// TestReplayHistories replays every history in testdata/*.json, recorded on a real stack
// (the schedule ones with `make dev` and `temporal workflow show --output json`, the
// rollout and device ones by `make record-histories`), against the current workflow code:
// a change that is not deterministic against them fails here, before it reaches running
// workflows. The workflows are registered by worker.Register itself, so the names are the
// production ones, and every registered workflow type must have at least one history: a
// new workflow type without one fails the test.
func TestReplayHistories(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	r, err := worker.NewReplayer()
	require.NoError(t, err)
	registered := r.Types
	require.NotEmpty(t, registered)

	covered := map[string][]string{}
	for _, f := range files {
		hist := readHistory(t, f)
		typ := hist.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowType().GetName()
		require.NotEmpty(t, typ, "%s: the first event is not WorkflowExecutionStarted", f)
		covered[typ] = append(covered[typ], filepath.Base(f))
		prefix := historyPrefix(typ)
		require.True(t, strings.HasPrefix(filepath.Base(f), prefix+"_") && len(filepath.Base(f)) > len(prefix+"_.json"),
			"%s is a history of %s: name it %s_<scenario>.json (docs/production.md)", f, typ, prefix)
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			require.Contains(t, registered, typ, "%s is a history of %q, which the worker does not register", f, typ)
			// A replayer per history: one failing replay cannot leave state behind for the next.
			r, err := worker.NewReplayer()
			require.NoError(t, err)
			require.NoError(t, r.ReplayWorkflowHistory(nil, hist), "%s (%s) no longer replays: the change is not deterministic; "+
				"guard it with workflow.GetVersion instead of re-recording", f, typ)
		})
	}
	for _, typ := range registered {
		require.NotEmpty(t, covered[typ], "workflow type %q has no recorded history in testdata/: "+
			"record one (make record-histories, see e2e/record_histories_test.go)", typ)
	}
}

// historyPrefix is how a history file of a workflow type begins: the type without its
// Workflow suffix, in snake case (PCTimerWorkflow: pc_timer).
func historyPrefix(typ string) string {
	name := strings.TrimSuffix(typ, "Workflow")
	var b strings.Builder
	for i, r := range name {
		upper := unicode.IsUpper(r)
		if upper && i > 0 {
			prev := rune(name[i-1])
			nextLower := i+1 < len(name) && unicode.IsLower(rune(name[i+1]))
			if unicode.IsLower(prev) || (unicode.IsUpper(prev) && nextLower) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

func readHistory(t *testing.T, path string) *historypb.History {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	hist, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	require.NoError(t, err, path)
	require.NotEmpty(t, hist.GetEvents(), path)
	return hist
}
