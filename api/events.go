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

// listEvents is the outbox feed: events after the event id `after` (or the cursor), in
// commit-safe order, so a consumer that stores the last id it handled never misses one.
func (s *Server) listEvents(c echo.Context) error {
	limit, err := Limit(c)
	if err != nil {
		return err
	}
	var after int64
	from := "after" // the parameter the position came from, named if it is unknown
	if v := c.QueryParam("after"); v != "" {
		after, err = strconv.ParseInt(v, 10, 64)
		if err != nil || after < 0 {
			return BadRequest("after", "must be an event id (a non-negative integer), got %q", v)
		}
	} else if v := c.QueryParam("cursor"); v != "" {
		from = "cursor"
		// next_cursor is a plain event id, so it works as ?after= and as ?cursor=.
		if after, err = strconv.ParseInt(v, 10, 64); err != nil || after < 0 {
			if after, err = CursorInt(c); err != nil {
				return err
			}
		}
	}
	topic := c.QueryParam("topic")
	if topic != "" && !topicRE.MatchString(topic) {
		return BadRequest("topic", "not a valid topic: %q", topic)
	}
	rows, err := s.Store.EventFeed(c.Request().Context(), after, topic, limit)
	if errors.Is(err, store.ErrNotFound) {
		return BadRequest(from, "no event with id %d", after)
	}
	if err != nil {
		return err
	}
	page := Page[EventView]{Items: []EventView{}}
	for _, r := range rows {
		page.Items = append(page.Items, EventView{ID: r.ID, Topic: r.Topic, Type: r.Type, Data: r.Data, AggregateID: r.AggregateID, CreatedAt: r.CreatedAt.UTC()})
	}
	if len(rows) == limit {
		page.NextCursor = strconv.FormatInt(rows[len(rows)-1].ID, 10)
	}
	return c.JSON(http.StatusOK, page)
}
