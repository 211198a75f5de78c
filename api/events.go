package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tickgate/tickgate/store"
)

// registerEvents mounts the outbox consumer feed.
func (s *Server) registerEvents(g *echo.Group) {
	g.GET("/events", s.listEvents)
}

// EventView is an event as the feed answers it.
type EventView struct {
	ID          int64           `json:"id"`
	Topic       string          `json:"topic"`
	Type        string          `json:"type"`
	Data        json.RawMessage `json:"data"`
	AggregateID string          `json:"aggregate_id"`
	CreatedAt   time.Time       `json:"created_at"`
}

var topicRE = regexp.MustCompile(`^[A-Za-z0-9._:/-]{1,200}$`)

const (
	// maxFeedLimit caps a feed page: consumers that fall behind catch up in big pages.
	maxFeedLimit = 5000
	// maxFeedWait caps a feed long-poll, as maxClaimWait caps an agent's.
	maxFeedWait = time.Minute
)

// listEvents is the outbox feed: the events after a position, in position order, so a
// consumer that resumes from the cursor it was handed (or the last event id it handled)
// reads every event of its filter exactly once, however far behind it is. ?after= (or
// ?cursor=) is an event id, a cursor the feed handed out, or `now` (the end: only events
// from then on). ?wait= long-polls: with nothing yet, the answer waits for events.
//
// next_cursor, as on every list, is empty on the last page: it is the position after a full
// page's last event (more may follow at once), or, for a read from `now`, where that read
// ended (the end it started from, when nothing came). A consumer resumes from it, or from the
// id of the last event it handled.
func (s *Server) listEvents(c echo.Context) error {
	limit, err := feedLimit(c)
	if err != nil {
		return err
	}
	topic := c.QueryParam("topic")
	if topic != "" && !topicRE.MatchString(topic) {
		return BadRequest("topic", "not a valid topic: %q", topic)
	}
	wait, err := feedWait(c)
	if err != nil {
		return err
	}
	from, param := c.QueryParam("after"), "after"
	if from == "" {
		from, param = c.QueryParam("cursor"), "cursor"
	}
	ctx := c.Request().Context()
	after, err := s.feedPosition(c, param, from)
	if err != nil {
		return err
	}
	// The long-poll keeps its own bound, past the server's write timeout.
	s.extendWriteDeadline(c, wait)
	page, err := s.Store.WaitFeed(ctx, s.Listener, after, topic, limit, wait)
	if err != nil {
		return err
	}
	out := Page[EventView]{Items: make([]EventView, 0, len(page.Events))}
	for _, r := range page.Events {
		out.Items = append(out.Items, EventView{ID: r.ID, Topic: r.Topic, Type: r.Type, Data: r.Data, AggregateID: r.AggregateID, CreatedAt: r.CreatedAt.UTC()})
	}
	if len(page.Events) == limit || from == "now" {
		out.NextCursor = page.Next.Cursor()
	}
	return c.JSON(http.StatusOK, out)
}

// feedPosition reads where a feed read starts: the start, the end (now), an event (its id)
// or a cursor the feed handed out.
func (s *Server) feedPosition(c echo.Context, param, v string) (store.FeedPosition, error) {
	switch {
	case v == "":
		return store.FeedStart, nil
	case v == "now":
		return s.Store.FeedEndNow(c.Request().Context())
	case store.IsFeedCursor(v):
		p, err := store.ParseFeedCursor(v)
		if err != nil {
			return p, BadRequest(param, "not a cursor this feed handed out: %q", v)
		}
		return p, nil
	}
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id < 0 {
		return store.FeedPosition{}, BadRequest(param, "must be an event id (a non-negative integer), `now` or a cursor the feed handed out, got %q", v)
	}
	if id == 0 {
		return store.FeedStart, nil
	}
	p, err := s.Store.EventPosition(c.Request().Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return p, BadRequest(param, "no event with id %d", id)
	}
	return p, err
}

// feedLimit is the page size: 1 to maxFeedLimit, 50 by default.
func feedLimit(c echo.Context) (int, error) {
	v := c.QueryParam("limit")
	if v == "" {
		return 50, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxFeedLimit {
		return 0, BadRequest("limit", "must be an integer from 1 to %d, got %q", maxFeedLimit, v)
	}
	return n, nil
}

// feedWait is the long-poll's bound: a Go duration (or whole seconds) up to maxFeedWait.
func feedWait(c echo.Context) (time.Duration, error) {
	v := c.QueryParam("wait")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		n, nerr := strconv.Atoi(v)
		if nerr != nil {
			return 0, BadRequest("wait", "must be a duration such as 30s (at most %s), got %q", maxFeedWait, v)
		}
		d = time.Duration(n) * time.Second
	}
	if d < 0 || d > maxFeedWait {
		return 0, BadRequest("wait", "must be from 0s to %s, got %q", maxFeedWait, v)
	}
	return d, nil
}
