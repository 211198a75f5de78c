package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/client"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/dev/receiver"
	"github.com/tickgate/tickgate/internal/outbound"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/metrics"
	"github.com/tickgate/tickgate/store"
)

// httpStack is the whole product with 127.0.0.1 allowed, and a receiver.
func httpStack(t *testing.T) (*teststack.Stack, *receiver.Receiver) {
	t.Helper()
	rcv, err := receiver.Start()
	require.NoError(t, err)
	t.Cleanup(rcv.Close)
	st := teststack.Start(t, teststack.Options{Configure: func(c *config.Config) {
		rule, err := outbound.Parse("127.0.0.1")
		require.NoError(t, err)
		c.HTTPAllow = rule
	}})
	return st, rcv
}

// An http schedule whose endpoint keeps failing pauses itself: after_failures runs in a row
// FAILED (a 404, final), the schedule is paused through its workflow, as its own pause —
// in its history (kind auto_pause, the reason as its note), an outbox event
// schedule.auto_paused on the schedules topic, tickgate_schedule_auto_paused_total counting
// it, and the schedule's view saying when and why. A resume clears it, and the count starts
// again: two more failures, and it pauses itself again.
func TestAnEndpointThatKeepsFailingPausesItsSchedule(t *testing.T) {
	t.Parallel()
	st, rcv := httpStack(t)
	rcv.Answer = func(string, int) receiver.Answer { return receiver.Answer{Status: http.StatusNotFound} }
	before := testutil.ToFloat64(metrics.ScheduleAutoPaused)
	st.CreateSchedule(t, map[string]any{
		"name": "ap-hook", "spec": map[string]any{"interval": "1s"},
		"action": map[string]any{"kind": "http", "url": rcv.URL() + "/gone", "auto_pause": map[string]any{"after_failures": 2}},
	})
	var s api.ScheduleView
	autoPaused := func() bool {
		s = api.ScheduleView{}
		st.GetSchedule(t, "ap-hook", &s)
		return s.Paused && s.AutoPaused != nil
	}
	require.Eventually(t, autoPaused, time.Minute, 100*time.Millisecond, "the schedule paused itself")
	require.Contains(t, s.AutoPaused.Reason, "paused itself after 2 failed runs in a row (auto_pause.after_failures 2)")
	require.Contains(t, s.AutoPaused.Reason, "HTTP 404 Not Found (attempt 1; not retried)", "the last failure named")
	require.Equal(t, s.AutoPaused.Reason, s.Note, "the standing pause's note is the reason")
	require.GreaterOrEqual(t, s.FailedInARow, 2)

	var hist struct{ Items []api.HistoryEntryView }
	st.ScheduleHistory(t, "ap-hook", &hist)
	require.NotEmpty(t, hist.Items)
	require.Equal(t, domain.HistoryAutoPause, hist.Items[0].Kind)
	require.Equal(t, domain.AutoPauseIdentity, hist.Items[0].By)
	require.Equal(t, s.AutoPaused.Reason, hist.Items[0].Note)
	require.Equal(t, 1.0, testutil.ToFloat64(metrics.ScheduleAutoPaused)-before, "counted once")

	events := func() []client.Event {
		topic, limit := domain.DefaultEventTopic, 5000
		r, err := st.Client(t).ListEventsWithResponse(t.Context(), &client.ListEventsParams{Topic: &topic, Limit: &limit})
		require.NoError(t, err)
		var out []client.Event
		for _, ev := range *r.JSON200.Items {
			if *ev.Type == store.AutoPausedEventType {
				out = append(out, ev)
			}
		}
		return out
	}
	require.Eventually(t, func() bool { return len(events()) == 1 }, 10*time.Second, 100*time.Millisecond, "the outbox event, once")
	ev := events()[0]
	require.Equal(t, "ap-hook", *ev.AggregateId)
	b, _ := json.Marshal(ev.Data)
	var data struct{ Schedule, Reason string }
	require.NoError(t, json.Unmarshal(b, &data))
	require.Equal(t, "ap-hook", data.Schedule)
	require.Equal(t, s.AutoPaused.Reason, data.Reason)

	// A resume clears it and counts failures from then on: two more, and it pauses itself
	// again.
	st.Resume(t, "ap-hook")
	s = api.ScheduleView{}
	st.GetSchedule(t, "ap-hook", &s)
	require.False(t, s.Paused)
	require.Nil(t, s.AutoPaused, "the resume cleared it")
	require.Zero(t, s.FailedInARow, "the count starts again")
	require.Eventually(t, autoPaused, time.Minute, 100*time.Millisecond, "two failures after the resume, it paused itself again")
	hist.Items = nil
	st.ScheduleHistory(t, "ap-hook", &hist)
	kinds := []domain.HistoryKind{}
	for _, h := range hist.Items {
		kinds = append(kinds, h.Kind)
	}
	require.Equal(t, []domain.HistoryKind{domain.HistoryAutoPause, domain.HistoryResume, domain.HistoryAutoPause}, kinds)
	require.Equal(t, 2.0, testutil.ToFloat64(metrics.ScheduleAutoPaused)-before)
	require.Eventually(t, func() bool { return len(events()) == 2 }, 10*time.Second, 100*time.Millisecond)
}

