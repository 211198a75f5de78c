package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"
)

// feedConsumer is a consumer of GET /events waiting at the tick: it starts at the end of the
// feed before the tick and long-polls pages of up to 5,000 events of its topic, as a user's
// service does. Each event's lateness runs from the tick to the moment its page's body was
// read by the consumer, so it holds the release, the feed's read, the HTTP answer and its
// decoding: what the consumer feels.
type feedConsumer struct {
	h     *httpClient
	topic string
	tick  time.Time

	mu       sync.Mutex
	lateness []float64 // ms, one per event received
	pages    int
	err      error
}

// run reads until ctx ends.
func (c *feedConsumer) run(ctx context.Context) {
	cursor, err := c.page(ctx, "now", 0)
	for err == nil && ctx.Err() == nil {
		cursor, err = c.page(ctx, cursor, 30*time.Second)
	}
	if err != nil && ctx.Err() == nil {
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
	}
}

// page reads one page after cursor and answers where the next read resumes.
func (c *feedConsumer) page(ctx context.Context, cursor string, wait time.Duration) (string, error) {
	q := url.Values{"topic": {c.topic}, "limit": {"5000"}, "after": {cursor}}
	if wait > 0 {
		q.Set("wait", wait.String())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.h.base+"/api/v1/events?"+q.Encode(), nil)
	if err != nil {
		return cursor, err
	}
	req.Header.Set("Authorization", "Bearer "+c.h.token)
	resp, err := c.h.c.Do(req)
	if err != nil {
		return cursor, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	at := time.Now()
	if err != nil {
		return cursor, err
	}
	if resp.StatusCode != http.StatusOK {
		return cursor, fmt.Errorf("GET /events: %d %s", resp.StatusCode, truncate(string(body), 300))
	}
	var p struct {
		Items []struct {
			ID int64 `json:"id"`
		} `json:"items"`
		NextCursor string `json:"next_cursor"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return cursor, err
	}
	late := float64(at.Sub(c.tick)) / float64(time.Millisecond)
	c.mu.Lock()
	c.pages++
	for range p.Items {
		c.lateness = append(c.lateness, late)
	}
	c.mu.Unlock()
	switch {
	case p.NextCursor != "":
		return p.NextCursor, nil
	case len(p.Items) > 0:
		return strconv.FormatInt(p.Items[len(p.Items)-1].ID, 10), nil
	}
	return cursor, nil
}

// received is how many events the consumer has read so far.
func (c *feedConsumer) received() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.lateness)
}

// consumerFigures are the consumer's lateness percentiles, in ms.
type consumerFigures struct {
	events, pages int
	p50, p99, max float64
	err           error
}

func (c *feedConsumer) figures() consumerFigures {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := consumerFigures{events: len(c.lateness), pages: c.pages, err: c.err}
	if len(c.lateness) == 0 {
		return f
	}
	l := slices.Clone(c.lateness)
	slices.Sort(l)
	at := func(q float64) float64 { return l[min(len(l)-1, int(q*float64(len(l))))] }
	f.p50, f.p99, f.max = at(0.5), at(0.99), l[len(l)-1]
	return f
}
