package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/outbound"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/store"
)

// httpStack is an API whose outbound rule allows 10.0.0.0/8 (TICKGATE_HTTP_ALLOW), with no
// worker: what is asserted is what the API answers and stores.
func httpStack(t *testing.T) *teststack.Stack {
	return teststack.Start(t, teststack.Options{NoWorker: true, Configure: func(c *config.Config) {
		rule, err := outbound.Parse("10.0.0.0/8")
		require.NoError(t, err)
		c.HTTPAllow = rule
	}})
}

func hook(url string) map[string]any {
	return map[string]any{"kind": "http", "url": url, "headers": map[string]any{"Authorization": "Bearer x"}, "body": map[string]any{"a": 1}}
}

// problem requires a problem+json of status naming field.
func problem(t *testing.T, st *teststack.Stack, method, path string, body any, status int, field string) api.Problem {
	t.Helper()
	got, b := st.Do(t, method, path, body)
	require.Equal(t, status, got, "%s %s: %s", method, path, b)
	var p api.Problem
	require.NoError(t, json.Unmarshal(b, &p))
	require.Equal(t, field, p.Field, "%s", b)
	return p
}

// An http schedule's create answer shows its signing secret, once: no read shows it again;
// a rotation shows a new one, once. Its action and retry policy come back with their
// defaults.
func TestHTTPScheduleShowsItsSecretOnce(t *testing.T) {
	t.Parallel()
	st := httpStack(t)
	ctx := context.Background()
	var created api.CreatedScheduleView
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{
		"name": "hook", "spec": map[string]any{"interval": "1h"}, "action": hook("https://example.com/hook"),
	}, http.StatusCreated, &created)
	require.True(t, strings.HasPrefix(created.SigningSecret, domain.SigningSecretPrefix), created.SigningSecret)
	require.Equal(t, "POST", created.Action.Method)
	require.Equal(t, domain.DefaultHTTPTimeout, time.Duration(created.Action.Timeout))
	require.NotNil(t, created.Retry)
	require.Equal(t, domain.DefaultRetryMaxAttempts, created.Retry.MaxAttempts)
	row, err := st.Store.GetSchedule(ctx, "hook")
	require.NoError(t, err)
	stored, err := st.Store.ScheduleSecret(ctx, row.ID)
	require.NoError(t, err)
	require.Equal(t, created.SigningSecret, stored)

	for _, path := range []string{"/api/v1/schedules/hook", "/api/v1/schedules", "/api/v1/schedules/hook/runs"} {
		status, body := st.Do(t, http.MethodGet, path, nil)
		require.Equal(t, http.StatusOK, status)
		require.NotContains(t, string(body), created.SigningSecret, "%s shows no secret", path)
		require.NotContains(t, string(body), "signing_secret", path)
	}

	var rotated api.SecretView
	st.JSON(t, http.MethodPost, "/api/v1/schedules/hook/secret", nil, http.StatusOK, &rotated)
	require.NotEqual(t, created.SigningSecret, rotated.SigningSecret)
	require.True(t, strings.HasPrefix(rotated.SigningSecret, domain.SigningSecretPrefix))
	stored, err = st.Store.ScheduleSecret(ctx, row.ID)
	require.NoError(t, err)
	require.Equal(t, rotated.SigningSecret, stored)

	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{
		"name": "ev", "spec": map[string]any{"interval": "1h"}, "action": map[string]any{"kind": "event"},
	}, http.StatusCreated, nil)
	problem(t, st, http.MethodPost, "/api/v1/schedules/ev/secret", nil, http.StatusConflict, "action.kind")
	problem(t, st, http.MethodPost, "/api/v1/schedules/nobody/secret", nil, http.StatusNotFound, "")
}

