package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/workflows"
)

// Secrets stay secret (docs/security.md "Secrets"): an http action's header values and its
// signing secret are write-only, never kept by the idempotency cache, and a rotation is
// recorded with a grace period during which both secrets sign.

// keyed sends a POST with an Idempotency-Key and answers its status, body and headers.
func keyed(t *testing.T, st *teststack.Stack, path, key string, body any) (int, []byte, http.Header) {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, st.URL+path, bytes.NewReader(b))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", st.Headers["Authorization"])
	req.Header.Set(api.IdempotencyHeader, key)
	resp, err := teststack.ContractClient(t).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, out, resp.Header
}

// cached is everything the idempotency cache holds, as text.
func cached(t *testing.T, st *teststack.Stack) string {
	t.Helper()
	var all string
	require.NoError(t, st.Store.Pool.QueryRow(context.Background(),
		`SELECT coalesce(string_agg(row_to_json(k)::text || convert_from(k.body, 'UTF8'), ' '), '') FROM idempotency_keys k`).Scan(&all))
	return all
}

// An http action's header values are write-only: stored apart from the action, they are in
// no answer (create, get, list, runs, history, preview); the views name the headers. An
// update keeps a stored value by naming its header in header_names, replaces one given
// anew, and its history tells which values it set by name only. A name with no value to
// keep is a 400 naming it.
func TestHeaderValuesAreWriteOnly(t *testing.T) {
	t.Parallel()
	st := httpStack(t)
	ctx := context.Background()
	const token, env = "Bearer s3cret-token-value", "prod-value-x"
	action := map[string]any{"kind": "http", "url": "https://example.com/hook", "headers": map[string]any{"Authorization": token, "X-Env": env}}
	var created api.CreatedScheduleView
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{"name": "hdr", "spec": map[string]any{"interval": "1h"}, "action": action},
		http.StatusCreated, &created)
	require.Equal(t, []string{"Authorization", "X-Env"}, created.Action.HeaderNames)
	require.Nil(t, created.Action.Headers)
	row, err := st.Store.GetSchedule(ctx, "hdr")
	require.NoError(t, err)
	require.NotContains(t, string(row.Action), token, "the schedule's row keeps names only")
	values, err := st.Store.ScheduleHeaderValues(ctx, "hdr")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"Authorization": token, "X-Env": env}, values)

	shows := func(what string) {
		t.Helper()
		for _, path := range []string{"/api/v1/schedules/hdr", "/api/v1/schedules", "/api/v1/schedules/hdr/runs", "/api/v1/schedules/hdr/history"} {
			status, body := st.Do(t, http.MethodGet, path, nil)
			require.Equal(t, http.StatusOK, status)
			require.NotContains(t, string(body), token, "%s: %s", what, path)
			require.NotContains(t, string(body), env, "%s: %s", what, path)
		}
	}
	shows("after the create")
	status, body := st.Do(t, http.MethodPost, "/api/v1/schedules/preview", map[string]any{"spec": map[string]any{"interval": "1h"}, "action": action})
	require.Equal(t, http.StatusOK, status, "%s", body)
	require.NotContains(t, string(body), token, "a preview shows names only")

	// An edit that names both headers and gives one anew keeps the other's value.
	var upd api.CreatedScheduleView
	st.JSON(t, http.MethodPatch, "/api/v1/schedules/hdr", map[string]any{"action": map[string]any{"kind": "http", "url": "https://example.com/v2",
		"header_names": []string{"Authorization", "X-Env"}, "headers": map[string]any{"X-Env": "staging-value-y"}}}, http.StatusOK, &upd)
	require.Equal(t, []string{"Authorization", "X-Env"}, upd.Action.HeaderNames)
	values, err = st.Store.ScheduleHeaderValues(ctx, "hdr")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"Authorization": token, "X-Env": "staging-value-y"}, values)
	var hist struct{ Items []api.HistoryEntryView }
	st.JSON(t, http.MethodGet, "/api/v1/schedules/hdr/history", nil, http.StatusOK, &hist)
	require.NotEmpty(t, hist.Items)
	fields := map[string]string{}
	for _, c := range hist.Items[0].Changes {
		fields[c.Field] = string(c.To)
	}
	require.JSONEq(t, `["X-Env"]`, fields["action.header_values"], "the history names the header whose value changed, nothing more")
	shows("after the edit")

	// A header left out is dropped; one named without a stored value is refused.
	problem(t, st, http.MethodPatch, "/api/v1/schedules/hdr", map[string]any{"action": map[string]any{"kind": "http", "url": "https://example.com/v2",
		"header_names": []string{"Authorization", "X-Missing"}}}, http.StatusBadRequest, "action.header_names[1]")
	st.JSON(t, http.MethodPatch, "/api/v1/schedules/hdr", map[string]any{"action": map[string]any{"kind": "http", "url": "https://example.com/v3",
		"header_names": []string{"Authorization"}}}, http.StatusOK, &upd)
	require.Equal(t, []string{"Authorization"}, upd.Action.HeaderNames)
	values, err = st.Store.ScheduleHeaderValues(ctx, "hdr")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"Authorization": token}, values)
	// Another kind of action drops them all.
	st.JSON(t, http.MethodPatch, "/api/v1/schedules/hdr", map[string]any{"action": map[string]any{"kind": "event"}}, http.StatusOK, nil)
	values, err = st.Store.ScheduleHeaderValues(ctx, "hdr")
	require.NoError(t, err)
	require.Empty(t, values)

	// A create has nothing to keep.
	problem(t, st, http.MethodPost, "/api/v1/schedules", map[string]any{"name": "hdr2", "spec": map[string]any{"interval": "1h"},
		"action": map[string]any{"kind": "http", "url": "https://example.com", "header_names": []string{"Authorization"}}}, http.StatusBadRequest, "action.header_names[0]")
	problem(t, st, http.MethodPost, "/api/v1/schedules", map[string]any{"name": "hdr2", "spec": map[string]any{"interval": "1h"},
		"action": map[string]any{"kind": "http", "url": "https://example.com", "headers": map[string]any{"webhook-signature": "v1,x"}}}, http.StatusBadRequest, "action.headers.webhook-signature")
}

