package api

// Fuzz targets for the request bodies fuzz_test.go leaves: tokens, calendars, freezes, bulk
// creates and bulk pauses, external task results, and the schedule commands as their
// handlers read them (ReadBody and workflows.DecodeCommand, the rules every door shares).
// TestEveryRequestBodyIsFuzzed finds every decoder call of the package and fails on one
// no target covers.

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/outbound"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/workflows"
)

// fuzzedDecoders names, for every decoder call in the package's handlers ("Decode T",
// "decodeCommand T", T as its variable is declared), the fuzz target that covers it.
var fuzzedDecoders = map[string]string{
	"Decode CreateScheduleRequest":               "FuzzCreateScheduleRequest",
	"Decode UpdateScheduleRequest":               "FuzzUpdateScheduleRequest",
	"Decode RolloutRequest":                      "FuzzRolloutRequest",
	"Decode struct{}":                            "FuzzRequestBodies",
	"Decode CreatePCRequest":                     "FuzzRequestBodies",
	"Decode CreateDeviceRequest":                 "FuzzRequestBodies",
	"Decode PatchDeviceRequest":                  "FuzzRequestBodies",
	"Decode CreateDeviceTaskRequest":             "FuzzRequestBodies",
	"Decode ClaimRequest":                        "FuzzRequestBodies",
	"Decode AckRequest":                          "FuzzRequestBodies",
	"Decode ResultRequest":                       "FuzzRequestBodies",
	"Decode TokenRequest":                        "FuzzTokenRequest",
	"Decode CalendarRequest":                     "FuzzCalendarRequest",
	"Decode FreezeRequest":                       "FuzzFreezeRequest",
	"Decode BulkCreateRequest":                   "FuzzBulkCreateRequest",
	"Decode BulkStateRequest":                    "FuzzBulkStateRequest",
	"Decode TaskResultRequest":                   "FuzzTaskResultRequest",
	"Decode RotateSecretRequest":                 "FuzzRotateSecretRequest",
	"Decode BulkRedriveRequest":                  "FuzzBulkRedriveRequest",
	"decodeCommand PauseScheduleRequest":         "FuzzScheduleCommand",
	"decodeCommand ResumeScheduleRequest":        "FuzzScheduleCommand",
	"decodeCommand TriggerScheduleRequest":       "FuzzScheduleCommand",
	"decodeCommand workflows.RescheduleRequest":  "FuzzScheduleCommand",
	"decodeCommand workflows.BackfillRequest":    "FuzzScheduleCommand",
	"OptionalRetry.UnmarshalJSON (in an update)": "FuzzUpdateScheduleRequest",
}

// TestEveryRequestBodyIsFuzzed parses the package's handlers and lists every call of a
// body decoder (Decode, decodeCommand) with the type it decodes into: each must be in
// fuzzedDecoders, so a new request body without a fuzz target fails here, and each entry
// must still be called somewhere.
func TestEveryRequestBodyIsFuzzed(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	found := map[string]bool{"OptionalRetry.UnmarshalJSON (in an update)": true}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			fn, ok := call.Fun.(*ast.Ident)
			if !ok || (fn.Name != "Decode" && fn.Name != "decodeCommand") {
				return true
			}
			arg := 1
			if fn.Name == "decodeCommand" {
				arg = 2
			}
			require.Greater(t, len(call.Args), arg, "%s: %s call", path, fn.Name)
			addr, ok := call.Args[arg].(*ast.UnaryExpr)
			require.True(t, ok && addr.Op == token.AND, "%s: %s decodes into %s, not &variable", path, fn.Name, types.ExprString(call.Args[arg]))
			v, ok := addr.X.(*ast.Ident)
			require.True(t, ok && v.Obj != nil, "%s: %s decodes into %s", path, fn.Name, types.ExprString(addr.X))
			spec, ok := v.Obj.Decl.(*ast.ValueSpec)
			require.True(t, ok && spec.Type != nil, "%s: declare %s with its type (var %s T)", path, v.Name, v.Name)
			key := fn.Name + " " + types.ExprString(spec.Type)
			_, fuzzed := fuzzedDecoders[key]
			require.True(t, fuzzed, "%s: %s has no fuzz target (add one, and an entry in fuzzedDecoders)", path, key)
			found[key] = true
			return true
		})
	}
	makefile, err := os.ReadFile(filepath.Join("..", "Makefile"))
	require.NoError(t, err)
	for key, target := range fuzzedDecoders {
		require.True(t, found[key], "fuzzedDecoders lists %q, which no handler calls", key)
		require.Contains(t, string(makefile), "-fuzz '^"+target+"$$'", "make fuzz runs %s", target)
	}
}