// An http action's URL must pass the outbound rule at create, update, preview and bulk:
// a loopback (localhost among them), link-local or private address not in
// TICKGATE_HTTP_ALLOW is a 400 naming action.url, and nothing is stored. Bad fields of the
// action and of the retry policy are 400s naming them.
func TestHTTPActionIsCheckedAtEveryDoor(t *testing.T) {
	t.Parallel()
	st := httpStack(t)
	create := func(name string, action map[string]any, retry any) map[string]any {
		body := map[string]any{"name": name, "spec": map[string]any{"interval": "1h"}, "action": action}
		if retry != nil {
			body["retry"] = retry
		}
		return body
	}
	for _, url := range []string{"http://127.0.0.1:8080/hook", "http://localhost/hook", "http://[::1]/", "http://169.254.169.254/latest/meta-data",
		"http://192.168.1.10/", "http://0.0.0.0/"} {
		p := problem(t, st, http.MethodPost, "/api/v1/schedules", create("internal", hook(url), nil), http.StatusBadRequest, "action.url")
		require.Contains(t, p.Detail, "TICKGATE_HTTP_ALLOW", url)
		problem(t, st, http.MethodPost, "/api/v1/schedules/preview", create("internal", hook(url), nil), http.StatusBadRequest, "action.url")
	}
	problem(t, st, http.MethodGet, "/api/v1/schedules/internal", nil, http.StatusNotFound, "")
	// Listed in TICKGATE_HTTP_ALLOW (10.0.0.0/8 here): allowed.
	st.JSON(t, http.MethodPost, "/api/v1/schedules", create("allowed", hook("http://10.1.2.3:9000/hook"), nil), http.StatusCreated, nil)

	for field, c := range map[string]map[string]any{
		"action.url":                  create("bad", map[string]any{"kind": "http", "url": "ftp://example.com"}, nil),
		"action.method":               create("bad", map[string]any{"kind": "http", "url": "https://example.com", "method": "BREW"}, nil),
		"action.headers.Tickgate-Foo": create("bad", map[string]any{"kind": "http", "url": "https://example.com", "headers": map[string]any{"Tickgate-Foo": "x"}}, nil),
		"action.timeout":              create("bad", map[string]any{"kind": "http", "url": "https://example.com", "timeout": "1h"}, nil),
		"action.body":                 create("bad", map[string]any{"kind": "http", "url": "https://example.com", "method": "GET", "body": "x"}, nil),
		"retry.max_attempts":          create("bad", hook("https://example.com"), map[string]any{"max_attempts": 1000}),
		"retry.max_backoff":           create("bad", hook("https://example.com"), map[string]any{"initial_backoff": "1m", "max_backoff": "1s"}),
		"retry":                       create("bad", map[string]any{"kind": "event"}, map[string]any{"max_attempts": 2}),
	} {
		problem(t, st, http.MethodPost, "/api/v1/schedules", c, http.StatusBadRequest, field)
	}
	problem(t, st, http.MethodGet, "/api/v1/schedules/bad", nil, http.StatusNotFound, "")

	var preview api.PreviewView
	st.JSON(t, http.MethodPost, "/api/v1/schedules/preview", create("", hook("https://example.com/hook"), map[string]any{"max_attempts": 5}), http.StatusOK, &preview)
	require.Equal(t, "POST", preview.Action.Method)
	require.Equal(t, 5, preview.Retry.MaxAttempts)
	require.Equal(t, domain.DefaultRetryMaxAge, time.Duration(preview.Retry.MaxAge), "the defaults filled in")

	problem(t, st, http.MethodPost, "/api/v1/schedules/bulk", map[string]any{"items": []any{
		create("bulk-ok", hook("https://example.com/a"), nil), create("bulk-internal", hook("http://127.0.0.1/"), nil),
	}}, http.StatusBadRequest, "items[1].action.url")
	problem(t, st, http.MethodGet, "/api/v1/schedules/bulk-ok", nil, http.StatusNotFound, "")

	problem(t, st, http.MethodPatch, "/api/v1/schedules/allowed", map[string]any{"action": hook("http://127.0.0.1/")}, http.StatusBadRequest, "action.url")
	problem(t, st, http.MethodPatch, "/api/v1/schedules/allowed", map[string]any{"retry": map[string]any{"max_attempts": 0, "nope": 1}}, http.StatusBadRequest, "retry")
}