// An answer that shows a signing secret (a create, a bulk create, a rotation) is
// Cache-Control: no-store, and the idempotency cache never holds the secret: the same
// request replayed answers the same status and schedule, without the secret, saying it was
// shown once.
func TestSecretAnswersAreNotCached(t *testing.T) {
	t.Parallel()
	st := httpStack(t)
	create := map[string]any{"name": "once", "spec": map[string]any{"interval": "1h"}, "action": hook("https://example.com/once")}
	status, first, h := keyed(t, st, "/api/v1/schedules", "create-1", create)
	require.Equal(t, http.StatusCreated, status, "%s", first)
	require.Equal(t, "no-store", h.Get("Cache-Control"))
	var shown api.CreatedScheduleView
	require.NoError(t, json.Unmarshal(first, &shown))
	require.True(t, strings.HasPrefix(shown.SigningSecret, domain.SigningSecretPrefix))
	require.NotContains(t, cached(t, st), shown.SigningSecret, "the cache does not hold the secret")

	status, again, h := keyed(t, st, "/api/v1/schedules", "create-1", create)
	require.Equal(t, http.StatusCreated, status)
	require.Equal(t, "true", h.Get(api.ReplayedHeader))
	var replay api.CreatedScheduleView
	require.NoError(t, json.Unmarshal(again, &replay))
	require.Empty(t, replay.SigningSecret)
	require.Contains(t, replay.SigningSecretNote, "shown once")
	require.Equal(t, shown.Name, replay.Name)
	require.Equal(t, shown.Version, replay.Version)

	status, rotated, h := keyed(t, st, "/api/v1/schedules/once/secret", "rotate-1", map[string]any{})
	require.Equal(t, http.StatusOK, status, "%s", rotated)
	require.Equal(t, "no-store", h.Get("Cache-Control"))
	var rot api.SecretView
	require.NoError(t, json.Unmarshal(rotated, &rot))
	require.NotEmpty(t, rot.SigningSecret)
	require.NotContains(t, cached(t, st), rot.SigningSecret)
	status, again, _ = keyed(t, st, "/api/v1/schedules/once/secret", "rotate-1", map[string]any{})
	require.Equal(t, http.StatusOK, status)
	require.NotContains(t, string(again), rot.SigningSecret)
	var rotReplay api.SecretView
	require.NoError(t, json.Unmarshal(again, &rotReplay))
	require.Empty(t, rotReplay.SigningSecret)
	require.Contains(t, rotReplay.SigningSecretNote, "shown once")

	bulk := map[string]any{"items": []any{map[string]any{"name": "once-bulk", "spec": map[string]any{"interval": "1h"}, "action": hook("https://example.com/b")}}}
	status, bfirst, h := keyed(t, st, "/api/v1/schedules/bulk", "bulk-1", bulk)
	require.Equal(t, http.StatusCreated, status, "%s", bfirst)
	require.Equal(t, "no-store", h.Get("Cache-Control"))
	var b api.BulkCreateView
	require.NoError(t, json.Unmarshal(bfirst, &b))
	require.NotEmpty(t, b.Items[0].SigningSecret)
	require.NotContains(t, cached(t, st), b.Items[0].SigningSecret)
	secret := b.Items[0].SigningSecret
	status, bagain, _ := keyed(t, st, "/api/v1/schedules/bulk", "bulk-1", bulk)
	require.Equal(t, http.StatusCreated, status)
	require.NotContains(t, string(bagain), secret)
	var bReplay api.BulkCreateView
	require.NoError(t, json.Unmarshal(bagain, &bReplay))
	require.Contains(t, bReplay.Items[0].SigningSecretNote, "shown once")
}

