package main

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tickgate/tickgate/internal/dev/agentsim"
)

// observer records what the agents saw, by command: when its claim was answered, when its
// result request was sent and when that was answered; and the round trip of every claim.
type observer struct {
	mu       sync.Mutex
	commands map[attemptKey]*commandTimes
	claims   []time.Duration
}

// attemptKey is one attempt of one device execution.
type attemptKey struct {
	id      int64
	attempt int32
}

type commandTimes struct {
	task                    int64
	pc                      string
	claimed, sent, answered time.Time
	freed                   bool // the result was accepted (200): the slot is free
}

func newObserver() *observer { return &observer{commands: map[attemptKey]*commandTimes{}} }

// forget drops what was observed so far (a warm-up).
func (o *observer) forget() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.commands = map[attemptKey]*commandTimes{}
	o.claims = nil
}

func (o *observer) get(c agentsim.Command) *commandTimes {
	k := attemptKey{c.ID, c.Attempt}
	t := o.commands[k]
	if t == nil {
		t = &commandTimes{task: c.TaskID, pc: c.PC}
		o.commands[k] = t
	}
	return t
}

func (o *observer) claimed(c agentsim.Command, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.get(c).claimed = at
}

func (o *observer) answering(c agentsim.Command, _ agentsim.Outcome, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.get(c).sent = at
}

func (o *observer) answered(c agentsim.Command, _ agentsim.Outcome, code int, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.get(c)
	t.answered, t.freed = at, code == http.StatusOK
}

// resultLatencies are the accepted results' round trips at the agent, sorted.
func (o *observer) resultLatencies() []time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []time.Duration
	for _, t := range o.commands {
		if t.freed {
			out = append(out, t.answered.Sub(t.sent))
		}
	}
	slices.Sort(out)
	return out
}

// refillLatencies pairs, per task and PC, the k-th slot freed (results in the order their
// requests were sent) with the (capacity+k)-th execution claimed: with at most capacity
// running, that claim could not happen before k slots were free, and the pairing is the
// first-freed-first-refilled order a dispatcher serves. Slots freed near a task's end have
// no later execution of the task on their PC (nothing left to refill); they are counted,
// not paired. Returns the refill latencies, sorted, and the unpaired freed slots.
func (o *observer) refillLatencies(capacity int) ([]time.Duration, int) {
	return o.refillLatenciesWithin(capacity, nil)
}

// refillLatenciesWithin is refillLatencies of the slots freed (their result sent) within
// the windows ws; nil is the whole run.
func (o *observer) refillLatenciesWithin(capacity int, ws []window) ([]time.Duration, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	type group struct{ freed, claims []time.Time }
	type taskPC struct {
		task int64
		pc   string
	}
	groups := map[taskPC]*group{}
	for _, t := range o.commands {
		k := taskPC{t.task, t.pc}
		g := groups[k]
		if g == nil {
			g = &group{}
			groups[k] = g
		}
		if !t.claimed.IsZero() {
			g.claims = append(g.claims, t.claimed)
		}
		if t.freed {
			g.freed = append(g.freed, t.sent)
		}
	}
	var out []time.Duration
	unpaired := 0
	for _, g := range groups {
		slices.SortFunc(g.freed, func(a, b time.Time) int { return a.Compare(b) })
		slices.SortFunc(g.claims, func(a, b time.Time) int { return a.Compare(b) })
		for k, freed := range g.freed {
			if ws != nil && !within(ws, freed) {
				continue
			}
			if capacity+k >= len(g.claims) {
				unpaired++
				continue
			}
			out = append(out, g.claims[capacity+k].Sub(freed))
		}
	}
	slices.Sort(out)
	return out, unpaired
}

// busySlotTime is the slot time held by commands: claim answered → result answered.
func (o *observer) busySlotTime() time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	var d time.Duration
	for _, t := range o.commands {
		if !t.claimed.IsZero() && !t.answered.IsZero() {
			d += t.answered.Sub(t.claimed)
		}
	}
	return d
}

func (o *observer) claimRoundTrips() []time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := slices.Clone(o.claims)
	slices.Sort(out)
	return out
}

// httpClient is agentsim's default client with the claim requests timed.
func (o *observer) httpClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 1024, 1024
	return &http.Client{Transport: timedClaims{next: tr, o: o}, Timeout: 30 * time.Second}
}

type timedClaims struct {
	next http.RoundTripper
	o    *observer
}

func (t timedClaims) RoundTrip(r *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(r.URL.Path, "/claim") {
		return t.next.RoundTrip(r)
	}
	start := time.Now()
	resp, err := t.next.RoundTrip(r)
	if err == nil {
		t.o.mu.Lock()
		t.o.claims = append(t.o.claims, time.Since(start))
		t.o.mu.Unlock()
	}
	return resp, err
}
