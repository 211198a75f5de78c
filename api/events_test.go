package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/store"
)

// feedWriter records fires with events straight through the store, as a worker does.
type feedWriter struct {
	t     *testing.T
	st    *teststack.Stack
	sched store.Schedule
	tick  time.Time
}

func newFeedWriter(t *testing.T, st *teststack.Stack, name string) *feedWriter {
	t.Helper()
	sched, err := st.Store.CreateSchedule(context.Background(), store.NewSchedule{
		Name: name, Spec: json.RawMessage(`{"cron":"0 0 1 1 *"}`), Action: json.RawMessage(`{"kind":"event","topic":"t","type":"x"}`), Overlap: "skip",
	})
	require.NoError(t, err)
	return &feedWriter{t: t, st: st, sched: sched, tick: time.Now().UTC().Truncate(time.Second).Add(-24 * time.Hour)}
}

// write records one fire with an event on topic, at its time (or armed, visible at visible).
func (w *feedWriter) write(topic string, visible *time.Time) {
	w.t.Helper()
	w.tick = w.tick.Add(time.Second)
	next := w.tick.Add(time.Second)
	f := store.Fire{
		ScheduleID: w.sched.ID, ScheduledAt: w.tick, FiredAt: w.tick, Trigger: domain.TriggerScheduled, Status: domain.RunSucceeded,
		IdempotencyKey: domain.TickKey(w.sched.ID, w.tick), NextRunAt: &next, VisibleAt: visible,
		Event: &domain.Event{Topic: topic, Type: "x", Data: json.RawMessage(`{}`)},
	}
	_, created, err := w.st.Store.RecordFire(context.Background(), f)
	require.NoError(w.t, err)
	require.True(w.t, created)
}

// readFeed is one consumer read: the page, and where it resumes: the page's cursor, or the
// last event's id, or (nothing came) where it was.
func readFeed(t *testing.T, st *teststack.Stack, query, cursor string) (eventsPage, string) {
	t.Helper()
	u := "/api/v1/events?" + query
	if cursor != "" {
		u += "&after=" + url.QueryEscape(cursor)
	}
	var page eventsPage
	st.JSON(t, http.MethodGet, u, nil, http.StatusOK, &page)
	switch {
	case page.NextCursor != "":
		cursor = page.NextCursor
	case len(page.Items) > 0:
		cursor = fmt.Sprint(page.Items[len(page.Items)-1].ID)
	}
	return page, cursor
}

// The stall: a topic consumer reading one event at a time, while another topic's
// events land between its reads and before its first, read nothing and was handed no
// cursor, for good. Now it reads every event of its topic, once, in order, and so does a
// consumer of that topic starting from the beginning behind more than a page of others.
func TestTopicConsumerAtAnyLagReadsEveryEventOfItsTopic(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	w := newFeedWriter(t, st, "feed-stall")
	for i := 0; i < 600; i++ { // more than a 500-event page of another topic first
		w.write("busy", nil)
	}
	want := 0
	cursor := ""
	var read []int64
	for i := 0; i < 8; i++ {
		w.write("quiet", nil)
		want++
		for j := 0; j < 30; j++ {
			w.write("busy", nil)
		}
		var page eventsPage
		page, cursor = readFeed(t, st, "topic=quiet&limit=1", cursor)
		for _, e := range page.Items {
			require.Equal(t, "quiet", e.Topic)
			read = append(read, e.ID)
		}
	}
	require.Eventually(t, func() bool {
		for {
			page, next := readFeed(t, st, "topic=quiet&limit=1", cursor)
			cursor = next
			if len(page.Items) == 0 {
				break
			}
			read = append(read, page.Items[0].ID)
		}
		return len(read) >= want
	}, 20*time.Second, 50*time.Millisecond)
	require.Len(t, read, want, "each of its events once")
	for i := 1; i < len(read); i++ {
		require.Greater(t, read[i], read[i-1], "in order")
	}
	// From the beginning, with the API's largest page: the same events.
	var fromStart eventsPage
	st.JSON(t, http.MethodGet, "/api/v1/events?topic=quiet&limit=5000", nil, http.StatusOK, &fromStart)
	require.Len(t, fromStart.Items, want)
	require.Empty(t, fromStart.NextCursor, "the last page")
	// A full page hands out where it ended, and reading on from there finds the rest.
	var half, rest eventsPage
	st.JSON(t, http.MethodGet, "/api/v1/events?topic=quiet&limit=4", nil, http.StatusOK, &half)
	require.Len(t, half.Items, 4)
	require.NotEmpty(t, half.NextCursor)
	st.JSON(t, http.MethodGet, "/api/v1/events?topic=quiet&limit=4&cursor="+url.QueryEscape(half.NextCursor), nil, http.StatusOK, &rest)
	require.Len(t, rest.Items, 4)
	require.Greater(t, rest.Items[0].ID, half.Items[3].ID)
}

