package starter

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/tickgate/tickgate/workflows"
)

// ChangeUse is how the open workflows of a namespace stand to one workflow change: how many
// are open of the types that call it, and how many of those started before it — they lack
// its "<id>-<version>" in TemporalChangeVersion, so they may still take its old branch.
type ChangeUse struct {
	Change workflows.Change
	Open   int
	// NeedOld are the open runs without the change's marker. The old branch may retire
	// once this is zero wherever the workflows run.
	NeedOld int
}

// ChangeReport counts, per workflow change (workflows.Changes), the open workflows that may
// still need its old branch (docs/production.md "Retiring a workflow change").
func (s *Starter) ChangeReport(ctx context.Context) ([]ChangeUse, error) {
	markers := map[string][][]string{} // workflow type → each open run's change markers
	for _, c := range workflows.Changes {
		for _, typ := range c.Workflows {
			if _, ok := markers[typ]; ok {
				continue
			}
			runs, err := s.openRunMarkers(ctx, typ)
			if err != nil {
				return nil, err
			}
			markers[typ] = runs
		}
	}
	out := make([]ChangeUse, 0, len(workflows.Changes))
	for _, c := range workflows.Changes {
		u := ChangeUse{Change: c}
		want := c.ID + "-" + strconv.Itoa(int(c.Max))
		for _, typ := range c.Workflows {
			for _, run := range markers[typ] {
				u.Open++
				if !slices.Contains(run, want) {
					u.NeedOld++
				}
			}
		}
		out = append(out, u)
	}
	return out, nil
}

// openRunMarkers lists each open run of a workflow type with the change markers its
// TemporalChangeVersion holds.
func (s *Starter) openRunMarkers(ctx context.Context, workflowType string) ([][]string, error) {
	var out [][]string
	var token []byte
	for {
		resp, err := s.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query:         fmt.Sprintf(`WorkflowType = %q AND ExecutionStatus = "Running"`, workflowType),
			NextPageToken: token,
		})
		if err != nil {
			return nil, fmt.Errorf("list open %s workflows: %w", workflowType, err)
		}
		for _, e := range resp.Executions {
			var versions []string
			if p := e.GetSearchAttributes().GetIndexedFields()["TemporalChangeVersion"]; p != nil {
				// A keyword list's payload is its JSON array.
				if err := json.Unmarshal(p.GetData(), &versions); err != nil {
					return nil, fmt.Errorf("TemporalChangeVersion of %s: %w", e.GetExecution().GetWorkflowId(), err)
				}
			}
			out = append(out, versions)
		}
		token = resp.NextPageToken
		if len(token) == 0 {
			return out, nil
		}
	}
}