// A rotation is recorded in the schedule's history (never the secret), and with a grace
// period the old secret goes on signing beside the new one until it ends; without one it
// stops at once. A grace out of bounds is a 400 naming grace.
func TestRotationIsRecordedWithItsGrace(t *testing.T) {
	t.Parallel()
	st := httpStack(t)
	ctx := context.Background()
	var created api.CreatedScheduleView
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{"name": "rot", "spec": map[string]any{"interval": "1h"}, "action": hook("https://example.com/r")},
		http.StatusCreated, &created)
	row, err := st.Store.GetSchedule(ctx, "rot")
	require.NoError(t, err)
	run := insertRun(t, st, row.ID, "rot")

	var rot api.SecretView
	st.JSON(t, http.MethodPost, "/api/v1/schedules/rot/secret", map[string]any{"grace": "1h"}, http.StatusOK, &rot)
	require.NotNil(t, rot.PreviousValidUntil)
	require.WithinDuration(t, time.Now().Add(time.Hour), *rot.PreviousValidUntil, time.Minute)
	target, err := st.Store.HTTPDeliveryOf(ctx, run)
	require.NoError(t, err)
	require.Equal(t, []string{rot.SigningSecret, created.SigningSecret}, target.Secrets, "both sign during the grace, the new one first")

	var hist struct{ Items []api.HistoryEntryView }
	st.JSON(t, http.MethodGet, "/api/v1/schedules/rot/history", nil, http.StatusOK, &hist)
	require.NotEmpty(t, hist.Items)
	require.Equal(t, domain.HistoryRotateSecret, hist.Items[0].Kind)
	require.Contains(t, hist.Items[0].Note, "signs too until")
	status, body := st.Do(t, http.MethodGet, "/api/v1/schedules/rot/history", nil)
	require.Equal(t, http.StatusOK, status)
	require.NotContains(t, string(body), rot.SigningSecret)
	require.NotContains(t, string(body), created.SigningSecret)

	var now api.SecretView
	st.JSON(t, http.MethodPost, "/api/v1/schedules/rot/secret", nil, http.StatusOK, &now)
	require.Nil(t, now.PreviousValidUntil)
	target, err = st.Store.HTTPDeliveryOf(ctx, run)
	require.NoError(t, err)
	require.Equal(t, []string{now.SigningSecret}, target.Secrets, "no grace: the old one stopped at once")

	problem(t, st, http.MethodPost, "/api/v1/schedules/rot/secret", map[string]any{"grace": "200h"}, http.StatusBadRequest, "grace")
	problem(t, st, http.MethodPost, "/api/v1/schedules/rot/secret", map[string]any{"grace": "-1s"}, http.StatusBadRequest, "grace")
	target, err = st.Store.HTTPDeliveryOf(ctx, run)
	require.NoError(t, err)
	require.Equal(t, []string{now.SigningSecret}, target.Secrets, "a refused rotation changes nothing")
}