// A bulk create shows each created http schedule's secret once; retried, the schedules
// exist and no secret is shown again.
func TestBulkCreateShowsEachSecretOnce(t *testing.T) {
	t.Parallel()
	st := httpStack(t)
	body := map[string]any{"items": []any{
		map[string]any{"name": "bulk-hook-1", "spec": map[string]any{"interval": "1h"}, "action": hook("https://example.com/1")},
		map[string]any{"name": "bulk-hook-2", "spec": map[string]any{"interval": "1h"}, "action": hook("https://example.com/2"), "retry": map[string]any{"max_attempts": 7}},
		map[string]any{"name": "bulk-event", "spec": map[string]any{"interval": "1h"}, "action": map[string]any{"kind": "event"}},
	}}
	var first api.BulkCreateView
	st.JSON(t, http.MethodPost, "/api/v1/schedules/bulk", body, http.StatusCreated, &first)
	require.NotEmpty(t, first.Items[0].SigningSecret)
	require.NotEmpty(t, first.Items[1].SigningSecret)
	require.NotEqual(t, first.Items[0].SigningSecret, first.Items[1].SigningSecret)
	require.Empty(t, first.Items[2].SigningSecret)
	require.Equal(t, 7, first.Items[1].Schedule.Retry.MaxAttempts)
	var again api.BulkCreateView
	st.JSON(t, http.MethodPost, "/api/v1/schedules/bulk", body, http.StatusOK, &again)
	for _, it := range again.Items {
		require.Equal(t, "exists", it.Status)
		require.Empty(t, it.SigningSecret)
	}
}

// A PATCH that makes a schedule an http one shows its new secret once; one that changes an
// http schedule's URL shows none. Changing the action's kind without a retry resets the
// retry policy to the new kind's; null removes a workflow action's.
func TestUpdateToAnHTTPActionShowsItsSecret(t *testing.T) {
	t.Parallel()
	// A worker runs: each update refreshes the schedule's workflow.
	st := teststack.Start(t, teststack.Options{})
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{
		"name": "becomes-http", "spec": map[string]any{"interval": "1h"},
		"action": map[string]any{"kind": "workflow", "workflow_type": "W", "task_queue": "q"}, "retry": map[string]any{"max_attempts": 9},
	}, http.StatusCreated, nil)
	var upd api.CreatedScheduleView
	st.JSON(t, http.MethodPatch, "/api/v1/schedules/becomes-http", map[string]any{"action": hook("https://example.com/x")}, http.StatusOK, &upd)
	require.NotEmpty(t, upd.SigningSecret)
	require.Equal(t, domain.DefaultRetryMaxAttempts, upd.Retry.MaxAttempts, "the kind changed: the http defaults, not the workflow's 9")
	var same api.CreatedScheduleView
	st.JSON(t, http.MethodPatch, "/api/v1/schedules/becomes-http", map[string]any{"action": hook("https://example.com/y")}, http.StatusOK, &same)
	require.Empty(t, same.SigningSecret, "still an http schedule: its secret stays, unshown")

	var back api.CreatedScheduleView
	st.JSON(t, http.MethodPatch, "/api/v1/schedules/becomes-http", map[string]any{
		"action": map[string]any{"kind": "workflow", "workflow_type": "W", "task_queue": "q"}, "retry": map[string]any{"max_attempts": 2},
	}, http.StatusOK, &back)
	require.Equal(t, 2, back.Retry.MaxAttempts)
	var removed api.CreatedScheduleView
	st.JSON(t, http.MethodPatch, "/api/v1/schedules/becomes-http", map[string]any{"retry": nil}, http.StatusOK, &removed)
	require.Nil(t, removed.Retry, "null removes a workflow action's retry policy")
}

