package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/store"
)

// labelled is a POST /schedules body of an hourly event schedule with labels.
func labelled(name string, labels map[string]string) map[string]any {
	return map[string]any{"name": name, "spec": map[string]any{"cron": "0 * * * *"},
		"action": map[string]any{"kind": "event", "topic": "t", "type": "x"}, "labels": labels}
}

// capBody is a POST /schedules body of a workflow schedule with the policies given.
func capBody(name string, policies map[string]any) map[string]any {
	return map[string]any{"name": name, "spec": map[string]any{"cron": "0 * * * *"},
		"action":   map[string]any{"kind": "workflow", "workflow_type": "W", "task_queue": "q"},
		"policies": policies}
}

// problemField asserts a request is refused with status, naming field.
func problemField(t *testing.T, st *teststack.Stack, method, path string, body any, status int, field string) string {
	t.Helper()
	got, b := st.Do(t, method, path, body)
	require.Equal(t, status, got, "%s %s: %s", method, path, b)
	var p api.Problem
	require.NoError(t, json.Unmarshal(b, &p))
	require.Equal(t, field, p.Field, "%s", b)
	return p.Detail
}

// TestScheduleLabelsAreJudgedAtEveryDoor: labels with a bad key or value, or too many, are a
// 400 naming labels.<key> (labels for the whole) at create, bulk create and update alike,
// and change nothing; good ones are kept and answered.
func TestScheduleLabelsAreJudgedAtEveryDoor(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	var created api.ScheduleView
	st.JSON(t, http.MethodPost, "/api/v1/schedules", labelled("lab", map[string]string{"team": "billing", "example.com/tier": "gold", "empty": ""}),
		http.StatusCreated, &created)
	require.Equal(t, domain.Labels{"team": "billing", "example.com/tier": "gold", "empty": ""}, created.Labels)
	var plain api.ScheduleView
	st.JSON(t, http.MethodPost, "/api/v1/schedules", labelled("plain", nil), http.StatusCreated, &plain)
	require.Equal(t, domain.Labels{}, plain.Labels, "no labels answer an empty object")

	bad := map[string]map[string]string{
		"labels.-team":                      {"-team": "x"},
		"labels.team":                       {"team": "has space"},
		"labels.UPPER.com/x":                {"UPPER.com/x": "v"},
		"labels." + strings.Repeat("k", 64): {strings.Repeat("k", 64): "v"},
		"labels.long":                       {"long": strings.Repeat("v", 64)},
	}
	for field, labels := range bad {
		problemField(t, st, http.MethodPost, "/api/v1/schedules", labelled("bad-labels", labels), http.StatusBadRequest, field)
		problemField(t, st, http.MethodPost, "/api/v1/schedules/bulk", map[string]any{"items": []any{labelled("bulk-ok", nil), labelled("bulk-bad", labels)}},
			http.StatusBadRequest, "items[1]."+field)
		problemField(t, st, http.MethodPatch, "/api/v1/schedules/lab", map[string]any{"labels": labels}, http.StatusBadRequest, field)
	}
	many := map[string]string{}
	for i := 0; i <= domain.MaxLabels; i++ {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	problemField(t, st, http.MethodPost, "/api/v1/schedules", labelled("too-many", many), http.StatusBadRequest, "labels")

	var got api.ScheduleView
	st.JSON(t, http.MethodGet, "/api/v1/schedules/lab", nil, http.StatusOK, &got)
	require.Equal(t, created.Labels, got.Labels, "no refused update changed the labels")
	require.Equal(t, created.Version, got.Version)
	var n int
	require.NoError(t, st.Store.Pool.QueryRow(context.Background(), "SELECT count(*) FROM schedules").Scan(&n))
	require.Equal(t, 2, n, "no refused create made a schedule")

	// An update's labels replace them all; {} removes them.
	var replaced, removed api.ScheduleView
	st.JSON(t, http.MethodPatch, "/api/v1/schedules/lab", map[string]any{"labels": map[string]string{"team": "ops"}}, http.StatusOK, &replaced)
	require.Equal(t, domain.Labels{"team": "ops"}, replaced.Labels)
	st.JSON(t, http.MethodPatch, "/api/v1/schedules/lab", map[string]any{"labels": map[string]string{}}, http.StatusOK, &removed)
	require.Equal(t, domain.Labels{}, removed.Labels)
}

// TestScheduleListFiltersByLabelSelector: ?selector= keeps the schedules whose labels match
// every requirement — equality, inequality (which a schedule without the key satisfies),
// comma for AND — with the state and name filters and across pages; a bad selector is a 400
// naming selector.
func TestScheduleListFiltersByLabelSelector(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	for name, labels := range map[string]map[string]string{
		"a-billing-gold": {"team": "billing", "tier": "gold"},
		"b-billing":      {"team": "billing"},
		"c-billing-free": {"team": "billing", "tier": "free"},
		"d-ops":          {"team": "ops"},
		"e-none":         nil,
	} {
		st.JSON(t, http.MethodPost, "/api/v1/schedules", labelled(name, labels), http.StatusCreated, nil)
	}
	names := func(query string) []string {
		t.Helper()
		var page struct {
			Items      []api.ScheduleView `json:"items"`
			NextCursor string             `json:"next_cursor"`
		}
		var out []string
		cursor := ""
		for {
			q := query + "&limit=2"
			if cursor != "" {
				q += "&cursor=" + cursor
			}
			st.JSON(t, http.MethodGet, "/api/v1/schedules?"+q, nil, http.StatusOK, &page)
			for _, it := range page.Items {
				out = append(out, it.Name)
			}
			if cursor = page.NextCursor; cursor == "" {
				return out
			}
		}
	}
	require.Equal(t, []string{"a-billing-gold", "b-billing", "c-billing-free"}, names("selector=team%3Dbilling"))
	require.Equal(t, []string{"a-billing-gold", "b-billing", "c-billing-free"}, names("selector=team%3D%3Dbilling"))
	require.Equal(t, []string{"b-billing", "c-billing-free"}, names("selector=team%3Dbilling,tier!%3Dgold"))
	require.Equal(t, []string{"a-billing-gold"}, names("selector=team%3Dbilling,+tier+%3D+gold"))
	require.Equal(t, []string{"d-ops", "e-none"}, names("selector=team!%3Dbilling"))
	require.Empty(t, names("selector=team%3Dbilling,team%3Dops"), "one key cannot hold two values")
	require.Empty(t, names("selector=team%3Dnobody"))
	require.Equal(t, []string{"a-billing-gold", "b-billing", "c-billing-free", "d-ops", "e-none"}, names("selector="))
	require.Equal(t, []string{"b-billing"}, names("selector=team%3Dbilling&name=b-"))

	for _, sel := range []string{"team", "team%3D%3D%3Dx", "-bad%3Dx", "team%3Dbad%20value", "%2Cteam%3Dx"} {
		detail := problemField(t, st, http.MethodGet, "/api/v1/schedules?selector="+sel, nil, http.StatusBadRequest, "selector")
		require.NotEmpty(t, detail)
	}
}

// TestMaxConcurrentIsJudgedAtEveryDoor: a cap below 1 or above the limit, under another
// policy than allow_all, on an event action, or overlap_when_full without a cap or of
// another value, is a 400 naming the field at create, bulk create and update alike, and
// changes nothing. A cap is answered with its overlap_when_full (buffer by default); an
// update's policies without it remove it.
func TestMaxConcurrentIsJudgedAtEveryDoor(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	var capped api.ScheduleView
	st.JSON(t, http.MethodPost, "/api/v1/schedules", capBody("capped", map[string]any{"overlap": "allow_all", "max_concurrent": 3}), http.StatusCreated, &capped)
	require.NotNil(t, capped.Policies.MaxConcurrent)
	require.Equal(t, 3, *capped.Policies.MaxConcurrent)
	require.Equal(t, domain.WhenFullBuffer, capped.Policies.OverlapWhenFull, "buffer unless told otherwise")
	row, err := st.Store.GetSchedule(context.Background(), "capped")
	require.NoError(t, err)
	require.Equal(t, int32(3), *row.MaxConcurrent)
	require.Equal(t, "buffer", *row.OverlapWhenFull)

	bad := []struct {
		policies map[string]any
		action   string
		field    string
	}{
		{map[string]any{"overlap": "allow_all", "max_concurrent": 0}, "", "policies.max_concurrent"},
		{map[string]any{"overlap": "allow_all", "max_concurrent": -2}, "", "policies.max_concurrent"},
		{map[string]any{"overlap": "allow_all", "max_concurrent": domain.MaxConcurrentLimit + 1}, "", "policies.max_concurrent"},
		{map[string]any{"overlap": "skip", "max_concurrent": 2}, "", "policies.max_concurrent"},
		{map[string]any{"max_concurrent": 2}, "", "policies.max_concurrent"}, // the default overlap is skip
		{map[string]any{"overlap": "allow_all", "max_concurrent": 2}, "event", "policies.max_concurrent"},
		{map[string]any{"overlap": "allow_all", "max_concurrent": 2, "overlap_when_full": "later"}, "", "policies.overlap_when_full"},
		{map[string]any{"overlap": "allow_all", "overlap_when_full": "skip"}, "", "policies.overlap_when_full"},
		{map[string]any{"overlap": "allow_all", "max_concurrent": "two"}, "", "policies.max_concurrent"},
	}
	for _, b := range bad {
		body := capBody("refused", b.policies)
		if b.action == "event" {
			body["action"] = map[string]any{"kind": "event", "topic": "t", "type": "x"}
		}
		problemField(t, st, http.MethodPost, "/api/v1/schedules", body, http.StatusBadRequest, b.field)
		if _, typed := b.policies["max_concurrent"].(string); !typed { // (a JSON type error names no item)
			problemField(t, st, http.MethodPost, "/api/v1/schedules/bulk", map[string]any{"items": []any{body}}, http.StatusBadRequest, "items[0]."+b.field)
		}
		patch := map[string]any{"policies": b.policies}
		if b.action == "event" {
			patch["action"] = body["action"]
		}
		problemField(t, st, http.MethodPatch, "/api/v1/schedules/capped", patch, http.StatusBadRequest, b.field)
	}
	var got api.ScheduleView
	st.JSON(t, http.MethodGet, "/api/v1/schedules/capped", nil, http.StatusOK, &got)
	require.Equal(t, capped.Version, got.Version, "no refused update changed anything")
	require.Equal(t, 3, *got.Policies.MaxConcurrent)

	st.JSON(t, http.MethodPatch, "/api/v1/schedules/capped", map[string]any{
		"policies": map[string]any{"overlap": "allow_all", "max_concurrent": 1, "overlap_when_full": "skip"}}, http.StatusOK, &got)
	require.Equal(t, 1, *got.Policies.MaxConcurrent)
	require.Equal(t, domain.WhenFullSkip, got.Policies.OverlapWhenFull)
	var uncapped api.ScheduleView
	st.JSON(t, http.MethodPatch, "/api/v1/schedules/capped", map[string]any{"policies": map[string]any{"overlap": "allow_all"}}, http.StatusOK, &uncapped)
	require.Nil(t, uncapped.Policies.MaxConcurrent, "policies without a cap remove it")
	require.Empty(t, uncapped.Policies.OverlapWhenFull)
	row, err = st.Store.GetSchedule(context.Background(), "capped")
	require.NoError(t, err)
	require.Nil(t, row.MaxConcurrent)
	require.Nil(t, row.OverlapWhenFull)
}

// bulkAnswer is POST /schedules/pause's answer.
type bulkAnswer struct {
	Selector  string              `json:"selector"`
	Items     []api.BulkStateItem `json:"items"`
	Changed   int                 `json:"changed"`
	Unchanged int                 `json:"unchanged"`
}

// history reads a schedule's history, newest first.
func history(t *testing.T, st *teststack.Stack, name string) []api.HistoryEntryView {
	t.Helper()
	var page struct {
		Items []api.HistoryEntryView `json:"items"`
	}
	st.JSON(t, http.MethodGet, "/api/v1/schedules/"+name+"/history?limit=500", nil, http.StatusOK, &page)
	return page.Items
}

// pausedNames are the schedules paused, by name.
func pausedNames(t *testing.T, st *teststack.Stack) []string {
	t.Helper()
	rows, err := st.Store.Pool.Query(context.Background(), "SELECT name FROM schedules WHERE paused ORDER BY name")
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		out = append(out, n)
	}
	return out
}

