package workflows_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/workflows"
)

// getVersionCall is a workflow.GetVersion call in the workflow code: its change id and
// the version it takes at most.
type getVersionCall struct {
	id  string
	max workflow.Version
	at  string
}

// getVersionCalls parses the non-test files of this package and returns every
// workflow.GetVersion call whose change id is a string constant or literal.
func getVersionCalls(t *testing.T) []getVersionCall {
	t.Helper()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	consts := map[string]string{}
	var parsed []*ast.File
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		require.NoError(t, err)
		parsed = append(parsed, file)
		ast.Inspect(file, func(n ast.Node) bool {
			if spec, ok := n.(*ast.ValueSpec); ok {
				for i, name := range spec.Names {
					if i < len(spec.Values) {
						if lit, ok := spec.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							consts[name.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			}
			return true
		})
	}
	var calls []getVersionCall
	for _, file := range parsed {
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "GetVersion" || len(call.Args) != 4 {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "workflow" {
				return true
			}
			c := getVersionCall{at: fset.Position(call.Pos()).String()}
			switch arg := call.Args[1].(type) {
			case *ast.BasicLit:
				c.id, _ = strconv.Unquote(arg.Value)
			case *ast.Ident:
				c.id = consts[arg.Name]
			}
			if c.id == "" {
				return true // pinChanges' own call, by a Change's ID: covered by the list
			}
			if lit, ok := call.Args[3].(*ast.BasicLit); ok {
				v, _ := strconv.Atoi(lit.Value)
				c.max = workflow.Version(v)
			}
			calls = append(calls, c)
			return true
		})
	}
	return calls
}

// versionMarkers lists the "<change id>-<version>" of every version marker in the
// recorded histories.
func versionMarkers(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob("testdata/*.json")
	require.NoError(t, err)
	dc := converter.GetDefaultDataConverter()
	out := map[string][]string{}
	for _, f := range files {
		for _, ev := range readHistory(t, f).GetEvents() {
			m := ev.GetMarkerRecordedEventAttributes()
			if m.GetMarkerName() != "Version" {
				continue
			}
			var id string
			var version workflow.Version
			require.NoError(t, dc.FromPayload(first(m.GetDetails()["change-id"]), &id), f)
			require.NoError(t, dc.FromPayload(first(m.GetDetails()["version"]), &version), f)
			key := id + "-" + strconv.Itoa(int(version))
			out[key] = append(out[key], filepath.Base(f))
		}
	}
	return out
}

func first(p *commonpb.Payloads) *commonpb.Payload {
	if p == nil || len(p.GetPayloads()) == 0 {
		return nil
	}
	return p.GetPayloads()[0]
}

// TestEveryChangeIsListedPinnedAndReplayed holds the workflow changes to the rule that
// lets them retire (workflows/versions.go, docs/production.md): every change id the code
// passes to workflow.GetVersion is listed in workflows.Changes with the version it takes,
// every workflow type a change names pins it at its start, and a recorded history in
// testdata replays its new branch. A GetVersion that lands without a recorded history
// fails here.
func TestEveryChangeIsListedPinnedAndReplayed(t *testing.T) {
	t.Parallel()
	listed := map[string]workflows.Change{}
	for _, c := range workflows.Changes {
		require.NotContains(t, listed, c.ID, "change %q listed twice", c.ID)
		listed[c.ID] = c
	}
	inCode := map[string]bool{}
	for _, call := range getVersionCalls(t) {
		inCode[call.id] = true
		c, ok := listed[call.id]
		require.True(t, ok, "%s: change %q is not in workflows.Changes", call.at, call.id)
		require.Equal(t, c.Max, call.max, "%s: change %q takes version %d, the list says %d", call.at, call.id, call.max, c.Max)
	}
	pins := pinCalls(t)
	markers := versionMarkers(t)
	for _, c := range workflows.Changes {
		require.True(t, inCode[c.ID], "change %q is listed but no GetVersion calls it: retire it from the list", c.ID)
		for _, typ := range c.Workflows {
			require.True(t, pins[typ], "%s does not pin its changes at its start (pinChanges)", typ)
		}
		key := c.ID + "-" + strconv.Itoa(int(c.Max))
		require.NotEmpty(t, markers[key], "change %q has no recorded history replaying version %d: record one "+
			"(make record-histories)", c.ID, c.Max)
	}
}

// pinCalls are the workflow types the code pins changes for: pinChanges(ctx, <Type>).
func pinCalls(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		require.NoError(t, err)
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "pinChanges" && len(call.Args) == 2 {
				if typ, ok := call.Args[1].(*ast.Ident); ok {
					out[typeName(typ.Name)] = true
				}
			}
			return true
		})
	}
	return out
}

// typeName resolves the workflow type constants pinChanges is called with.
func typeName(ident string) string {
	switch ident {
	case "RolloutWorkflowType":
		return workflows.RolloutWorkflowType
	case "PromoterWorkflowType":
		return workflows.PromoterWorkflowType
	case "ScheduleWorkflowType":
		return workflows.ScheduleWorkflowType
	case "SchedulePlannerType":
		return workflows.SchedulePlannerType
	case "HTTPDeliveryWorkflowType":
		return workflows.HTTPDeliveryWorkflowType
	}
	return ident
}
