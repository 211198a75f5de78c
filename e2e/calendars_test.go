package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/client"
	"github.com/tickgate/tickgate/internal/testing/teststack"
)

// runsOf lists a schedule's runs (up to 500, newest first), filtered by status when given.
func runsOf(t *testing.T, c *client.Client, name string, status string) []client.Run {
	t.Helper()
	limit := 500
	p := &client.ListScheduleRunsParams{Limit: &limit}
	if status != "" {
		p.Status = &status
	}
	r, err := c.ListScheduleRunsWithResponse(context.Background(), name, p)
	require.NoError(t, err)
	return *r.JSON200.Items
}

// TestCalendarsEndToEnd: through the Go client, on the whole product. An event schedule at
// rest every second excludes a calendar: the planner arms its fires a minute ahead, those
// the calendar excludes as SKIPPED ticks naming it, which show at their time; an edit of the
// calendar turns fires already armed into skipped ticks before their release; the feed
// carries the fired ticks' events only.
func TestCalendarsEndToEnd(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	c, ctx := st.Client(t), t.Context()
	now := time.Now().UTC().Truncate(time.Second)
	first := [2]time.Time{now.Add(4 * time.Second), now.Add(7 * time.Second)} // 3 ticks
	rng := func(r [2]time.Time) map[string]string {
		return map[string]string{"start": r[0].Format(time.RFC3339), "end": r[1].Format(time.RFC3339)}
	}
	_, err := c.CreateCalendarWithBodyWithResponse(ctx, nil, "application/json", teststack.Body(t, map[string]any{
		"name": "e2e-maintenance", "ranges": []map[string]string{rng(first)}}))
	require.NoError(t, err)
	_, err = c.CreateScheduleWithBodyWithResponse(ctx, nil, "application/json", teststack.Body(t, map[string]any{
		"name": "e2e-beat", "spec": map[string]any{"interval": "1s", "start_at": now.Format(time.RFC3339), "exclude_calendars": []string{"e2e-maintenance"}},
		"action": map[string]any{"kind": "event", "topic": "e2e-beat", "type": "tick"},
	}))
	require.NoError(t, err)
	// Once the planner armed the next minute, exclude 3 more seconds of it.
	second := [2]time.Time{now.Add(15 * time.Second), now.Add(18 * time.Second)}
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, st.Store.Pool.QueryRow(t.Context(), `SELECT count(*) FROM schedule_runs WHERE armed AND scheduled_at >= $1`, second[1]).Scan(&n))
		return n > 0
	}, 30*time.Second, 50*time.Millisecond, "the planner armed past the second range")
	edited, err := c.ReplaceCalendarWithBodyWithResponse(ctx, "e2e-maintenance", nil, "application/json", teststack.Body(t, map[string]any{
		"ranges": []map[string]string{rng(first), rng(second)}}))
	require.NoError(t, err)
	require.Equal(t, 3, *edited.JSON200.Rejudged.Skipped, "the armed fires of the second range, before their release")

	require.Eventually(t, func() bool {
		return len(runsOf(t, c, "e2e-beat", "")) >= 22
	}, time.Minute, 200*time.Millisecond)
	skipped := map[time.Time]bool{}
	for _, r := range runsOf(t, c, "e2e-beat", "") {
		at := r.ScheduledAt.UTC()
		excluded := (!at.Before(first[0]) && at.Before(first[1])) || (!at.Before(second[0]) && at.Before(second[1]))
		if excluded {
			require.Equal(t, client.RunStatusSKIPPED, *r.Status, "tick %s", at)
			require.Equal(t, "excluded by calendar e2e-maintenance", *r.Reason)
			skipped[at] = true
		} else {
			require.Equal(t, client.RunStatusSUCCEEDED, *r.Status, "tick %s", at)
		}
	}
	require.Len(t, skipped, 6)
	topic, limit := "e2e-beat", 500
	feed := func() []client.Event {
		r, err := c.ListEventsWithResponse(ctx, &client.ListEventsParams{Topic: &topic, Limit: &limit})
		require.NoError(t, err)
		return *r.JSON200.Items
	}
	require.Eventually(t, func() bool { return len(feed()) >= 16 }, 20*time.Second, 100*time.Millisecond)
	fired := len(runsOf(t, c, "e2e-beat", "SUCCEEDED"))
	require.LessOrEqual(t, len(feed()), fired+5, "no event for a skipped tick (a few more fired meanwhile)")
}

// TestOneTimeSchedulesEndToEnd: per-user reminders, through the Go client. A one-time event
// schedule fires once at its at and is then completed; one asking after_completion "delete"
// is gone once its run ended, its event still in the feed; a one-time workflow action
// completes when its target ends.
func TestOneTimeSchedulesEndToEnd(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	c, ctx := st.Client(t), t.Context()
	queue := startRecordTargets(t, st)
	at := time.Now().UTC().Add(3 * time.Second)
	event := map[string]any{"kind": "event", "topic": "e2e-reminders", "type": "due"}
	for _, body := range []map[string]any{
		{"name": "remind-keep", "spec": map[string]any{"at": at}, "action": event},
		{"name": "remind-drop", "spec": map[string]any{"at": at}, "action": event, "after_completion": "delete"},
		{"name": "remind-run", "spec": map[string]any{"at": at}, "action": map[string]any{"kind": "workflow", "workflow_type": "RecordTarget", "task_queue": queue}},
	} {
		r, err := c.CreateScheduleWithBodyWithResponse(ctx, nil, "application/json", teststack.Body(t, body))
		require.NoError(t, err)
		require.NotNil(t, r.JSON201)
	}

	state := func(name string) string {
		r, err := c.GetScheduleWithResponse(ctx, name)
		if client.IsNotFound(err) {
			return "gone"
		}
		require.NoError(t, err)
		return string(*r.JSON200.State)
	}
	require.Equal(t, "active", state("remind-keep"))
	require.Eventually(t, func() bool {
		return state("remind-keep") == "completed" && state("remind-drop") == "gone" && state("remind-run") == "completed"
	}, time.Minute, 200*time.Millisecond)
	runs := runsOf(t, c, "remind-keep", "")
	require.Len(t, runs, 1)
	require.Equal(t, client.RunStatusSUCCEEDED, *runs[0].Status)
	require.False(t, runs[0].ScheduledAt.Before(at.Truncate(time.Microsecond)))
	runs = runsOf(t, c, "remind-run", "")
	require.Len(t, runs, 1)
	require.Equal(t, client.RunStatusSUCCEEDED, *runs[0].Status, "completed when its target ended")
	topic := "e2e-reminders"
	require.Eventually(t, func() bool {
		r, err := c.ListEventsWithResponse(ctx, &client.ListEventsParams{Topic: &topic})
		require.NoError(t, err)
		return len(*r.JSON200.Items) == 2
	}, 20*time.Second, 100*time.Millisecond, "both reminders' events are in the feed, the deleted one's too")
	completed := client.ListSchedulesParamsState("completed")
	n := 0
	for _, err := range c.Schedules(ctx, &client.ListSchedulesParams{State: &completed}) {
		require.NoError(t, err)
		n++
	}
	require.Equal(t, 2, n)
}