// POST /runs/redrive redrives every dead-lettered run of a range, of the schedules its
// selector reaches, a page at a time: bounded by limit, with a continuation, its answer
// counting what it matched, redrove, skipped and what remains; a request retried with its
// Idempotency-Key answers its first answer and redrives nothing more, and no run is redriven
// twice by one redrive. The runs it redrove are delivered again and SUCCEEDED; those of the
// schedules it did not reach stay in the dead letter. Bad input is a 400 naming the field.
func TestBulkRedriveIsBoundedIdempotentAndReportsItsProgress(t *testing.T) {
	t.Parallel()
	st, rcv := httpStack(t)
	var failing atomic.Bool
	failing.Store(true)
	rcv.Answer = func(string, int) receiver.Answer {
		if failing.Load() {
			return receiver.Answer{Status: http.StatusBadGateway}
		}
		return receiver.Answer{}
	}
	c, ctx := st.Client(t), t.Context()
	began := time.Now().UTC().Add(-time.Second)
	for _, s := range []struct {
		name, team string
		runs       int
	}{{"rd-a", "a", 3}, {"rd-b", "b", 2}} {
		st.CreateSchedule(t, map[string]any{
			"name": s.name, "spec": map[string]any{"interval": "1h"}, "labels": map[string]string{"team": s.team},
			"action":   map[string]any{"kind": "http", "url": rcv.URL() + "/" + s.name},
			"retry":    map[string]any{"max_attempts": 1},
			"policies": map[string]any{"overlap": "allow_all"},
		})
		for i := 0; i < s.runs; i++ {
			st.Trigger(t, s.name)
		}
	}
	dead := func(name string) int {
		n := 0
		for _, r := range listRuns(t, st, name) {
			if r.Status == domain.RunFailed {
				n++
			}
		}
		return n
	}
	require.Eventually(t, func() bool { return dead("rd-a") == 3 && dead("rd-b") == 2 }, time.Minute, 100*time.Millisecond, "five runs in the dead letter")
	failing.Store(false)

	redrive := func(body map[string]any, key string) (int, api.BulkRedriveView, []byte) {
		t.Helper()
		var edit []client.RequestEditorFn
		if key != "" {
			edit = append(edit, client.WithIdempotencyKey(key))
		}
		r, err := c.RedriveRunsWithBodyWithResponse(ctx, nil, "application/json", teststack.Body(t, body), edit...)
		var problem *client.Error
		if errors.As(err, &problem) {
			b, _ := json.Marshal(problem)
			return problem.Status, api.BulkRedriveView{}, b
		}
		require.NoError(t, err)
		var v api.BulkRedriveView
		teststack.Decode(t, r.Body, &v)
		return r.StatusCode(), v, r.Body
	}
	until := time.Now().UTC().Add(time.Second)
	first := map[string]any{"selector": "team=a", "since": began.Format(time.RFC3339Nano), "until": until.Format(time.RFC3339Nano), "limit": 2}
	code, page, raw := redrive(first, "bulk-1")
	require.Equal(t, http.StatusAccepted, code, "%s", raw)
	require.Equal(t, 3, page.Matched)
	require.Equal(t, 2, page.Redriven, "bounded by limit")
	require.Equal(t, 1, page.Remaining)
	require.False(t, page.Done)
	require.NotEmpty(t, page.Continue)
	require.Len(t, page.Items, 2)
	for _, it := range page.Items {
		require.Equal(t, "redriven", it.Outcome)
		require.Equal(t, "rd-a", it.Schedule)
		require.Contains(t, it.WorkflowID, "~redrive-1")
	}

	code, again, _ := redrive(first, "bulk-1")
	require.Equal(t, http.StatusAccepted, code)
	require.Equal(t, page, again, "the same Idempotency-Key answers the first answer")
	var redrives int
	require.NoError(t, st.Store.Pool.QueryRow(ctx, `SELECT count(*) FROM schedule_run_redrives`).Scan(&redrives))
	require.Equal(t, 2, redrives, "and redrove nothing more")

	code, next, raw := redrive(map[string]any{"continue": page.Continue, "limit": 2}, "")
	require.Equal(t, http.StatusAccepted, code, "%s", raw)
	require.Equal(t, 3, next.Matched)
	require.Equal(t, 3, next.Redriven, "the redrive's count over its requests")
	require.Zero(t, next.Remaining)
	require.True(t, next.Done)
	require.Empty(t, next.Continue)
	require.Len(t, next.Items, 1)

	code, after, _ := redrive(map[string]any{"continue": page.Continue}, "")
	require.Equal(t, http.StatusAccepted, code)
	require.Empty(t, after.Items, "a run is never redriven twice by one redrive")
	require.Equal(t, 3, after.Redriven)
	require.NoError(t, st.Store.Pool.QueryRow(ctx, `SELECT count(*) FROM schedule_run_redrives`).Scan(&redrives))
	require.Equal(t, 3, redrives)

	require.Eventually(t, func() bool {
		ok := 0
		for _, r := range listRuns(t, st, "rd-a") {
			if r.Status == domain.RunSucceeded && len(r.Redrives) == 1 {
				ok++
			}
		}
		return ok == 3
	}, time.Minute, 100*time.Millisecond, "the redriven runs delivered again")
	require.Equal(t, 2, dead("rd-b"), "the selector did not reach rd-b: its runs stay in the dead letter")

	for _, bad := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"until": until.Format(time.RFC3339)}, "since"},
		{map[string]any{"since": began.Format(time.RFC3339)}, "until"},
		{map[string]any{"since": until.Format(time.RFC3339), "until": began.Format(time.RFC3339)}, "until"},
		{map[string]any{"since": began.Format(time.RFC3339), "until": until.Format(time.RFC3339), "limit": 5000}, "limit"},
		{map[string]any{"since": began.Format(time.RFC3339), "until": until.Format(time.RFC3339), "selector": "=x"}, "selector"},
		{map[string]any{"continue": page.Continue, "selector": "team=a"}, "continue"},
		{map[string]any{"continue": "not-a-token"}, "continue"},
		{map[string]any{"continue": "999999"}, "continue"},
	} {
		code, _, raw := redrive(bad.body, "")
		require.Equal(t, http.StatusBadRequest, code, "%v: %s", bad.body, raw)
		var p struct{ Field string }
		require.NoError(t, json.Unmarshal(raw, &p))
		require.True(t, strings.HasPrefix(p.Field, bad.field), "%v names %s: %s", bad.body, bad.field, raw)
	}
	var jobs int
	require.NoError(t, st.Store.Pool.QueryRow(context.Background(), `SELECT count(*) FROM run_redrive_jobs`).Scan(&jobs))
	require.Equal(t, 1, jobs, "bad input began no redrive")
}