// TestBulkPauseAndResumeBySelector: POST /schedules/pause pauses every schedule the selector
// reaches through its own pause command and lists each, paused by this call or already; each
// pause is in the schedule's history with the token's name and the note. A retry changes
// nothing more: with the same Idempotency-Key it answers the first answer again, without it
// the same schedules, each already paused. A selector reaching nothing answers an empty list;
// an empty selector or a bad note is refused and changes nothing. Resume likewise.
func TestBulkPauseAndResumeBySelector(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	_, token, err := st.Store.CreateToken(context.Background(), store.NewToken{Role: domain.RoleOperator, Note: "ops-alice"})
	require.NoError(t, err)
	alice := st.As(token)
	for _, name := range []string{"bill-a", "bill-b"} {
		st.JSON(t, http.MethodPost, "/api/v1/schedules", labelled(name, map[string]string{"team": "billing"}), http.StatusCreated, nil)
	}
	already := labelled("bill-c", map[string]string{"team": "billing"})
	already["paused"], already["note"] = true, "paused since creation"
	st.JSON(t, http.MethodPost, "/api/v1/schedules", already, http.StatusCreated, nil)
	st.JSON(t, http.MethodPost, "/api/v1/schedules", labelled("ops-a", map[string]string{"team": "ops"}), http.StatusCreated, nil)

	// Refusals change nothing.
	problemField(t, alice, http.MethodPost, "/api/v1/schedules/pause", map[string]any{"selector": "", "note": "x"}, http.StatusBadRequest, "selector")
	problemField(t, alice, http.MethodPost, "/api/v1/schedules/pause", map[string]any{"selector": "  "}, http.StatusBadRequest, "selector")
	problemField(t, alice, http.MethodPost, "/api/v1/schedules/pause", map[string]any{"note": "x"}, http.StatusBadRequest, "selector")
	problemField(t, alice, http.MethodPost, "/api/v1/schedules/pause", map[string]any{"selector": "team"}, http.StatusBadRequest, "selector")
	problemField(t, alice, http.MethodPost, "/api/v1/schedules/pause", map[string]any{"selector": "team=billing", "note": strings.Repeat("n", 1001)},
		http.StatusBadRequest, "note")
	problemField(t, alice, http.MethodPost, "/api/v1/schedules/pause", map[string]any{"selector": "team=billing", "identity": "me"}, http.StatusBadRequest, "identity")
	require.Equal(t, []string{"bill-c"}, pausedNames(t, st))
	viewer := st.As(st.NewToken(t, domain.RoleViewer, ""))
	status, _ := viewer.Do(t, http.MethodPost, "/api/v1/schedules/pause", map[string]any{"selector": "team=billing"})
	require.Equal(t, http.StatusForbidden, status)

	var none bulkAnswer
	alice.JSON(t, http.MethodPost, "/api/v1/schedules/pause", map[string]any{"selector": "team=nobody"}, http.StatusOK, &none)
	require.Empty(t, none.Items, "a selector reaching nothing answers an empty list")

	keyed := alice.As(token)
	keyed.Headers["Idempotency-Key"] = "freeze-1"
	var first bulkAnswer
	_, firstBody := keyed.Do(t, http.MethodPost, "/api/v1/schedules/pause", map[string]any{"selector": "team=billing", "note": "billing freeze"})
	require.NoError(t, json.Unmarshal(firstBody, &first), "%s", firstBody)
	require.Equal(t, "team=billing", first.Selector)
	require.Equal(t, []api.BulkStateItem{
		{Name: "bill-a", Outcome: "paused", Changed: true}, {Name: "bill-b", Outcome: "paused", Changed: true},
		{Name: "bill-c", Outcome: "already_paused", Changed: false},
	}, first.Items)
	require.Equal(t, 2, first.Changed)
	require.Equal(t, 1, first.Unchanged)
	require.Equal(t, []string{"bill-a", "bill-b", "bill-c"}, pausedNames(t, st), "ops-a is not reached")
	row, err := st.Store.GetSchedule(context.Background(), "bill-c")
	require.NoError(t, err)
	require.Equal(t, "paused since creation", row.PauseNote, "a schedule paused already keeps its pause and its note")

	for _, name := range []string{"bill-a", "bill-b"} {
		h := history(t, st, name)
		require.Len(t, h, 1, name)
		require.Equal(t, domain.HistoryPause, h[0].Kind)
		require.Regexp(t, `^ops-alice \(token \d+\)$`, h[0].By)
		require.Equal(t, domain.DoorUpdate, h[0].Door, "the API sends the schedule's own pause update")
		require.Equal(t, "billing freeze", h[0].Note)
	}
	c := history(t, st, "bill-c")
	require.Len(t, c, 1, "bill-c's history is its creation's pause alone: the bulk pause changed nothing")
	require.Equal(t, "paused since creation", c[0].Note)

	// The same key: the first answer, replayed.
	status, again := keyed.Do(t, http.MethodPost, "/api/v1/schedules/pause", map[string]any{"selector": "team=billing", "note": "billing freeze"})
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, string(firstBody), string(again))
	// No key: the same schedules, each paused already, nothing changed.
	var retry bulkAnswer
	alice.JSON(t, http.MethodPost, "/api/v1/schedules/pause", map[string]any{"selector": "team=billing", "note": "billing freeze"}, http.StatusOK, &retry)
	require.Equal(t, []string{"bill-a", "bill-b", "bill-c"}, []string{retry.Items[0].Name, retry.Items[1].Name, retry.Items[2].Name})
	require.Equal(t, 0, retry.Changed)
	for _, it := range retry.Items {
		require.Equal(t, "already_paused", it.Outcome)
	}
	require.Len(t, history(t, st, "bill-a"), 1, "a retry records nothing more")

	var resumed bulkAnswer
	alice.JSON(t, http.MethodPost, "/api/v1/schedules/resume", map[string]any{"selector": "team=billing,tier!=gold", "note": "freeze over"}, http.StatusOK, &resumed)
	require.Equal(t, []api.BulkStateItem{
		{Name: "bill-a", Outcome: "resumed", Changed: true}, {Name: "bill-b", Outcome: "resumed", Changed: true},
		{Name: "bill-c", Outcome: "resumed", Changed: true},
	}, resumed.Items)
	require.Empty(t, pausedNames(t, st))
	h := history(t, st, "bill-a")
	require.Len(t, h, 2)
	require.Equal(t, domain.HistoryResume, h[0].Kind, "newest first")
	require.Equal(t, "freeze over", h[0].Note)
	row, err = st.Store.GetSchedule(context.Background(), "bill-a")
	require.NoError(t, err)
	require.Empty(t, row.PauseNote, "a resumed schedule has no pause note")
	var again2 bulkAnswer
	alice.JSON(t, http.MethodPost, "/api/v1/schedules/resume", map[string]any{"selector": "team=billing"}, http.StatusOK, &again2)
	require.Equal(t, 3, again2.Unchanged)
	require.Equal(t, "already_active", again2.Items[0].Outcome)
}

