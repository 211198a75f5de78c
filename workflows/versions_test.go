package workflows_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/domain"
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
// testdata replays its new branch — pinned at the change's version and holding the event
// only that branch produces (branchEvidence). A GetVersion that lands without a recorded
// history that took its branch fails here.
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
		ev, ok := branchEvidence[c.ID]
		require.True(t, ok, "change %q: say in branchEvidence which event only its new branch writes to a history", c.ID)
		var took []string
		for _, f := range markers[key] {
			if ev.shows(readHistory(t, filepath.Join("testdata", f)).GetEvents()) {
				took = append(took, f)
			}
		}
		require.NotEmpty(t, took, "change %q: none of the histories pinned at version %d (%v) shows its new branch ran "+
			"(%s): record one that takes it", c.ID, c.Max, markers[key], ev.what)
	}
}

// evidence is an event only a change's new branch writes to a history: what it is, and a
// test for it over a history's events.
type evidence struct {
	what  string
	shows func(events []*historypb.HistoryEvent) bool
}

// branchEvidence says, for every change, how a history shows that its new branch ran. The
// version marker does not: every run pins every change of its type at its start
// (pinChanges), whether or not it ever reaches the branch.
var branchEvidence = map[string]evidence{
	"http-delivery-loads-run": {"a LoadHTTPDelivery local activity (the old branch trusted the delivery in its input)", func(events []*historypb.HistoryEvent) bool {
		return slices.ContainsFunc(events, func(ev *historypb.HistoryEvent) bool {
			typ, _ := localActivity(ev)
			return typ == "LoadHTTPDelivery"
		})
	}},
	"rollout-runner": {"a RunRolloutTasks activity that is the rollout's runner (Refill)", func(events []*historypb.HistoryEvent) bool {
		return slices.ContainsFunc(events, func(ev *historypb.HistoryEvent) bool {
			a := ev.GetActivityTaskScheduledEventAttributes()
			return a.GetActivityType().GetName() == "RunRolloutTasks" && strings.Contains(string(first(a.GetInput()).GetData()), `"Refill":true`)
		})
	}},
	"rollout-waves": {"a wave's health checks (a RunWaveChecks activity)", func(events []*historypb.HistoryEvent) bool {
		return slices.ContainsFunc(events, func(ev *historypb.HistoryEvent) bool {
			return ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == "RunWaveChecks"
		})
	}},
	"schedule-calendars": {"an ExcludedBy local activity", func(events []*historypb.HistoryEvent) bool {
		return slices.ContainsFunc(events, func(ev *historypb.HistoryEvent) bool {
			typ, _ := localActivity(ev)
			return typ == "ExcludedBy"
		})
	}},
	"schedule-fire-premise": {"a RecordTick answered with runs in flight the workflow had not counted (RunRecord.Unknown): only a record that carries its premise is checked", func(events []*historypb.HistoryEvent) bool {
		return slices.ContainsFunc(events, func(ev *historypb.HistoryEvent) bool {
			typ, result := localActivity(ev)
			var run struct{ Unknown []struct{ ID int64 } }
			return typ == "RecordTick" && json.Unmarshal(result, &run) == nil && len(run.Unknown) > 0
		})
	}},
	"schedule-max-concurrent": {"a tick recorded BUFFERED by a schedule under allow_all (only the cap makes one wait)", func(events []*historypb.HistoryEvent) bool {
		allowAll := false
		for _, ev := range events {
			switch typ, result := localActivity(ev); typ {
			case "TakeOwnership", "LoadSchedule":
				var def struct {
					Overlap    domain.Overlap
					Definition struct{ Overlap domain.Overlap }
				}
				_ = json.Unmarshal(result, &def)
				allowAll = def.Overlap == domain.OverlapAllowAll || def.Definition.Overlap == domain.OverlapAllowAll
			case "RecordTick":
				var run struct{ Status domain.RunStatus }
				_ = json.Unmarshal(result, &run)
				if allowAll && run.Status == domain.RunBuffered {
					return true
				}
			}
		}
		return false
	}},
	"schedule-one-time-reload": {"a one-time tick recorded after a reload that came once its at had passed (the old branch counted from the reload)", func(events []*historypb.HistoryEvent) bool {
		var taskStarted, reloadedAt time.Time
		var at *time.Time
		for _, ev := range events {
			if ev.GetWorkflowTaskStartedEventAttributes() != nil {
				taskStarted = ev.GetEventTime().AsTime() // workflow.Now of the task that follows
			}
			switch typ, result := localActivity(ev); typ {
			case "LoadSchedule":
				var def struct{ Spec struct{ At *time.Time } }
				_ = json.Unmarshal(result, &def)
				at, reloadedAt = def.Spec.At, taskStarted
			case "RecordTick":
				var run struct{ ScheduledAt time.Time }
				_ = json.Unmarshal(result, &run)
				if at != nil && at.Before(reloadedAt) && run.ScheduledAt.Equal(*at) {
					return true
				}
			}
		}
		return false
	}},
	"http-delivery-after-first-attempt": {"the side effect branchTaken writes where a delivery goes on from the first attempt the worker that released its fire sent",
		branchTakenEvent("http-delivery-after-first-attempt")},
	"schedule-one-writer": {"the side effect branchTaken writes where the loop takes its first command or run end",
		branchTakenEvent("schedule-one-writer")},
	"schedule-resident": {"the side effect branchTaken writes where a resident run first stays open at rest",
		branchTakenEvent("schedule-resident")},
}

// branchTakenEvent finds the side effect branchTaken writes for change id.
func branchTakenEvent(id string) func(events []*historypb.HistoryEvent) bool {
	return func(events []*historypb.HistoryEvent) bool {
		return slices.ContainsFunc(events, func(ev *historypb.HistoryEvent) bool {
			m := ev.GetMarkerRecordedEventAttributes()
			if m.GetMarkerName() != "SideEffect" {
				return false
			}
			var value string
			_ = converter.GetDefaultDataConverter().FromPayload(first(m.GetDetails()["data"]), &value)
			return value == workflows.BranchTakenPrefix+id
		})
	}
}

// localActivity reads a local activity's marker: its type and the JSON of its result (""
// when ev is none).
func localActivity(ev *historypb.HistoryEvent) (typ string, result []byte) {
	m := ev.GetMarkerRecordedEventAttributes()
	if m.GetMarkerName() != "LocalActivity" {
		return "", nil
	}
	var data struct{ ActivityType string }
	if err := json.Unmarshal(first(m.GetDetails()["data"]).GetData(), &data); err != nil {
		return "", nil
	}
	return data.ActivityType, first(m.GetDetails()["result"]).GetData()
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
