package api_test

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// jsonFields lists a struct's JSON field names (embedded structs flattened).
func jsonFields(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// TestOpenAPISchemasMatchGoTypes: each request and response schema of the document has
// exactly the JSON fields of the Go type the handlers decode or answer with.
func TestOpenAPISchemasMatchGoTypes(t *testing.T) {
	t.Parallel()
	doc := loadDoc(t)
	for schema, v := range map[string]any{
		"CreateScheduleRequest":  api.CreateScheduleRequest{},
		"BulkCreateRequest":      api.BulkCreateRequest{},
		"BulkCreate":             api.BulkCreateView{},
		"UpdateScheduleRequest":  api.UpdateScheduleRequest{},
		"AppliedSchedule":        api.AppliedScheduleView{},
		"FieldChange":            store.FieldChange{},
		"PauseRequest":           api.PauseScheduleRequest{},
		"ResumeRequest":          api.ResumeScheduleRequest{},
		"BulkStateRequest":       api.BulkStateRequest{},
		"BulkState":              api.BulkStateView{},
		"HistoryEntry":           api.HistoryEntryView{},
		"TriggerRequest":         api.TriggerScheduleRequest{},
		"RescheduleRequest":      workflows.RescheduleRequest{},
		"BackfillRequest":        workflows.BackfillRequest{},
		"Spec":                   schedulespec.Spec{},
		"Action":                 api.ScheduleAction{},
		"Policies":               api.SchedulePolicies{},
		"Schedule":               api.ScheduleView{},
		"Run":                    api.RunView{},
		"Trigger":                api.TriggerView{},
		"Event":                  api.EventView{},
		"CreateRolloutRequest":   api.RolloutRequest{},
		"Rollout":                api.RolloutView{},
		"TaskRun":                api.TaskRunView{},
		"TaskResultRequest":      api.TaskResultRequest{},
		"CreatePCRequest":        api.CreatePCRequest{},
		"PC":                     api.PCView{},
		"CreateDeviceRequest":    api.CreateDeviceRequest{},
		"PatchDeviceRequest":     api.PatchDeviceRequest{},
		"Device":                 api.DeviceView{},
		"CreateTaskRequest":      api.CreateDeviceTaskRequest{},
		"Task":                   api.DeviceTaskView{},
		"TaskDevice":             api.DeviceExecutionDTO{},
		"TaskDeviceEvent":        api.DeviceExecutionEventView{},
		"AgentResultRequest":     api.ResultRequest{},
		"AgentResult":            api.ResultView{},
		"CreateTokenRequest":     api.TokenRequest{},
		"Token":                  api.TokenView{},
		"CreatedToken":           api.CreatedToken{},
		"PreviewScheduleRequest": api.CreateScheduleRequest{},
		"Preview":                api.PreviewView{},
		"Lateness":               api.Lateness{},
		"RunCounts":              api.RunCounts{},
		"StatsBucket":            api.StatsBucket{},
		"ScheduleStats":          api.ScheduleStatsView{},
		"Overview":               api.OverviewView{},

		"ScheduleRun": api.ScheduleRunView{},

		"Strategy":        domain.Strategy{},
		"Wave":            domain.Wave{},
		"HealthCheck":     domain.HealthCheck{},
		"RolloutAbort":    domain.RolloutAbort{},
		"Rate":            domain.Rate{},
		"ExponentialRate": domain.ExponentialRate{},
		"Window":          domain.Window{},
		"RolloutWave":     api.WaveView{},
		"HealthResult":    store.HealthResult{},
		"FreezeRequest":   api.FreezeRequest{},
		"Freeze":          api.FreezeView{},
		"FreezeState":     api.FreezeStateView{},
		"Retry":           domain.Retry{},
		"Attempt":         api.AttemptView{},
		"Redrive":         api.RedriveView{},
		"Secret":          api.SecretView{},

		"CreatedSchedule": api.CreatedScheduleView{},
		"Slot":            api.SlotView{},
		"PCSlots":         api.PCSlotsView{},
	} {
		s, ok := doc.Components.Schemas[schema]
		require.True(t, ok, "schema %s missing", schema)
		props, _ := s["properties"].(map[string]any)
		var names []string
		for n := range props {
			names = append(names, n)
		}
		sort.Strings(names)
		assert.Equal(t, jsonFields(reflect.TypeOf(v)), names, "schema %s and Go type %T disagree", schema, v)
	}
	// The bulk create's items.
	bulkItem := doc.Components.Schemas["BulkCreate"]["properties"].(map[string]any)["items"].(map[string]any)["items"].(map[string]any)["properties"].(map[string]any)
	var bulkNames []string
	for n := range bulkItem {
		bulkNames = append(bulkNames, n)
	}
	sort.Strings(bulkNames)
	require.Equal(t, jsonFields(reflect.TypeOf(api.BulkCreatedItem{})), bulkNames)
	// The rollout's task items, the claim and ack bodies are inline.
	items := doc.Components.Schemas["CreateRolloutRequest"]["properties"].(map[string]any)["tasks"].(map[string]any)["items"].(map[string]any)["properties"].(map[string]any)
	var names []string
	for n := range items {
		names = append(names, n)
	}
	sort.Strings(names)
	require.Equal(t, jsonFields(reflect.TypeOf(api.TaskRequest{})), names)
	require.Equal(t, []string{"max", "wait"}, jsonFields(reflect.TypeOf(api.ClaimRequest{})))
	require.Equal(t, []string{"attempt"}, jsonFields(reflect.TypeOf(api.AckRequest{})))
}