// TestBulkPauseReachingTooManyIsRefused: a selector reaching more than MaxSelected schedules
// is a 400 naming selector, and pauses none of them.
func TestBulkPauseReachingTooManyIsRefused(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	for batch := 0; batch*api.MaxBulkSchedules <= api.MaxSelected; batch++ {
		var items []any
		for i := range api.MaxBulkSchedules {
			items = append(items, labelled(fmt.Sprintf("many-%d-%04d", batch, i), map[string]string{"fleet": "big"}))
		}
		st.JSON(t, http.MethodPost, "/api/v1/schedules/bulk", map[string]any{"items": items}, http.StatusCreated, nil)
	}
	detail := problemField(t, st, http.MethodPost, "/api/v1/schedules/pause", map[string]any{"selector": "fleet=big"}, http.StatusBadRequest, "selector")
	require.Contains(t, detail, "more than 1000")
	require.Empty(t, pausedNames(t, st))
}

// TestScheduleHistoryRecordsPausesResumesAndEdits: a pause and a resume through the API are
// in the schedule's history with the token's name and their notes; a pause of a paused
// schedule changes nothing and records nothing; an update records who changed which field,
// from what to what (a change of labels alone, those alone). An identity in an HTTP body is
// refused: the token says who asks.
func TestScheduleHistoryRecordsPausesResumesAndEdits(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	_, token, err := st.Store.CreateToken(context.Background(), store.NewToken{Role: domain.RoleOperator, Note: "ops-bob"})
	require.NoError(t, err)
	bob := st.As(token)
	st.JSON(t, http.MethodPost, "/api/v1/schedules", capBody("hist", map[string]any{"overlap": "allow_all"}), http.StatusCreated, nil)

	problemField(t, bob, http.MethodPost, "/api/v1/schedules/hist/pause", map[string]any{"note": "x", "identity": "someone-else"}, http.StatusBadRequest, "identity")
	problemField(t, bob, http.MethodPost, "/api/v1/schedules/hist/resume", map[string]any{"note": strings.Repeat("n", 1001)}, http.StatusBadRequest, "note")
	require.Empty(t, history(t, st, "hist"), "refusals record nothing")

	var v api.ScheduleView
	bob.JSON(t, http.MethodPost, "/api/v1/schedules/hist/pause", map[string]any{"note": "db migration"}, http.StatusOK, &v)
	require.True(t, v.Paused)
	bob.JSON(t, http.MethodPost, "/api/v1/schedules/hist/pause", map[string]any{"note": "another reason"}, http.StatusOK, &v)
	require.Equal(t, "db migration", v.Note, "pausing a paused schedule keeps the standing pause")
	bob.JSON(t, http.MethodPost, "/api/v1/schedules/hist/resume", map[string]any{"note": "migration done"}, http.StatusOK, &v)
	require.False(t, v.Paused)
	st.JSON(t, http.MethodPost, "/api/v1/schedules/hist/resume", nil, http.StatusOK, &v) // no body: nothing to change

	bob.JSON(t, http.MethodPatch, "/api/v1/schedules/hist", map[string]any{
		"policies": map[string]any{"overlap": "allow_all", "max_concurrent": 2}, "labels": map[string]string{"team": "billing"}}, http.StatusOK, nil)
	bob.JSON(t, http.MethodPatch, "/api/v1/schedules/hist", map[string]any{"labels": map[string]string{"team": "ops"}}, http.StatusOK, nil)
	problemField(t, bob, http.MethodPatch, "/api/v1/schedules/hist", map[string]any{"policies": map[string]any{"max_concurrent": 2}}, http.StatusBadRequest, "policies.max_concurrent")

	h := history(t, st, "hist")
	require.Len(t, h, 4, "pause, resume and two updates: %+v", h)
	for _, e := range h {
		require.Regexp(t, `^ops-bob \(token \d+\)$`, e.By)
	}
	require.Equal(t, domain.HistoryPause, h[3].Kind)
	require.Equal(t, "db migration", h[3].Note)
	require.Equal(t, domain.DoorUpdate, h[3].Door)
	require.Equal(t, domain.HistoryResume, h[2].Kind)
	require.Equal(t, "migration done", h[2].Note)

	require.Equal(t, domain.HistoryUpdate, h[1].Kind)
	require.Equal(t, domain.DoorAPI, h[1].Door)
	fields := map[string][2]string{}
	for _, c := range h[1].Changes {
		fields[c.Field] = [2]string{string(c.From), string(c.To)}
	}
	require.Equal(t, map[string][2]string{
		"policies.max_concurrent":    {"null", "2"},
		"policies.overlap_when_full": {`""`, `"buffer"`},
		"labels":                     {"{}", `{"team":"billing"}`},
	}, fields, "only what changed, from what to what")
	require.Len(t, h[0].Changes, 1, "a change of labels alone: %+v", h[0].Changes)
	require.Equal(t, "labels", h[0].Changes[0].Field)
	require.JSONEq(t, `{"team":"ops"}`, string(h[0].Changes[0].To))

	status, _ := st.Do(t, http.MethodGet, "/api/v1/schedules/nope/history", nil)
	require.Equal(t, http.StatusNotFound, status)
}