// fuzzContext is a POST carrying body as JSON.
func fuzzContext(body string) echo.Context {
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	req.Header.Set(echo.HeaderContentType, "application/json")
	return fuzzEcho.NewContext(req, httptest.NewRecorder())
}

// FuzzTokenRequest decodes and validates POST /tokens bodies.
func FuzzTokenRequest(f *testing.F) {
	for _, seed := range []string{
		`{"role":"viewer"}`, `{"role":"deployer","note":"ci"}`, `{"role":"agent","pc":"pc-7","note":"rack 7"}`,
		`{"role":"agent"}`, `{"role":"agent","pc":"bad name!"}`, `{"role":"viewer","pc":"pc-1"}`, `{"role":"root"}`,
		`{"role":5}`, `{"role":"viewer","extra":1}`, `{"role":"admin","note":"` + strings.Repeat("n", 201) + `"}`, ``, `[]`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		req, ok := fuzzDecode[TokenRequest](t, body, "application/json", false)
		if !ok {
			return
		}
		if err := req.validate(); err != nil {
			requireValidationProblem(t, err, reflect.TypeFor[TokenRequest](), body)
			return
		}
		require.True(t, req.Role.Valid())
		require.Equal(t, req.Role == domain.RoleAgent, req.PC != "", "an agent token, and only one, names its PC")
		require.LessOrEqual(t, len(req.Note), 200)
	})
}

// FuzzCalendarRequest decodes and validates POST /calendars and PUT /calendars/{name} bodies.
func FuzzCalendarRequest(f *testing.F) {
	for _, seed := range []string{
		`{"name":"holidays","timezone":"Europe/Berlin","dates":["2026-12-25","2026-12-26"]}`,
		`{"name":"freeze","ranges":[{"start":"2026-12-20T00:00:00Z","end":"2027-01-02T00:00:00Z"}]}`,
		`{"name":"c","dates":["2026-02-30"]}`, `{"name":"c","timezone":"Mars/Olympus"}`, `{"name":"bad name!"}`,
		`{"name":"c","ranges":[{"start":"2027-01-02T00:00:00Z","end":"2026-12-20T00:00:00Z"}]}`,
		`{"name":"c","ranges":[{"start":"soon"}],"version":3}`, `{"name":"c","dates":"2026-01-01"}`, `{}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		req, ok := fuzzDecode[CalendarRequest](t, body, "application/json", false)
		if !ok {
			return
		}
		cal, err := req.validate()
		if err != nil {
			requireValidationProblem(t, err, reflect.TypeFor[CalendarRequest](), body)
			return
		}
		require.Equal(t, req.Name, cal.Name)
		// What is stored validates again to the same.
		var ranges []schedulespec.CalendarRange
		require.NoError(t, json.Unmarshal(cal.Ranges, &ranges))
		again, err := CalendarRequest{Name: cal.Name, Timezone: cal.Timezone, Dates: cal.Dates, Ranges: ranges}.validate()
		require.NoError(t, err)
		require.Equal(t, cal, again)
	})
}

// FuzzFreezeRequest reads POST /freeze and /rollouts/{id}/freeze bodies as their handlers do.
func FuzzFreezeRequest(f *testing.F) {
	for _, seed := range []string{
		`{"reason":"incident 42"}`, `{"reason":"  "}`, `{"reason":""}`, `{}`, `{"reason":7}`, `{"why":"x"}`,
		`{"reason":"` + strings.Repeat("r", 1001) + `"}`, ``,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		reason, err := decodeFreeze(fuzzContext(body))
		if err != nil {
			requireProblem(t, err, reflect.TypeFor[FreezeRequest](), body)
			return
		}
		require.Equal(t, strings.TrimSpace(reason), reason)
		require.NotEmpty(t, reason)
		require.LessOrEqual(t, len(reason), 1000)
	})
}

// FuzzRotateSecretRequest decodes and judges POST /schedules/{name}/secret bodies: a grace
// from 0 to MaxSecretGrace, or a problem naming the field.
func FuzzRotateSecretRequest(f *testing.F) {
	for _, seed := range []string{
		``, `{}`, `{"grace":"24h"}`, `{"grace":"0s"}`, `{"grace":"169h"}`, `{"grace":"-1s"}`, `{"grace":7}`,
		`{"grace":"soon"}`, `{"grace":null}`, `{"graces":"1h"}`, `[]`, `{"grace":"1h","grace":"2h"}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		req, err := decodeRotateSecret(fuzzContext(body))
		if err != nil {
			requireProblem(t, err, reflect.TypeFor[RotateSecretRequest](), body)
			return
		}
		d := time.Duration(req.Grace)
		require.GreaterOrEqual(t, d, time.Duration(0))
		require.LessOrEqual(t, d, MaxSecretGrace)
	})
}

