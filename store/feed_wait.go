package store

import (
	"context"
	"time"
)

// feedChange wakes every feed long-poll (l.mu held).
func (l *Listener) feedChange() {
	close(l.feedChanged)
	l.feedChanged = make(chan struct{})
}

// FeedChanged is closed at the next notification that the feed has something new, or when
// the listening connection is lost or comes back (notifications may have been missed).
func (l *Listener) FeedChanged() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		done := make(chan struct{})
		close(done)
		return done
	}
	return l.feedChanged
}

// Feed long-polls look again on their own as well: a notification comes at a commit, but
// the feed shows a row only once every older transaction has finished, which no
// notification tells. After a notification they look again soon, then less and less often.
const (
	feedRecheckFirst = 25 * time.Millisecond
	feedRecheckMax   = time.Second
)

// WaitFeed is ReadFeed as a long-poll: with nothing after the position, it waits up to wait
// for events, hearing of them from the listener l (nil: it looks again on its own), and
// answers as soon as a read finds some, or when the wait is over (an empty page).
func (s *Store) WaitFeed(ctx context.Context, l *Listener, after FeedPosition, topic string, limit int, wait time.Duration) (FeedPage, error) {
	deadline := time.Now().Add(wait)
	recheck := feedRecheckFirst
	for {
		var changed <-chan struct{}
		if l != nil {
			changed = l.FeedChanged() // before the read: a change after it is not missed
		}
		page, err := s.ReadFeed(ctx, after, topic, limit)
		if err != nil || len(page.Events) > 0 {
			return page, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return page, nil
		}
		timer := time.NewTimer(min(recheck, left))
		select {
		case <-ctx.Done():
			timer.Stop()
			return page, nil // the caller went away or the server stops: an empty page
		case <-changed:
			timer.Stop()
			recheck = feedRecheckFirst
		case <-timer.C:
			recheck = min(2*recheck, feedRecheckMax)
		}
	}
}