// Redrive: only a FAILED run of an http or workflow action, as a 202 with the run RUNNING
// again under a new workflow id; it leaves the dead letter. The dead letter lists FAILED
// runs of http and workflow actions, attempts and all.
func TestRedriveAndTheDeadLetter(t *testing.T) {
	t.Parallel()
	st := httpStack(t)
	ctx := context.Background()
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{"name": "dl", "spec": map[string]any{"interval": "1h"}, "action": hook("https://example.com/dl")}, http.StatusCreated, nil)
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{"name": "dl-event", "spec": map[string]any{"interval": "1h"}, "action": map[string]any{"kind": "event"}}, http.StatusCreated, nil)
	row, err := st.Store.GetSchedule(ctx, "dl")
	require.NoError(t, err)
	ev, err := st.Store.GetSchedule(ctx, "dl-event")
	require.NoError(t, err)
	tick := time.Now().UTC().Add(-10 * time.Minute).Truncate(time.Second)
	insert := func(s store.Schedule, at time.Time, status domain.RunStatus, wid, errText string) int64 {
		var finished *time.Time
		if status.Final() {
			finished = &at
		}
		var id int64
		require.NoError(t, st.Store.Pool.QueryRow(ctx, `INSERT INTO schedule_runs (schedule_id, scheduled_at, fired_at, trigger, status,
			idempotency_key, workflow_id, error, finished_at) VALUES ($1, $2, $2, 'scheduled', $3, $4, $5, $6, $7) RETURNING id`,
			s.ID, at, status, domain.TickKey(s.ID, at), wid, errText, finished).Scan(&id))
		return id
	}
	failed := insert(row, tick, domain.RunFailed, domain.RunWorkflowID("dl", domain.TickKey(row.ID, tick)), "HTTP 503 (gave up after 3 attempts: max_attempts)")
	running := insert(row, tick.Add(time.Minute), domain.RunRunning, "wf-running", "")
	eventRun := insert(ev, tick, domain.RunSucceeded, "", "")
	code := int32(503)
	require.NoError(t, st.Store.RecordAttempt(ctx, store.RunAttempt{RunID: failed, WorkflowID: "w", Attempt: 1, StartedAt: tick, LatencyMs: 3,
		StatusCode: &code, Outcome: domain.AttemptRetryable, Error: "HTTP 503 Service Unavailable", ResponseStart: "busy"}))

	var dead struct{ Items []api.ScheduleRunView }
	st.JSON(t, http.MethodGet, "/api/v1/runs?status=FAILED&dead_letter=true", nil, http.StatusOK, &dead)
	require.Len(t, dead.Items, 1)
	require.Equal(t, failed, dead.Items[0].ID)
	require.Equal(t, "dl", dead.Items[0].Schedule)
	require.Len(t, dead.Items[0].Attempts, 1)
	require.Equal(t, 503, *dead.Items[0].Attempts[0].StatusCode)
	require.Equal(t, "busy", dead.Items[0].Attempts[0].ResponseStart)
	problem(t, st, http.MethodGet, "/api/v1/runs?dead_letter=maybe", nil, http.StatusBadRequest, "dead_letter")
	problem(t, st, http.MethodGet, "/api/v1/runs?dead_letter=true&status=SUCCEEDED", nil, http.StatusBadRequest, "status")

	problem(t, st, http.MethodPost, fmt.Sprintf("/api/v1/runs/%d/redrive", running), nil, http.StatusConflict, "status")
	problem(t, st, http.MethodPost, fmt.Sprintf("/api/v1/runs/%d/redrive", eventRun), nil, http.StatusBadRequest, "action.kind")
	problem(t, st, http.MethodPost, "/api/v1/runs/999999/redrive", nil, http.StatusNotFound, "")
	problem(t, st, http.MethodPost, "/api/v1/runs/abc/redrive", nil, http.StatusBadRequest, "id")

	var redriven api.ScheduleRunView
	st.JSON(t, http.MethodPost, fmt.Sprintf("/api/v1/runs/%d/redrive", failed), nil, http.StatusAccepted, &redriven)
	require.Equal(t, domain.RunRunning, redriven.Status)
	require.True(t, strings.HasSuffix(redriven.WorkflowID, "~redrive-1"), redriven.WorkflowID)
	require.Len(t, redriven.Redrives, 1)
	require.Equal(t, "HTTP 503 (gave up after 3 attempts: max_attempts)", redriven.Redrives[0].PreviousError)
	require.Len(t, redriven.Attempts, 1, "the first series' attempts stay listed")
	st.JSON(t, http.MethodGet, "/api/v1/runs?dead_letter=true", nil, http.StatusOK, &dead)
	require.Empty(t, dead.Items, "a redriven run has left the dead letter")
	problem(t, st, http.MethodPost, fmt.Sprintf("/api/v1/runs/%d/redrive", failed), nil, http.StatusConflict, "status")

	var sched api.ScheduleView
	st.JSON(t, http.MethodGet, "/api/v1/schedules/dl", nil, http.StatusOK, &sched)
	var shown *api.RunView
	for i := range sched.RunningRuns {
		if sched.RunningRuns[i].ID == failed {
			shown = &sched.RunningRuns[i]
		}
	}
	require.NotNil(t, shown, "the redrive runs")
	require.Len(t, shown.Redrives, 1)
	require.Len(t, shown.Attempts, 1)
}