// FuzzBulkCreateRequest decodes and validates POST /schedules/bulk bodies.
func FuzzBulkCreateRequest(f *testing.F) {
	item := `{"name":"%s","spec":{"interval":"1h"},"action":{"kind":"event","topic":"t","type":"x"}}`
	for _, seed := range []string{
		`{"items":[` + strings.ReplaceAll(item, "%s", "a") + `,` + strings.ReplaceAll(item, "%s", "b") + `]}`,
		`{"items":[` + strings.ReplaceAll(item, "%s", "a") + `,` + strings.ReplaceAll(item, "%s", "a") + `]}`,
		`{"items":[{"name":"m","spec":{"interval":"1h"},"action":{"kind":"event"},"metrics":true}]}`,
		`{"items":[{"name":"n","spec":{"cron":"61 * * * *"},"action":{"kind":"event"}}]}`,
		`{"items":[{"name":"p","spec":{"interval":"1h"},"action":{"kind":"event"},"paused":true,"note":"` + strings.Repeat("n", 1001) + `"}]}`,
		`{"items":[]}`, `{"items":{}}`, `{}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		req, ok := fuzzDecode[BulkCreateRequest](t, body, "application/json", false)
		if !ok {
			return
		}
		rows, index, err := req.validate(fuzzNow, outbound.Rule{})
		if err != nil {
			requireValidationProblem(t, err, reflect.TypeFor[BulkCreateRequest](), body)
			return
		}
		require.Len(t, rows, len(req.Items))
		require.Len(t, index, len(req.Items), "the names are distinct")
		for i, row := range rows {
			require.Equal(t, req.Items[i].Name, row.Name)
			require.Equal(t, i, index[row.Name])
			require.LessOrEqual(t, len(row.PauseNote), workflows.MaxPauseNote)
		}
	})
}

// FuzzBulkStateRequest decodes and validates POST /schedules/pause and /resume bodies.
func FuzzBulkStateRequest(f *testing.F) {
	for _, seed := range []string{
		`{"selector":"team=billing","note":"maintenance"}`, `{"selector":"team=billing,tier!=gold"}`, `{"selector":""}`,
		`{"selector":"=x"}`, `{"selector":"team==a,,"}`, `{"selector":"a=b","note":"` + strings.Repeat("n", 1001) + `"}`, `{}`,
	} {
		f.Add(true, seed)
		f.Add(false, seed)
	}
	f.Fuzz(func(t *testing.T, pause bool, body string) {
		req, ok := fuzzDecode[BulkStateRequest](t, body, "application/json", false)
		if !ok {
			return
		}
		sel, err := req.validate(pause, "fuzz (token 1)")
		if err != nil {
			requireValidationProblem(t, err, reflect.TypeFor[BulkStateRequest](), body)
			return
		}
		require.NotEmpty(t, strings.TrimSpace(req.Selector))
		require.LessOrEqual(t, len(req.Note), workflows.MaxPauseNote)
		again, err := domain.ParseSelector(sel.String())
		require.NoError(t, err, "the selector as shown reads again: %q", sel.String())
		require.Equal(t, sel.String(), again.String())
	})
}

// FuzzBulkRedriveRequest decodes and judges POST /runs/redrive bodies: a continuation
// alone, or a selector with a range whose until is after its since; a page of 1 to
// MaxRedriveLimit runs.
func FuzzBulkRedriveRequest(f *testing.F) {
	for _, seed := range []string{
		`{"selector":"team=billing","since":"2026-01-01T00:00:00Z","until":"2026-01-02T00:00:00Z"}`,
		`{"since":"2026-01-01T00:00:00Z","until":"2026-01-02T00:00:00Z","limit":1000}`,
		`{"since":"2026-01-02T00:00:00Z","until":"2026-01-01T00:00:00Z"}`, `{"since":"2026-01-01T00:00:00Z"}`,
		`{"continue":"7"}`, `{"continue":"7","limit":5}`, `{"continue":"-1"}`, `{"continue":"x"}`,
		`{"continue":"7","selector":"a=b"}`, `{"limit":1001}`, `{"limit":-1}`, `{"selector":"=x"}`, `{}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		req, ok := fuzzDecode[BulkRedriveRequest](t, body, "application/json", false)
		if !ok {
			return
		}
		plan, err := req.validate()
		if err != nil {
			requireValidationProblem(t, err, reflect.TypeFor[BulkRedriveRequest](), body)
			return
		}
		require.GreaterOrEqual(t, plan.Limit, 1)
		require.LessOrEqual(t, plan.Limit, MaxRedriveLimit)
		if plan.Continue != 0 {
			require.Positive(t, plan.Continue)
			require.Empty(t, req.Selector)
			return
		}
		require.True(t, plan.Range.Until.After(plan.Range.Since), "a range ends after it begins")
	})
}

