package worker

import (
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"

	"go.temporal.io/sdk/activity"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/store"
)

// Replayer is a workflow replayer with every tickgate workflow registered by Register
// itself, under its production name, so that replay tests check the real registrations.
type Replayer struct {
	sdkworker.WorkflowReplayer
	// NexusServiceRegistry is left nil: tickgate registers no Nexus service, and one added
	// panics here so that the replayer is extended with it.
	sdkworker.NexusServiceRegistry
	// Types are the registered workflow type names, sorted.
	Types []string
}

// NewReplayer registers the workflows as a real worker does; activities are not needed to
// replay and are dropped.
func NewReplayer() (*Replayer, error) {
	r := &Replayer{WorkflowReplayer: sdkworker.NewWorkflowReplayer()}
	// The store is never used: no activity runs during a replay.
	if err := Register(r, Deps{Store: &store.Store{}}); err != nil {
		return nil, fmt.Errorf("register workflows for replay: %w", err)
	}
	slices.Sort(r.Types)
	return r, nil
}

// RegisterWorkflow registers w under its function name, as the SDK does.
func (r *Replayer) RegisterWorkflow(w any) {
	r.RegisterWorkflowWithOptions(w, workflow.RegisterOptions{})
}

// RegisterWorkflowWithOptions registers w and records its type name.
func (r *Replayer) RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions) {
	name := options.Name
	if name == "" {
		name = functionName(w)
	}
	r.Types = append(r.Types, name)
	r.WorkflowReplayer.RegisterWorkflowWithOptions(w, options)
}

// RegisterActivity drops the activity: a replay runs none.
func (r *Replayer) RegisterActivity(any) {}

// RegisterActivityWithOptions drops the activity: a replay runs none.
func (r *Replayer) RegisterActivityWithOptions(any, activity.RegisterOptions) {}

// RegisterDynamicActivity drops the activity: a replay runs none.
func (r *Replayer) RegisterDynamicActivity(any, activity.DynamicRegisterOptions) {}

// RegisterDynamicWorkflow panics: a dynamic workflow answers any type, so the replay tests
// could not tell which types need a history.
func (r *Replayer) RegisterDynamicWorkflow(any, workflow.DynamicRegisterOptions) {
	panic("worker.Replayer: dynamic workflows are not supported")
}

// functionName is the name the SDK registers a workflow function under when no name is
// given: the function's own name, without its package.
func functionName(w any) string {
	full := runtime.FuncForPC(reflect.ValueOf(w).Pointer()).Name()
	return strings.TrimSuffix(full[strings.LastIndex(full, ".")+1:], "-fm")
}
