package api

// Fuzz targets for request decoding and validation. They call Decode and the validation
// functions directly (no store, no Temporal), so they run in the package's TestMain without
// starting either. The package is internal (api, not api_test) because the validation
// functions are unexported.

import (
	"bytes"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/outbound"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/internal/version"
	"github.com/tickgate/tickgate/workflows"
)

// fuzzNow is the validation clock: fixed, so a failing input replays the same way.
var fuzzNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fuzzEcho only builds contexts; it serves nothing.
var fuzzEcho = echo.New()

// decodeBody runs Decode on body as a POST with the given Content-Type ("" sends none).
func decodeBody(body, contentType string, dst any, allowEmpty bool) error {
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	if contentType != "" {
		req.Header.Set(echo.HeaderContentType, contentType)
	}
	return Decode(fuzzEcho.NewContext(req, httptest.NewRecorder()), dst, allowEmpty)
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// requireProblem asserts that err is what ErrorHandler would render as a client error: a
// *Problem with a 4xx status, its type and title, a non-empty detail, and, when it names a
// field, a field of the request type (or, for an unknown field, a key the body holds).
func requireProblem(t *testing.T, err error, reqType reflect.Type, body string) *Problem {
	t.Helper()
	var p *Problem
	require.True(t, errors.As(err, &p), "error %v (%T) is not a *Problem", err, err)
	require.GreaterOrEqual(t, p.Status, 400, "%v", p)
	require.Less(t, p.Status, 500, "%v", p)
	slug, known := problemTitles[p.Status]
	require.True(t, known, "status %d has no problem type", p.Status)
	require.Equal(t, "https://tickgate.dev/problems/"+slug, p.Type)
	require.Equal(t, http.StatusText(p.Status), p.Title)
	require.NotEmpty(t, strings.TrimSpace(p.Detail), "problem without detail: %+v", p)
	// The detail goes out as JSON text: invalid UTF-8 would reach the client mangled.
	require.True(t, utf8.ValidString(p.Detail), "detail %q is not UTF-8", p.Detail)
	if p.Field == "" {
		return p
	}
	if name, ok := strings.CutPrefix(p.Detail, "unknown field "); ok {
		// Decode names an unknown field by its path, ending in its key, so the key must be
		// one the client sent.
		name, err := strconv.Unquote(name)
		require.NoError(t, err, "detail %q", p.Detail)
		require.True(t, p.Field == name || strings.HasSuffix(p.Field, "."+name), "field %q does not end in %q", p.Field, name)
		require.Contains(t, objectKeys(body), name, "unknown field %q is not a key of the body", name)
		return p
	}
	require.True(t, fieldExists(reqType, p.Field), "field %q is not a field of %s (detail %q)", p.Field, reqType, p.Detail)
	return p
}

// fieldPathRE is one step of a problem's field path: a JSON name, optionally indexed.
var fieldPathRE = regexp.MustCompile(`^([^.\[\]]+)((?:\[\d+\])*)$`)

// fieldExists reports whether path ("spec.interval.every", "tasks[2].version",
// "tasks.version" as json's own type errors spell it) names a field of t by JSON name. The
// inside of a json.RawMessage (an executor's payload, a workflow's input) is free-form.
func fieldExists(t reflect.Type, path string) bool {
	for _, step := range strings.Split(path, ".") {
		t = elemType(t)
		if t == rawMessageType || t.Kind() == reflect.Map {
			return true // whatever follows is a key inside the free-form JSON or map (it may hold dots)
		}
		if t == reflect.TypeFor[OptionalRetry]() {
			t = reflect.TypeFor[domain.Retry]() // a PATCH's retry holds a policy
		}
		m := fieldPathRE.FindStringSubmatch(step)
		if m == nil {
			return false
		}
		if t.Kind() != reflect.Struct {
			return false
		}
		f, ok := jsonField(t, m[1])
		if !ok {
			return false
		}
		t = f.Type
		for range strings.Count(m[2], "[") {
			t = derefType(t)
			if t.Kind() != reflect.Slice || t == rawMessageType {
				return false
			}
			t = t.Elem()
		}
	}
	return true
}

func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// elemType dereferences pointers and, as json's error paths do, steps through slices.
func elemType(t reflect.Type) reflect.Type {
	for {
		t = derefType(t)
		if t.Kind() != reflect.Slice || t == rawMessageType {
			return t
		}
		t = t.Elem()
	}
}

// jsonField finds the field of struct t whose JSON name is name.
func jsonField(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag == name && f.IsExported() {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// objectKeys lists every object key anywhere in body's first JSON value.
func objectKeys(body string) []string {
	var keys []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				keys = append(keys, k)
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	if dec.Decode(&v) == nil {
		walk(v)
	}
	return keys
}

// requireStrict asserts that every object key of an accepted body is a field of t (as json
// matches names: case-insensitively), so no misspelt or misplaced field is silently dropped.
func requireStrict(t *testing.T, body string, reqType reflect.Type) {
	t.Helper()
	var v any
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&v))
	var walk func(v any, typ reflect.Type, path string)
	walk = func(v any, typ reflect.Type, path string) {
		typ = derefType(typ)
		if typ == rawMessageType {
			return
		}
		switch v := v.(type) {
		case map[string]any:
			if typ.Kind() != reflect.Struct {
				return // a map field (HTTP headers) takes any key
			}
			for k, e := range v {
				f, ok := foldField(typ, k)
				require.True(t, ok, "accepted body %q has %s%q, which %s has no field for", body, path, k, typ)
				walk(e, f.Type, path+k+".")
			}
		case []any:
			if typ.Kind() == reflect.Slice {
				for _, e := range v {
					walk(e, typ.Elem(), path)
				}
			}
		}
	}
	walk(v, reqType, "")
}

// foldField is the field json would decode key into: an exact name, else a case-insensitive one.
func foldField(t reflect.Type, key string) (reflect.StructField, bool) {
	if f, ok := jsonField(t, key); ok {
		return f, true
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag != "" && tag != "-" && f.IsExported() && strings.EqualFold(tag, key) {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// requireOneValue asserts that an accepted body is a single JSON value and nothing else:
// Decode promises to reject trailing data.
func requireOneValue(t *testing.T, body string, allowEmpty bool) {
	t.Helper()
	trimmed := bytes.TrimSpace([]byte(body))
	if allowEmpty && len(trimmed) == 0 {
		return
	}
	require.True(t, json.Valid(trimmed), "accepted body %q is not exactly one JSON value", body)
}

// requireRoundTrip asserts that a decoded request re-encodes to a body that decodes without
// error to the same request: what the API accepted, it can also send back (SDKs and the CLI
// build bodies by encoding these types). Encodings are compared, not values, because a
// json.RawMessage keeps the client's whitespace while its re-encoding is compact.
func requireRoundTrip[T any](t *testing.T, decoded *T, allowEmpty bool) {
	t.Helper()
	enc, err := json.Marshal(decoded)
	require.NoError(t, err, "re-encode %+v", decoded)
	var again T
	require.NoError(t, decodeBody(string(enc), "application/json", &again, allowEmpty), "decode re-encoded %s", enc)
	enc2, err := json.Marshal(&again)
	require.NoError(t, err)
	require.JSONEq(t, string(enc), string(enc2))
}

// fuzzDecode decodes body into a fresh T and checks the properties every body type shares;
// it returns the request when Decode accepted it.
func fuzzDecode[T any](t *testing.T, body, contentType string, allowEmpty bool) (*T, bool) {
	t.Helper()
	var req T
	typ := reflect.TypeFor[T]()
	err := decodeBody(body, contentType, &req, allowEmpty)
	if contentType != "" {
		mt, _, perr := mime.ParseMediaType(contentType)
		if perr != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			p := requireProblem(t, err, typ, body)
			require.Equal(t, http.StatusUnsupportedMediaType, p.Status, "Content-Type %q", contentType)
			return nil, false
		}
	}
	if err != nil {
		requireProblem(t, err, typ, body)
		return nil, false
	}
	requireOneValue(t, body, allowEmpty)
	if strings.TrimSpace(body) != "" {
		requireStrict(t, body, typ)
	}
	requireRoundTrip(t, &req, allowEmpty)
	return &req, true
}

// requireValidationProblem checks a validation error like a decoding one, plus the rule of
// validation errors: each names the field at fault (only decoding may fail as a whole).
func requireValidationProblem(t *testing.T, err error, reqType reflect.Type, body string) {
	t.Helper()
	p := requireProblem(t, err, reqType, body)
	require.Equal(t, http.StatusBadRequest, p.Status)
	require.NotEmpty(t, p.Field, "validation error without a field: %v", p)
}

// requireScheduleAccepted checks what a stored schedule relies on: its normalized spec and
// action, encoded as the handlers store them, decode and validate again to the same thing
// (the workflow and GET re-read them from the row).
func requireScheduleAccepted(t *testing.T, spec *schedulespec.Compiled, action ScheduleAction, pol SchedulePolicies) {
	t.Helper()
	require.True(t, pol.Overlap.Valid(), "overlap %q", pol.Overlap)
	require.GreaterOrEqual(t, pol.CatchupWindow, schedulespec.Duration(0))
	require.Contains(t, []domain.ActionKind{domain.ActionEvent, domain.ActionWorkflow}, action.Kind)

	specJSON, err := json.Marshal(spec.Spec)
	require.NoError(t, err)
	var stored schedulespec.Spec
	require.NoError(t, json.Unmarshal(specJSON, &stored), "stored spec %s", specJSON)
	again, err := schedulespec.Normalize(stored, fuzzNow.Add(time.Hour))
	require.NoError(t, err, "stored spec %s no longer validates", specJSON)
	require.Equal(t, spec.Spec, again.Spec, "stored spec %s normalizes differently", specJSON)
	require.Equal(t, spec.NextN(fuzzNow, 3), again.NextN(fuzzNow, 3), "stored spec %s fires differently", specJSON)

	actionJSON, err := json.Marshal(action)
	require.NoError(t, err)
	var storedAction ScheduleAction
	require.NoError(t, json.Unmarshal(actionJSON, &storedAction))
	require.NoError(t, validateAction(&storedAction), "stored action %s no longer validates", actionJSON)
	require.Equal(t, action, storedAction)
}

// FuzzCreateScheduleRequest decodes and validates POST /schedules bodies.
func FuzzCreateScheduleRequest(f *testing.F) {
	for _, seed := range []string{
		`{"name":"s1","spec":{"interval":"1h"},"action":{"kind":"event","topic":"t","type":"x"}}`,
		`{"name":"nightly","spec":{"cron":"30 2 * * *","timezone":"Europe/Berlin","jitter":"30s"},"action":{"kind":"workflow","workflow_type":"W","task_queue":"q","input":{"a":[1,2]}},"policies":{"overlap":"buffer_one","catchup_window":"10m","skip_if_successful":true},"paused":true,"note":"n"}`,
		`{"name":"i","spec":{"interval":{"every":5,"unit":"minutes"},"start_at":"2026-01-01T00:00:07+02:00","end_at":"2027-01-01T00:00:00Z"},"action":{"kind":"event","data":{"k":"v"}}}`,
		`{"name":"tz","spec":{"cron":"CRON_TZ=Asia/Tokyo 0 9 * * 1-5"},"action":{"kind":"event"},"policies":{"catchup_window":60000000000}}`,
		`{"name":"bad name!","spec":{"interval":"-1h"},"action":{"kind":"email"}}`,
		`{"name":"s","spec":{"cron":"61 * * * *"},"action":{"kind":"event"},"policies":{"overlap":"sometimes"}}`,
		`{"name":"s","spec":{"interval":"1h","jitter":"soon"},"action":{"kind":"event"},"policies":{"catchup_window":"-5m"}}`,
		`{"name":"s","spec":{"start_at":"yesterday"},"paused":"no","color":"red"}`,
		`{"name":"s","spec":{"interval":{"every":3}},"action":{"kind":"event"}}`,
		`{"NAME":"s","Spec":{"interval":"90s"},"action":{"kind":"event"}}`,
		`{"name":"s","spec":{"interval":{"every":5,"unit":"MINUTES","start_at":"2026-01-01T00:00:00Z"}},"action":{"kind":"event"}}`,
		`{"name":"s","spec":{"cron":"TZ=UTC CRON_TZ=Asia/Tokyo 0 9 * * *"},"action":{"kind":"event"}}`,
		`{"name":"s","spec":{"cron":"@every 90s"},"action":{"kind":"event"},"policies":{"skip_if_successful":true}}`,
		`{"name": `, `{} {}`, `[1, 2]`, ``, `null`, `{"name":"s"}}`, `{"name":"s"}]`,
	} {
		f.Add(seed, "application/json")
	}
	f.Add(`{"name":"s1","spec":{"interval":"1h"},"action":{"kind":"event"}}`, "text/plain")
	f.Add(`{"name":"s1","spec":{"interval":"1h"},"action":{"kind":"event"}}`, "application/merge-patch+json; charset=utf-8")
	f.Add(`{"name":"s1","spec":{"interval":"1h"},"action":{"kind":"event"}}`, "")
	f.Fuzz(func(t *testing.T, body, contentType string) {
		req, ok := fuzzDecode[CreateScheduleRequest](t, body, contentType, false)
		if !ok {
			return
		}
		spec, pol, err := req.validate(fuzzNow, outbound.Rule{})
		if err != nil {
			requireValidationProblem(t, err, reflect.TypeFor[CreateScheduleRequest](), body)
			return
		}
		require.Regexp(t, scheduleNameRE, req.Name)
		requireScheduleAccepted(t, spec, req.Action, pol)
	})
}

// FuzzUpdateScheduleRequest decodes PATCH /schedules/{name} bodies and validates them merged
// into a stored schedule, as the handler does.
func FuzzUpdateScheduleRequest(f *testing.F) {
	for _, seed := range []string{
		`{"spec":{"cron":"*/5 * * * *"}}`,
		`{"action":{"kind":"workflow","workflow_type":"W","task_queue":"q"},"version":3}`,
		`{"policies":{"overlap":"allow_all","catchup_window":"1h"}}`,
		`{"spec":{"interval":"90s","start_at":"2026-01-01T00:00:07Z"},"policies":null,"action":null}`,
		`{"spec":{"cron":"TZ=UTC 0 0 * * *","timezone":"Europe/Paris"}}`,
		`{"version":-1}`, `{"version":"3"}`, `{"name":"renamed"}`, `{}`, ``, `{"spec":{}}`,
	} {
		f.Add(seed)
	}
	// The stored schedule every update applies to.
	base := CreateScheduleRequest{
		Name:     "base",
		Spec:     schedulespec.Spec{Cron: "0 * * * *", Timezone: "UTC"},
		Action:   ScheduleAction{Kind: "event", Topic: "schedules", Type: "schedule.fired"},
		Policies: &SchedulePolicies{Overlap: "skip"},
	}
	f.Fuzz(func(t *testing.T, body string) {
		req, ok := fuzzDecode[UpdateScheduleRequest](t, body, "application/json", false)
		if !ok {
			return
		}
		stored := base
		stored.Policies = &SchedulePolicies{Overlap: base.Policies.Overlap}
		create := req.applyTo(stored)
		spec, pol, err := create.validate(fuzzNow, outbound.Rule{})
		if err != nil {
			// A merged request's errors must name fields the PATCH body can carry: the
			// name comes from the stored schedule and is always valid.
			requireValidationProblem(t, err, reflect.TypeFor[UpdateScheduleRequest](), body)
			return
		}
		requireScheduleAccepted(t, spec, create.Action, pol)
	})
}

// payloadTypes are the executors' payload types (external takes any object).
var payloadTypes = map[domain.Executor]reflect.Type{
	domain.ExecutorNoop: reflect.TypeFor[domain.NoopPayload](),
	domain.ExecutorHTTP: reflect.TypeFor[domain.HTTPPayload](),
	domain.ExecutorSQL:  reflect.TypeFor[domain.SQLPayload](),
}

var taskPayloadFieldRE = regexp.MustCompile(`^tasks\[(\d+)\]\.payload\.(.+)$`)

// FuzzRolloutRequest decodes and validates POST /rollouts bodies (a rollout and its tasks).
func FuzzRolloutRequest(f *testing.F) {
	for _, seed := range []string{
		`{"name":"r1","parallel_limit":2,"tasks":[{"database":"db","type":"DML","version":"1","executor":"noop"}]}`,
		`{"name":" r2 ","parallel_limit":1,"tasks":[{"database":"a","type":"DDL","version":"1.10","run_at":"2026-01-02T15:04:05+01:00","executor":"noop","payload":{"sleep":"200ms"}},{"database":"a","type":"SDL","version":"v2.3.0-rc1","executor":"http","payload":{"url":"https://example.com/x","headers":{"X":"1"},"body":{"a":1}}}]}`,
		`{"name":"r3","parallel_limit":100000,"tasks":[{"database":"b","type":"OTHER","version":"20240102_add_index","executor":"sql","payload":{"statement":"SELECT 1"}},{"database":"c","type":"DML","version":"9","executor":"external","payload":{"anything":[1]}}]}`,
		`{"name":"r","parallel_limit":0,"tasks":[]}`,
		`{"name":"r","parallel_limit":"two","tasks":[{"database":"","type":"YAML","version":"é","run_at":"tomorrow","executor":"telepathy","payload":[1]}]}`,
		`{"name":"r","parallel_limit":1,"tasks":[{"database":"d","type":"DML","version":"1","executor":"noop","payload":{"sleep":"2h","extra":1}}]}`,
		`{"name":"r","parallel_limit":1,"tasks":[{"database":"d","type":"DML","version":"1","executor":"http","payload":{"url":"ftp://x"}}]}`,
		`{"name":"r","parallel_limit":1,"tasks":[{"database":"d","type":"DML","version":"12345678901234567890","executor":"sql","payload":{}}]}`,
		`{"name":"r","parallel_limit":1,"tasks":[{"database":"d","type":"DML","version":1,"executor":"noop","owner":"me"}]}`,
		`{"name":"r","parallel_limit":1,"tasks":[{"database":"d","type":"DML","version":"1","executor":"noop","payload":null}]}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		req, ok := fuzzDecode[RolloutRequest](t, body, "application/json", false)
		if !ok {
			return
		}
		tasks, err := validateRollout(req)
		if err != nil {
			requireValidationProblem(t, err, reflect.TypeFor[RolloutRequest](), body)
			var p *Problem
			require.True(t, errors.As(err, &p))
			if m := taskPayloadFieldRE.FindStringSubmatch(p.Field); m != nil {
				// An executor's payload field: one of its payload type, or an unknown key the
				// client sent in that task's payload.
				i, _ := strconv.Atoi(m[1])
				require.Less(t, i, len(req.Tasks))
				if typ, ok := payloadTypes[req.Tasks[i].Executor]; ok && !fieldExists(typ, m[2]) {
					require.Contains(t, objectKeys(string(req.Tasks[i].Payload)), m[2], "%v", p)
				}
			}
			return
		}
		require.Equal(t, strings.TrimSpace(req.Name), req.Name)
		require.NotEmpty(t, req.Name)
		require.Len(t, tasks, len(req.Tasks))
		for i, nt := range tasks {
			tr := req.Tasks[i]
			require.Equal(t, tr.Version, nt.Version)
			require.Equal(t, version.MustKey(tr.Version), nt.VersionKey, "task %d", i)
			require.True(t, nt.Type.Valid())
			require.True(t, json.Valid(nt.Payload) && nt.Payload[0] == '{', "task %d payload %s", i, nt.Payload)
			require.NoError(t, domain.ValidatePayload(nt.Executor, nt.Payload))
			if tr.RunAt == nil {
				require.Nil(t, nt.RunAt)
			} else {
				require.NotNil(t, nt.RunAt)
				require.Equal(t, time.UTC, nt.RunAt.Location())
			}
		}
	})
}

// bodyKinds are the other request bodies: how their handler decodes them (allowEmpty) and
// a decoder for each, selected by the fuzzer's kind byte.
var bodyKinds = []struct {
	name       string
	allowEmpty bool
	decode     func(t *testing.T, body, contentType string, allowEmpty bool) bool
}{
	{"pause", true, fuzzDecodeAny[workflows.PauseRequest]},
	{"trigger", true, fuzzDecodeAny[TriggerScheduleRequest]},
	{"reschedule", false, fuzzDecodeAny[workflows.RescheduleRequest]},
	{"backfill", false, fuzzDecodeAny[workflows.BackfillRequest]},
	{"empty", true, fuzzDecodeAny[struct{}]},
	{"pc", false, fuzzDecodeAny[CreatePCRequest]},
	{"device", false, fuzzDecodeAny[CreateDeviceRequest]},
	{"device patch", false, fuzzDecodeAny[PatchDeviceRequest]},
	{"device task", false, fuzzDecodeAny[CreateDeviceTaskRequest]},
	{"claim", true, fuzzDecodeAny[ClaimRequest]},
	{"ack", true, fuzzDecodeAny[AckRequest]},
	{"result", false, fuzzDecodeAny[ResultRequest]},
}

func fuzzDecodeAny[T any](t *testing.T, body, contentType string, allowEmpty bool) bool {
	_, ok := fuzzDecode[T](t, body, contentType, allowEmpty)
	return ok
}

// FuzzRequestBodies decodes the remaining bodies (schedule pause/trigger/reschedule/backfill,
// PCs, devices, device tasks, agent claim/ack/result, empty action bodies). Their handlers
// validate inline after the store lookups, so only decoding is fuzzed here.
func FuzzRequestBodies(f *testing.F) {
	for i, seeds := range [][]string{
		{`{"note":"maintenance"}`, ``, `{"note":7}`},
		{`{"overlap":"allow_all","input":{"x":[1,{"y":null}]}}`, `{}`, `{"input":`},
		{`{"next_run_at":"2026-01-02T15:04:05.123456789-07:00"}`, `{"next_run_at":"tomorrow"}`, `{"next_run_at":null}`},
		{`{"start":"2026-01-01T00:00:00Z","end":"2026-01-02T00:00:00Z","overlap":"buffer_all"}`, `{"start":"2026-13-01T00:00:00Z"}`},
		{``, `{}`, `   `, `{"x":1}`, `{}]`},
		{`{"name":"pc-1","device_capacity":5}`, `{"name":"pc","device_capacity":"many"}`, `{"name":"pc","device_capacity":3000000000}`},
		{`{"pc":"pc-0","serial":"dev-1"}`, `{"pc":"pc-0","serial":12}`},
		{`{"status":"offline"}`, `{"status":null}`},
		{`{"payload":{"cmd":"reboot"},"target_count":2,"abort":{"min_executed":5,"failed_percent":12.5}}`, `{"abort":{"failed_percent":1e400}}`, `{"payload":"x"}`},
		{`{"max":10}`, ``, `{"max":1.5}`},
		{`{"attempt":2}`, ``, `{"attempt":-2147483649}`},
		{`{"status":"failed","error":"boom","retryable":false,"attempt":1}`, `{"status":"succeeded","retryable":"no"}`},
	} {
		for _, s := range seeds {
			f.Add(uint8(i), s, "application/json")
		}
	}
	f.Add(uint8(0), `{"note":"x"}`, "application/problem+json")
	f.Add(uint8(5), `{"name":"pc-1"}`, "text/json")
	f.Add(uint8(6), `{"pc":"pc-0","serial":"d"}`, "application/json; charset=\"")
	f.Fuzz(func(t *testing.T, kind uint8, body, contentType string) {
		k := bodyKinds[int(kind)%len(bodyKinds)]
		t.Run(k.name, func(t *testing.T) { k.decode(t, body, contentType, k.allowEmpty) })
	})
}

// TestFuzzHelpers pins the checkers the fuzz targets rely on, so a property that could never
// fail (a field check accepting anything) is caught here rather than silently passing.
func TestFuzzHelpers(t *testing.T) {
	t.Parallel()
	rollout := reflect.TypeFor[RolloutRequest]()
	for path, want := range map[string]bool{
		"name": true, "tasks": true, "tasks[3].version": true, "tasks.version": true, "tasks[0].payload.sleep": true,
		"owner": false, "tasks[0].owner": false, "name.x": false, "tasks[x].version": false, "": false, "parallel_limit[0]": false,
	} {
		require.Equal(t, want, fieldExists(rollout, path), "fieldExists(RolloutRequest, %q)", path)
	}
	sched := reflect.TypeFor[CreateScheduleRequest]()
	for path, want := range map[string]bool{
		"spec.interval.every": true, "policies.catchup_window": true, "action.input.anything": true, "spec.every": false,
	} {
		require.Equal(t, want, fieldExists(sched, path), "fieldExists(CreateScheduleRequest, %q)", path)
	}
	require.ElementsMatch(t, []string{"a", "b", "c"}, objectKeys(`{"a":{"b":[{"c":1}]}}`))
}
