package store

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tickgate/tickgate/store/dbgen"
)

// The outbox consumer feed (GET /events). Every event with a position is handed out once,
// in position order, to every consumer whatever its topic filter and however far behind it
// is. A position is one of:
//
//   - written: a message written at its fire, at (its transaction, its event id);
//   - released: an armed fire's message, at (the transaction of the release that made it
//     true, its visible_at, its event id);
//   - the end: everything up to a transaction, as GET /events?after=now starts.
//
// Positions compare as (transaction, visible time — none for a written message, before any
// time, and none for the end, after every time —, event id).

// FeedPositionKind says what a FeedPosition points at.
type FeedPositionKind int32

// The kinds of FeedPosition. The values are the feed queries' after_kind.
const (
	FeedWritten  FeedPositionKind = 0 // a message written at its fire
	FeedReleased FeedPositionKind = 1 // an armed fire's message, released
	FeedEnd      FeedPositionKind = 2 // the end as of a transaction: after all of it
)

// FeedPosition is a place in the feed: a consumer's cursor is the position of the last event
// it read (or the end it started from).
type FeedPosition struct {
	Tx        int64
	Kind      FeedPositionKind
	VisibleAt time.Time // FeedReleased only
	EventID   int64     // FeedWritten and FeedReleased
}

// FeedStart is the position before every event.
var FeedStart = FeedPosition{Kind: FeedWritten}

// feedCursorPrefix marks a cursor as a feed position (an event id is all digits).
const feedCursorPrefix = "p1."

// Cursor is the position as the feed hands it out: opaque to consumers, and accepted back
// as ?after= or ?cursor=.
func (p FeedPosition) Cursor() string {
	var raw string
	switch p.Kind {
	case FeedReleased:
		raw = fmt.Sprintf("r.%d.%d.%d", p.Tx, p.VisibleAt.UnixMicro(), p.EventID)
	case FeedEnd:
		raw = fmt.Sprintf("e.%d", p.Tx)
	default:
		raw = fmt.Sprintf("w.%d.%d", p.Tx, p.EventID)
	}
	return feedCursorPrefix + base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// ErrNotFeedCursor is ParseFeedCursor's answer to text that is not a cursor the feed handed out.
var ErrNotFeedCursor = errors.New("not a feed cursor")

// IsFeedCursor reports whether s has the shape of a cursor the feed hands out.
func IsFeedCursor(s string) bool { return strings.HasPrefix(s, feedCursorPrefix) }

// ParseFeedCursor reads a cursor the feed handed out back into its position.
func ParseFeedCursor(s string) (FeedPosition, error) {
	if !IsFeedCursor(s) {
		return FeedPosition{}, ErrNotFeedCursor
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(s, feedCursorPrefix))
	if err != nil {
		return FeedPosition{}, ErrNotFeedCursor
	}
	parts := strings.Split(string(b), ".")
	nums := make([]int64, 0, len(parts)-1)
	for _, f := range parts[1:] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil || n < 0 {
			return FeedPosition{}, ErrNotFeedCursor
		}
		nums = append(nums, n)
	}
	switch {
	case parts[0] == "w" && len(nums) == 2:
		return FeedPosition{Kind: FeedWritten, Tx: nums[0], EventID: nums[1]}, nil
	case parts[0] == "r" && len(nums) == 3:
		return FeedPosition{Kind: FeedReleased, Tx: nums[0], VisibleAt: time.UnixMicro(nums[1]).UTC(), EventID: nums[2]}, nil
	case parts[0] == "e" && len(nums) == 1:
		return FeedPosition{Kind: FeedEnd, Tx: nums[0]}, nil
	}
	return FeedPosition{}, ErrNotFeedCursor
}

// FeedEvent is one entry of the outbox consumer feed, with its position.
type FeedEvent struct {
	ID          int64
	Topic       string
	Type        string
	AggregateID string
	Data        []byte
	CreatedAt   time.Time
	Position    FeedPosition
}

