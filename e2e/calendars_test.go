package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/testing/teststack"
)

type e2eRun struct {
	ScheduledAt time.Time `json:"scheduled_at"`
	Status      string    `json:"status"`
	Reason      string    `json:"reason"`
}

func runsOf(t *testing.T, st *teststack.Stack, name, query string) []e2eRun {
	t.Helper()
	var page struct {
		Items []e2eRun `json:"items"`
	}
	st.JSON(t, http.MethodGet, "/api/v1/schedules/"+name+"/runs?limit=500"+query, nil, http.StatusOK, &page)
	return page.Items
}

// TestCalendarsEndToEnd: through HTTP, on the whole product. An event schedule at rest
// every second excludes a calendar: the planner arms its fires a minute ahead, those the
// calendar excludes as SKIPPED ticks naming it, which show at their time; an edit of the
// calendar turns fires already armed into skipped ticks before their release; the feed
// carries the fired ticks' events only.
func TestCalendarsEndToEnd(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	now := time.Now().UTC().Truncate(time.Second)
	first := [2]time.Time{now.Add(4 * time.Second), now.Add(7 * time.Second)} // 3 ticks
	st.JSON(t, http.MethodPost, "/api/v1/calendars", map[string]any{"name": "e2e-maintenance", "ranges": []map[string]string{
		{"start": first[0].Format(time.RFC3339), "end": first[1].Format(time.RFC3339)}}}, http.StatusCreated, nil)
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{
		"name": "e2e-beat", "spec": map[string]any{"interval": "1s", "start_at": now.Format(time.RFC3339), "exclude_calendars": []string{"e2e-maintenance"}},
		"action": map[string]any{"kind": "event", "topic": "e2e-beat", "type": "tick"},
	}, http.StatusCreated, nil)
	// Once the planner armed the next minute, exclude 3 more seconds of it.
	second := [2]time.Time{now.Add(15 * time.Second), now.Add(18 * time.Second)}
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, st.Store.Pool.QueryRow(t.Context(), `SELECT count(*) FROM schedule_runs WHERE armed AND scheduled_at >= $1`, second[1]).Scan(&n))
		return n > 0
	}, 30*time.Second, 50*time.Millisecond, "the planner armed past the second range")
	var edited struct {
		Rejudged struct {
			Skipped int `json:"skipped"`
		} `json:"rejudged"`
	}
	st.JSON(t, http.MethodPut, "/api/v1/calendars/e2e-maintenance", map[string]any{"ranges": []map[string]string{
		{"start": first[0].Format(time.RFC3339), "end": first[1].Format(time.RFC3339)},
		{"start": second[0].Format(time.RFC3339), "end": second[1].Format(time.RFC3339)}}}, http.StatusOK, &edited)
	require.Equal(t, 3, edited.Rejudged.Skipped, "the armed fires of the second range, before their release")

	require.Eventually(t, func() bool {
		return len(runsOf(t, st, "e2e-beat", "")) >= 22
	}, time.Minute, 200*time.Millisecond)
	skipped := map[time.Time]bool{}
	for _, r := range runsOf(t, st, "e2e-beat", "") {
		excluded := (!r.ScheduledAt.Before(first[0]) && r.ScheduledAt.Before(first[1])) || (!r.ScheduledAt.Before(second[0]) && r.ScheduledAt.Before(second[1]))
		if excluded {
			require.Equal(t, "SKIPPED", r.Status, "tick %s", r.ScheduledAt)
			require.Equal(t, "excluded by calendar e2e-maintenance", r.Reason)
			skipped[r.ScheduledAt] = true
		} else {
			require.Equal(t, "SUCCEEDED", r.Status, "tick %s", r.ScheduledAt)
		}
	}
	require.Len(t, skipped, 6)
	var feed struct {
		Items []struct {
			Data map[string]any `json:"data"`
		} `json:"items"`
	}
	require.Eventually(t, func() bool {
		st.JSON(t, http.MethodGet, "/api/v1/events?topic=e2e-beat&limit=500", nil, http.StatusOK, &feed)
		return len(feed.Items) >= 16
	}, 20*time.Second, 100*time.Millisecond)
	fired := len(runsOf(t, st, "e2e-beat", "&status=SUCCEEDED"))
	st.JSON(t, http.MethodGet, "/api/v1/events?topic=e2e-beat&limit=500", nil, http.StatusOK, &feed)
	require.LessOrEqual(t, len(feed.Items), fired+5, "no event for a skipped tick (a few more fired meanwhile)")
}

// TestOneTimeSchedulesEndToEnd: per-user reminders, through HTTP. A one-time event
// schedule fires once at its at and is then completed; one asking after_completion "delete"
// is gone once its run ended, its event still in the feed; a one-time workflow action
// completes when its target ends.
func TestOneTimeSchedulesEndToEnd(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{})
	queue := startRecordTargets(t, st)
	at := time.Now().UTC().Add(3 * time.Second)
	event := map[string]any{"kind": "event", "topic": "e2e-reminders", "type": "due"}
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{"name": "remind-keep", "spec": map[string]any{"at": at}, "action": event},
		http.StatusCreated, nil)
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{"name": "remind-drop", "spec": map[string]any{"at": at}, "action": event,
		"after_completion": "delete"}, http.StatusCreated, nil)
	st.JSON(t, http.MethodPost, "/api/v1/schedules", map[string]any{"name": "remind-run", "spec": map[string]any{"at": at},
		"action": map[string]any{"kind": "workflow", "workflow_type": "RecordTarget", "task_queue": queue}}, http.StatusCreated, nil)

	state := func(name string) string {
		var v struct {
			State string `json:"state"`
		}
		status, _ := st.Do(t, http.MethodGet, "/api/v1/schedules/"+name, nil)
		if status == http.StatusNotFound {
			return "gone"
		}
		st.JSON(t, http.MethodGet, "/api/v1/schedules/"+name, nil, http.StatusOK, &v)
		return v.State
	}
	require.Equal(t, "active", state("remind-keep"))
	require.Eventually(t, func() bool {
		return state("remind-keep") == "completed" && state("remind-drop") == "gone" && state("remind-run") == "completed"
	}, time.Minute, 200*time.Millisecond)
	runs := runsOf(t, st, "remind-keep", "")
	require.Len(t, runs, 1)
	require.Equal(t, "SUCCEEDED", runs[0].Status)
	require.False(t, runs[0].ScheduledAt.Before(at.Truncate(time.Microsecond)))
	runs = runsOf(t, st, "remind-run", "")
	require.Len(t, runs, 1)
	require.Equal(t, "SUCCEEDED", runs[0].Status, "completed when its target ended")
	var feed struct {
		Items []struct {
			AggregateID string `json:"aggregate_id"`
		} `json:"items"`
	}
	require.Eventually(t, func() bool {
		st.JSON(t, http.MethodGet, "/api/v1/events?topic=e2e-reminders", nil, http.StatusOK, &feed)
		return len(feed.Items) == 2
	}, 20*time.Second, 100*time.Millisecond, "both reminders' events are in the feed, the deleted one's too")
	var list struct {
		Items []struct {
			Name string `json:"name"`
		} `json:"items"`
	}
	st.JSON(t, http.MethodGet, "/api/v1/schedules?state=completed", nil, http.StatusOK, &list)
	require.Len(t, list.Items, 2)
}