// after=now starts at the end: none of what was there, everything after, and a cursor to
// resume from even though the first page is empty.
func TestEventFeedStartsAtTheEnd(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	w := newFeedWriter(t, st, "feed-end")
	for i := 0; i < 5; i++ {
		w.write("end", nil)
	}
	require.Eventually(t, func() bool {
		var all eventsPage
		st.JSON(t, http.MethodGet, "/api/v1/events?topic=end", nil, http.StatusOK, &all)
		return len(all.Items) == 5
	}, 20*time.Second, 50*time.Millisecond)
	var start eventsPage
	st.JSON(t, http.MethodGet, "/api/v1/events?topic=end&after=now", nil, http.StatusOK, &start)
	require.Empty(t, start.Items)
	require.NotEmpty(t, start.NextCursor)
	w.write("end", nil)
	var got []int64
	require.Eventually(t, func() bool {
		var page eventsPage
		st.JSON(t, http.MethodGet, "/api/v1/events?topic=end&cursor="+url.QueryEscape(start.NextCursor), nil, http.StatusOK, &page)
		got = nil
		for _, e := range page.Items {
			got = append(got, e.ID)
		}
		return len(got) > 0
	}, 20*time.Second, 50*time.Millisecond)
	require.Len(t, got, 1, "only the event written after the end was taken")
}

// A consumer waiting at the end hears of new events without polling: a long-poll answers
// when a fire is written, and when a release makes an armed one true.
func TestEventFeedLongPollAnswersWhenEventsCome(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	w := newFeedWriter(t, st, "feed-wait")
	var start eventsPage
	st.JSON(t, http.MethodGet, "/api/v1/events?topic=wait&after=now", nil, http.StatusOK, &start)

	poll := func(cursor string) chan eventsPage {
		out := make(chan eventsPage, 1)
		go func() {
			var page eventsPage
			code, body := st.Do(t, http.MethodGet, "/api/v1/events?topic=wait&wait=50s&after="+url.QueryEscape(cursor), nil)
			if code == http.StatusOK {
				_ = json.Unmarshal(body, &page)
			}
			out <- page
		}()
		return out
	}
	waiting := poll(start.NextCursor)
	select {
	case p := <-waiting:
		t.Fatalf("the long-poll answered before any event: %+v", p)
	case <-time.After(300 * time.Millisecond):
	}
	w.write("wait", nil)
	page := <-waiting
	require.Len(t, page.Items, 1, "a written fire ends the wait")

	// An armed fire: hidden until a release makes it true, which ends the next wait.
	visible := time.Now().UTC().Add(time.Hour)
	w.write("wait", &visible)
	waiting = poll(fmt.Sprint(page.Items[0].ID))
	select {
	case p := <-waiting:
		t.Fatalf("the long-poll answered before the release: %+v", p)
	case <-time.After(300 * time.Millisecond):
	}
	released := visible.Add(time.Second)
	_, err := st.Store.ReleaseDueAsOf(context.Background(), &released, nil)
	require.NoError(t, err)
	page = <-waiting
	require.Len(t, page.Items, 1, "the release ends the wait")
}

// Bad feed parameters are 400s naming the parameter; the largest page is 5,000.
func TestEventFeedRefusesBadParameters(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	for _, c := range []struct{ query, field string }{
		{"limit=5001", "limit"}, {"limit=0", "limit"}, {"wait=2m", "wait"}, {"wait=soon", "wait"}, {"wait=-1s", "wait"},
		{"after=later", "after"}, {"cursor=p1.bm9wZQ", "cursor"}, {"after=-3", "after"}, {"after=999999", "after"},
	} {
		code, body := st.Do(t, http.MethodGet, "/api/v1/events?"+c.query, nil)
		require.Equal(t, http.StatusBadRequest, code, c.query)
		var p struct {
			Field string `json:"field"`
		}
		require.NoError(t, json.Unmarshal(body, &p), c.query)
		require.Equal(t, c.field, p.Field, c.query)
	}
	st.JSON(t, http.MethodGet, "/api/v1/events?limit=5000&wait=0s", nil, http.StatusOK, nil)
	st.JSON(t, http.MethodGet, fmt.Sprintf("/api/v1/events?wait=%d", 0), nil, http.StatusOK, nil)
}