// FeedPage is one read of the feed: its events, in position order, and where the next read
// resumes (the last event's position; the position read after when there was none).
type FeedPage struct {
	Events []FeedEvent
	Next   FeedPosition
}

// ReadFeed reads up to limit events after the position, optionally of one topic. A topic's
// events are read through that topic's own indexes: a consumer of a quiet topic reads none
// of a busy one's rows, however far behind it is.
func (s *Store) ReadFeed(ctx context.Context, after FeedPosition, topic string, limit int) (FeedPage, error) {
	visible := after.VisibleAt
	if after.Kind != FeedReleased {
		visible = time.Time{} // unused by the queries
	}
	var rows []dbgen.ReadFeedRow
	var err error
	if topic == "" {
		rows, err = s.Q.ReadFeed(ctx, dbgen.ReadFeedParams{
			AfterKind: int32(after.Kind), AfterTx: after.Tx, AfterVisibleAt: visible, AfterEventID: after.EventID, MaxRows: int4(limit),
		})
	} else {
		var topicRows []dbgen.ReadFeedTopicRow
		topicRows, err = s.Q.ReadFeedTopic(ctx, dbgen.ReadFeedTopicParams{
			Topic: topic, AfterKind: int32(after.Kind), AfterTx: after.Tx, AfterVisibleAt: visible, AfterEventID: after.EventID, MaxRows: int4(limit),
		})
		rows = make([]dbgen.ReadFeedRow, len(topicRows))
		for i, r := range topicRows {
			rows[i] = dbgen.ReadFeedRow(r)
		}
	}
	if err != nil {
		return FeedPage{}, fmt.Errorf("read the event feed: %w", mapErr(err))
	}
	page := FeedPage{Events: make([]FeedEvent, len(rows)), Next: after}
	for i, r := range rows {
		pos := FeedPosition{Kind: FeedWritten, Tx: r.Tx, EventID: r.ID}
		if r.Released {
			pos.Kind, pos.VisibleAt = FeedReleased, r.VisibleAt.UTC()
		}
		page.Events[i] = FeedEvent{ID: r.ID, Topic: r.Topic, Type: r.Type, AggregateID: r.AggregateID, Data: r.Data, CreatedAt: r.CreatedAt, Position: pos}
		page.Next = pos
	}
	return page, nil
}

// FeedEndNow is the feed's end now: every event from then on comes after it.
func (s *Store) FeedEndNow(ctx context.Context) (FeedPosition, error) {
	tx, err := s.Q.FeedEnd(ctx)
	if err != nil {
		return FeedPosition{}, fmt.Errorf("the event feed's end: %w", mapErr(err))
	}
	return FeedPosition{Kind: FeedEnd, Tx: tx}, nil
}

// EventPosition is an event's feed position; ErrNotFound when there is no such event, or it
// has none yet (an armed fire's, before its release).
func (s *Store) EventPosition(ctx context.Context, eventID int64) (FeedPosition, error) {
	p, err := s.Q.OutboxPosition(ctx, eventID)
	if err != nil {
		return FeedPosition{}, fmt.Errorf("event %d: %w", eventID, mapErr(err))
	}
	if p.Released {
		return FeedPosition{Kind: FeedReleased, Tx: p.Tx, VisibleAt: p.VisibleAt.UTC(), EventID: p.EventID}, nil
	}
	return FeedPosition{Kind: FeedWritten, Tx: p.Tx, EventID: p.EventID}, nil
}

// EventFeed reads outbox events after the event afterEventID (0 from the start), optionally
// for one topic: ReadFeed from that event's position.
func (s *Store) EventFeed(ctx context.Context, afterEventID int64, topic string, limit int) ([]FeedEvent, error) {
	after := FeedStart
	if afterEventID > 0 {
		var err error
		if after, err = s.EventPosition(ctx, afterEventID); err != nil {
			return nil, err
		}
	}
	page, err := s.ReadFeed(ctx, after, topic, limit)
	return page.Events, err
}
