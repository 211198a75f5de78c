// Package histories checks the chaos run's client-side histories for linearizability with
// porcupine: what the run's clients asked of tickgate, when, and what they were answered,
// against a sequential model of each object — a device execution, a schedule, a rollout
// task. A history is linearizable when every operation can be placed at one instant between
// its call and its return so that the model, applied in that order, gives every answer the
// clients saw. An operation whose answer never came (the request was lost, or answered 5xx)
// may have taken effect or not, at any time after its call: it is kept open to the history's
// end with an unknown outcome, and the models accept either.
package histories

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Result is one history's check.
type Result struct {
	Name string
	// Ops and Objects count the operations and the objects (partitions) checked.
	Ops, Objects int
	// Linearizable is porcupine's verdict; TimedOut means it gave up first (not a pass).
	Linearizable, TimedOut bool
	// Visualization is the HTML file porcupine drew of a history that failed.
	Visualization string
}

func (r Result) String() string {
	verdict := "linearizable"
	switch {
	case r.TimedOut:
		verdict = "not decided (timed out)"
	case !r.Linearizable:
		verdict = "NOT linearizable, see " + r.Visualization
	}
	return fmt.Sprintf("%s: %d operations on %d objects: %s", r.Name, r.Ops, r.Objects, verdict)
}

// Passed is true when porcupine found a linearization.
func (r Result) Passed() bool { return r.Linearizable && !r.TimedOut }

// Check runs porcupine on ops under model; a history that is not linearizable has its
// visualization written to dir (named after name).
func Check(name string, model porcupine.Model, ops []porcupine.Operation, dir string, timeout time.Duration) (Result, error) {
	r := Result{Name: name, Ops: len(ops)}
	if model.Partition != nil {
		r.Objects = len(model.Partition(ops))
	}
	verdict, info := porcupine.CheckOperationsVerbose(model, ops, timeout)
	r.Linearizable = verdict == porcupine.Ok
	r.TimedOut = verdict == porcupine.Unknown
	if verdict == porcupine.Illegal && dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil { // #nosec G301 -- where an illegal history is written to be read
			return r, fmt.Errorf("histories: %w", err)
		}
		path := filepath.Join(dir, "porcupine-"+strings.ReplaceAll(name, " ", "-")+".html")
		if err := porcupine.VisualizePath(model, info, path); err != nil {
			return r, fmt.Errorf("histories: visualize %s: %w", name, err)
		}
		r.Visualization = path
	}
	return r, nil
}

// clients numbers the clients of a history for porcupine's visualization (zero-indexed).
type clients map[string]int

func (c clients) id(name string) int {
	if n, ok := c[name]; ok {
		return n
	}
	c[name] = len(c)
	return c[name]
}

// partitionBy splits a history into objects by key.
func partitionBy[K comparable](key func(porcupine.Operation) K) func([]porcupine.Operation) [][]porcupine.Operation {
	return func(ops []porcupine.Operation) [][]porcupine.Operation {
		index := map[K]int{}
		var out [][]porcupine.Operation
		for _, op := range ops {
			k := key(op)
			i, ok := index[k]
			if !ok {
				i = len(out)
				index[k] = i
				out = append(out, nil)
			}
			out[i] = append(out[i], op)
		}
		return out
	}
}
