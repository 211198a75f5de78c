package activities

import (
	"context"
	"sync"
	"time"

	"github.com/tickgate/tickgate/store"
)

// dueCountTTL is how long a count of the schedules due in one second is reused: the
// thousands of schedules that share a tick each ask for it as they arm, and the answer only
// shapes how their next arming is spread.
const dueCountTTL = 5 * time.Second

// dueCounts caches, per second, how many schedules are due in it (store.SchedulesDueIn).
type dueCounts struct {
	mu      sync.Mutex
	counts  map[int64]dueCount // by Unix second
	checked time.Time
}

type dueCount struct {
	n  int64
	at time.Time
}

// dueTogether answers how many schedules' next fire falls in tick's second, from a count at
// most dueCountTTL old.
func (d *dueCounts) dueTogether(ctx context.Context, st *store.Store, tick time.Time) (int64, error) {
	sec := tick.Truncate(time.Second)
	now := time.Now()
	d.mu.Lock()
	if d.counts == nil {
		d.counts = map[int64]dueCount{}
	}
	if c, ok := d.counts[sec.Unix()]; ok && now.Sub(c.at) < dueCountTTL {
		d.mu.Unlock()
		return c.n, nil
	}
	d.mu.Unlock()
	n, err := st.SchedulesDueIn(ctx, sec)
	if err != nil {
		return 0, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.counts[sec.Unix()] = dueCount{n: n, at: now}
	if now.Sub(d.checked) > time.Minute { // forget seconds long past
		for k, c := range d.counts {
			if now.Sub(c.at) > dueCountTTL {
				delete(d.counts, k)
			}
		}
		d.checked = now
	}
	return n, nil
}
