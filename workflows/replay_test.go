package workflows_test

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/store"
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
	registered := newReplayRegistry(t).types
	require.NotEmpty(t, registered)

	covered := map[string][]string{}
	for _, f := range files {
		hist := readHistory(t, f)
		typ := hist.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowType().GetName()
		require.NotEmpty(t, typ, "%s: the first event is not WorkflowExecutionStarted", f)
		covered[typ] = append(covered[typ], filepath.Base(f))
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			require.Contains(t, registered, typ, "%s is a history of %q, which the worker does not register", f, typ)
			// A replayer per history: one failing replay cannot leave state behind for the next.
			r := newReplayRegistry(t)
			require.NoError(t, r.ReplayWorkflowHistory(nil, hist), "%s (%s) no longer replays: the change is not deterministic; "+
				"guard it with workflow.GetVersion instead of re-recording", f, typ)
		})
	}
	for _, typ := range registered {
		require.NotEmpty(t, covered[typ], "workflow type %q has no recorded history in testdata/: "+
			"record one (make record-histories, see e2e/record_histories_test.go)", typ)
	}
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

// replayRegistry is a replayer that worker.Register registers into, as it registers a
// real worker: the workflows go to the replayer under their registered names (recorded in
// types); activities are not needed to replay and are dropped.
type replayRegistry struct {
	sdkworker.WorkflowReplayer
	// NexusServiceRegistry is left nil: tickgate registers no Nexus service, and one added
	// panics here so that this test is extended with it.
	sdkworker.NexusServiceRegistry
	types []string
}

func newReplayRegistry(t *testing.T) *replayRegistry {
	t.Helper()
	r := &replayRegistry{WorkflowReplayer: sdkworker.NewWorkflowReplayer()}
	// The store is never used: no activity runs during a replay.
	require.NoError(t, worker.Register(r, worker.Deps{Store: &store.Store{}}))
	slices.Sort(r.types)
	return r
}

func (r *replayRegistry) RegisterWorkflow(w any) {
	r.RegisterWorkflowWithOptions(w, workflow.RegisterOptions{})
}

func (r *replayRegistry) RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions) {
	name := options.Name
	if name == "" {
		name = functionName(w)
	}
	r.types = append(r.types, name)
	r.WorkflowReplayer.RegisterWorkflowWithOptions(w, options)
}

func (r *replayRegistry) RegisterActivity(any)                                         {}
func (r *replayRegistry) RegisterActivityWithOptions(any, activity.RegisterOptions)    {}
func (r *replayRegistry) RegisterDynamicActivity(any, activity.DynamicRegisterOptions) {}
func (r *replayRegistry) RegisterDynamicWorkflow(any, workflow.DynamicRegisterOptions) {
	// A dynamic workflow answers any type: this test could not tell which types need a history.
	panic("replay test: dynamic workflows are not supported")
}

// functionName is the name the SDK registers a workflow function under when no name is
// given: the function's own name, without its package.
func functionName(w any) string {
	full := runtime.FuncForPC(reflect.ValueOf(w).Pointer()).Name()
	return strings.TrimSuffix(full[strings.LastIndex(full, ".")+1:], "-fm")
}