// insertRun adds a run of schedule id (named name) straight in the database.
func insertRun(t *testing.T, st *teststack.Stack, id int64, name string) int64 {
	t.Helper()
	tick := time.Now().UTC().Truncate(time.Second)
	key := domain.TickKey(id, tick)
	var run int64
	require.NoError(t, st.Store.Pool.QueryRow(context.Background(), `INSERT INTO schedule_runs (schedule_id, scheduled_at, fired_at, trigger, status, idempotency_key, workflow_id)
		VALUES ($1, $2, $2, 'scheduled', 'RUNNING', $3, $4) RETURNING id`, id, tick, key, domain.RunWorkflowID(name, key)).Scan(&run))
	return run
}

// A workflow action starts users' workflows, never tickgate's: each workflow type its
// worker registers, and its task queues, are a 400 naming the field at every door (create,
// preview, bulk, update, and a trigger of a schedule stored before the rule), and
// TICKGATE_WORKFLOW_TASK_QUEUES narrows the queues allowed.
func TestWorkflowActionsMayNotStartTickgatesWorkflows(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true, Configure: func(c *config.Config) {
		c.WorkflowTaskQueues = []string{"reports", "billing"}
	}})
	wf := func(typ, queue string) map[string]any {
		return map[string]any{"name": "wf", "spec": map[string]any{"interval": "1h"}, "action": map[string]any{"kind": "workflow", "workflow_type": typ, "task_queue": queue}}
	}
	require.Contains(t, workflows.TypeNames(), workflows.HTTPDeliveryWorkflowType)
	require.Contains(t, workflows.TypeNames(), workflows.SchedulePlannerType)
	for _, typ := range workflows.TypeNames() {
		for _, path := range []string{"/api/v1/schedules", "/api/v1/schedules/preview"} {
			p := problem(t, st, http.MethodPost, path, wf(typ, "reports"), http.StatusBadRequest, "action.workflow_type")
			require.Contains(t, p.Detail, "tickgate's own workflows", typ)
		}
	}
	for _, queue := range []string{st.Config.TaskQueue, workflows.DefaultTaskQueue} {
		problem(t, st, http.MethodPost, "/api/v1/schedules", wf("Report", queue), http.StatusBadRequest, "action.task_queue")
	}
	p := problem(t, st, http.MethodPost, "/api/v1/schedules", wf("Report", "elsewhere"), http.StatusBadRequest, "action.task_queue")
	require.Contains(t, p.Detail, "TICKGATE_WORKFLOW_TASK_QUEUES")
	problem(t, st, http.MethodPost, "/api/v1/schedules/bulk", map[string]any{"items": []any{wf("Report", "reports"), func() map[string]any {
		b := wf("SchedulePlannerWorkflow", "billing")
		b["name"] = "wf2"
		return b
	}()}}, http.StatusBadRequest, "items[1].action.workflow_type")
	problem(t, st, http.MethodGet, "/api/v1/schedules/wf", nil, http.StatusNotFound, "")

	st.JSON(t, http.MethodPost, "/api/v1/schedules", wf("Report", "reports"), http.StatusCreated, nil)
	problem(t, st, http.MethodPatch, "/api/v1/schedules/wf", map[string]any{"action": map[string]any{"kind": "workflow",
		"workflow_type": workflows.HTTPDeliveryWorkflowType, "task_queue": "billing"}}, http.StatusBadRequest, "action.workflow_type")

	// A schedule stored before the rule: its trigger is refused too.
	_, err := st.Store.Pool.Exec(context.Background(), `UPDATE schedules SET action = $1 WHERE name = 'wf'`,
		fmt.Sprintf(`{"kind":"workflow","workflow_type":%q,"task_queue":"reports"}`, workflows.HTTPDeliveryWorkflowType))
	require.NoError(t, err)
	problem(t, st, http.MethodPost, "/api/v1/schedules/wf/trigger", nil, http.StatusBadRequest, "action.workflow_type")
}