// TestBulkPauseWhoseWorkflowsDoNotAnswerIsA503ToRetry: with no worker to take the pause
// updates, a bulk pause answers 503 with Retry-After, naming the schedules it could not
// pause — never a 2xx that an Idempotency-Key would replay, so a retry does what is left —
// and the schedules are not paused.
func TestBulkPauseWhoseWorkflowsDoNotAnswerIsA503ToRetry(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	for _, name := range []string{"stuck-a", "stuck-b"} {
		st.JSON(t, http.MethodPost, "/api/v1/schedules", labelled(name, map[string]string{"team": "stuck"}), http.StatusCreated, nil)
	}
	keyed := st.As(st.AdminToken)
	keyed.Headers["Idempotency-Key"] = "stuck-1"
	status, body := keyed.Do(t, http.MethodPost, "/api/v1/schedules/pause", map[string]any{"selector": "team=stuck"})
	require.Equal(t, http.StatusServiceUnavailable, status, "%s", body)
	var p api.Problem
	require.NoError(t, json.Unmarshal(body, &p))
	require.Contains(t, p.Detail, "2 of 2 schedules were not paused")
	require.Contains(t, p.Detail, "stuck-a")
	require.Contains(t, p.Detail, "stuck-b")
	require.Empty(t, pausedNames(t, st))
	var n int
	require.NoError(t, st.Store.Pool.QueryRow(context.Background(), "SELECT count(*) FROM idempotency_keys WHERE key = 'stuck-1' AND status <> 0").Scan(&n))
	require.Zero(t, n, "no answer kept for the key: its retry runs again")
}