// FuzzTaskResultRequest decodes and validates POST /task-runs/{id}/result bodies.
func FuzzTaskResultRequest(f *testing.F) {
	for _, seed := range []string{
		`{"status":"DONE","output":{"rows":3}}`, `{"status":"FAILED","error":"migration failed"}`, `{"status":"RUNNING"}`,
		`{"status":"DONE","error":"` + strings.Repeat("e", 10001) + `"}`, `{"status":"DONE","output":[1,`, `{"status":1}`, `{}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		req, ok := fuzzDecode[TaskResultRequest](t, body, "application/json", false)
		if !ok {
			return
		}
		if err := validateTaskResult(*req); err != nil {
			requireValidationProblem(t, err, reflect.TypeFor[TaskResultRequest](), body)
			return
		}
		require.Contains(t, []domain.TaskRunStatus{domain.TaskRunDone, domain.TaskRunFailed}, req.Status)
		require.LessOrEqual(t, len(req.Error), 10000)
	})
}

// scheduleCommands are the schedule commands' bodies as their handlers read them.
var scheduleCommands = []struct {
	command    string
	allowEmpty bool
	newBody    func() any
}{
	{workflows.SchedulePause, true, func() any { return &PauseScheduleRequest{} }},
	{workflows.ScheduleResume, true, func() any { return &ResumeScheduleRequest{} }},
	{workflows.ScheduleTrigger, true, func() any { return &TriggerScheduleRequest{} }},
	{workflows.ScheduleReschedule, false, func() any { return &workflows.RescheduleRequest{} }},
	{workflows.ScheduleBackfill, false, func() any { return &workflows.BackfillRequest{} }},
}

// FuzzScheduleCommand reads the bodies of POST /schedules/{name}/pause, /resume, /trigger,
// /reschedule and /backfill as their handlers do (decodeCommand: the rules every door of a
// command shares) and judges them by the command's rules against a stored schedule. Every
// refusal is a 4xx problem naming a field of the command, or a key the body holds, or the
// payload as a whole; what is accepted encodes and decodes again to the same command.
func FuzzScheduleCommand(f *testing.F) {
	for i, seeds := range [][]string{
		{`{"note":"maintenance"}`, ``, `{"note":7}`, `{"note":"` + strings.Repeat("n", 1001) + `"}`},
		{`{"note":"back"}`, `{}`, `null`},
		{`{"overlap":"allow_all","input":{"x":[1,{"y":null}]}}`, `{"overlap":"never"}`, `{"input":`, `{"input":"x"}`},
		{`{"next_run_at":"2026-01-02T15:04:05.123456789-07:00"}`, `{"next_run_at":"tomorrow"}`, `{"next_run_at":null}`, `{"when":1}`},
		{`{"start":"2025-12-01T00:00:00Z","end":"2025-12-02T00:00:00Z","overlap":"buffer_all"}`, `{"start":"2026-13-01T00:00:00Z"}`,
			`{"start":"2025-12-02T00:00:00Z","end":"2025-12-01T00:00:00Z"}`, `[1]`, `"x"`},
	} {
		for _, s := range seeds {
			f.Add(uint8(i), s)
		}
	}
	spec, err := schedulespec.Normalize(schedulespec.Spec{Cron: "0 * * * *"}, fuzzNow.AddDate(0, -3, 0))
	if err != nil {
		f.Fatal(err)
	}
	target := workflows.CommandTarget{Action: domain.ActionWorkflow, Spec: spec, CreatedAt: fuzzNow.AddDate(0, -3, 0)}
	f.Fuzz(func(t *testing.T, kind uint8, body string) {
		c := scheduleCommands[int(kind)%len(scheduleCommands)]
		dst := c.newBody()
		typ := reflect.TypeOf(dst).Elem()
		err := decodeCommand(fuzzContext(body), c.command, dst, c.allowEmpty)
		if err != nil {
			p := requireCommandProblem(t, err, typ, body)
			require.Contains(t, []int{http.StatusBadRequest, http.StatusRequestEntityTooLarge}, p.Status, "%v", p)
			return
		}
		// What was accepted encodes and decodes again to the same.
		enc, err := json.Marshal(dst)
		require.NoError(t, err)
		again := c.newBody()
		require.NoError(t, decodeCommand(fuzzContext(string(enc)), c.command, again, c.allowEmpty), "%s", enc)
		enc2, err := json.Marshal(again)
		require.NoError(t, err)
		require.JSONEq(t, string(enc), string(enc2))
		// The command's rules, as the handler applies them.
		var refusal *workflows.Refusal
		switch v := dst.(type) {
		case *PauseScheduleRequest:
			refusal = workflows.CheckPause(workflows.PauseRequest{Note: v.Note, Identity: "fuzz (token 1)"})
		case *ResumeScheduleRequest:
			refusal = workflows.CheckResume(workflows.ResumeRequest{Note: v.Note, Identity: "fuzz (token 1)"})
		case *TriggerScheduleRequest:
			refusal = workflows.CheckTrigger(workflows.TriggerRequest{Overlap: v.Overlap, Input: v.Input}, target)
		case *workflows.RescheduleRequest:
			refusal = workflows.CheckReschedule(*v, target, fuzzNow)
		case *workflows.BackfillRequest:
			_, refusal = workflows.CheckBackfill(*v, target, fuzzNow)
		}
		if refusal != nil {
			p := requireCommandProblem(t, refusalProblem(refusal), typ, body)
			require.NotEmpty(t, p.Field, "a rule's refusal names the field: %v", p)
		}
	})
}

// requireCommandProblem checks a schedule command's refusal: a well-formed 4xx problem
// naming a field of the command's body, a key the body holds (an unknown one), or the
// payload as a whole.
func requireCommandProblem(t *testing.T, err error, typ reflect.Type, body string) *Problem {
	t.Helper()
	p, ok := err.(*Problem)
	require.True(t, ok, "error %v (%T) is not a *Problem", err, err)
	require.GreaterOrEqual(t, p.Status, 400, "%v", p)
	require.Less(t, p.Status, 500, "%v", p)
	slug, known := problemTitles[p.Status]
	require.True(t, known, "status %d has no problem type", p.Status)
	require.Equal(t, "https://tickgate.dev/problems/"+slug, p.Type)
	require.NotEmpty(t, strings.TrimSpace(p.Detail))
	require.True(t, utf8.ValidString(p.Detail), "detail %q is not UTF-8", p.Detail)
	if p.Field == "" || p.Field == "payload" {
		return p
	}
	if _, isField := jsonField(typ, p.Field); isField {
		return p
	}
	require.True(t, slices.Contains(objectKeys(body), p.Field), "problem names %q, neither a field of %s nor a key of the body: %v", p.Field, typ, p)
	return p
}