// TestScheduleCreatedPausedBeginsItsHistoryWithThatPause: a schedule created paused (alone
// or in a bulk create) has that pause, by the token that created it and with its note, as
// the first entry of its history, so its first resume does not stand alone.
func TestScheduleCreatedPausedBeginsItsHistoryWithThatPause(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	paused := labelled("born-paused", nil)
	paused["paused"], paused["note"] = true, "not before launch"
	st.JSON(t, http.MethodPost, "/api/v1/schedules", paused, http.StatusCreated, nil)
	inBulk := labelled("bulk-paused", nil)
	inBulk["paused"], inBulk["note"] = true, "later"
	st.JSON(t, http.MethodPost, "/api/v1/schedules/bulk", map[string]any{"items": []any{inBulk, labelled("bulk-active", nil)}}, http.StatusCreated, nil)

	for name, note := range map[string]string{"born-paused": "not before launch", "bulk-paused": "later"} {
		h := history(t, st, name)
		require.Len(t, h, 1, name)
		require.Equal(t, domain.HistoryPause, h[0].Kind)
		require.Equal(t, note, h[0].Note)
		require.Equal(t, domain.DoorAPI, h[0].Door)
		require.Regexp(t, `^teststack \(token \d+\)$`, h[0].By)
	}
	require.Empty(t, history(t, st, "bulk-active"), "created active: nothing happened to it yet")
}
