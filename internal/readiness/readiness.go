// Package readiness tracks whether a tickgate process's dependencies (PostgreSQL, Temporal,
// the SDK worker) are usable, waits for them with capped exponential backoff, and answers
// /healthz and /readyz with the reason a process is not ready: how else would an operator
// tell "still waiting for PostgreSQL" from "stuck"?
package readiness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"
)

// Phases a process goes through: until Started it is connecting to its dependencies.
const (
	PhaseStarting = "starting"
	PhaseRunning  = "running"
)

// ErrNotChecked is a dependency's state before anything was tried.
var ErrNotChecked = errors.New("not checked yet")

// DefaultProbeTimeout bounds each live check of a /readyz request, so a black-holed
// dependency answers 503 instead of hanging the orchestrator's probe.
const DefaultProbeTimeout = 3 * time.Second

// Backoff is a capped exponential delay between attempts.
type Backoff struct {
	Min, Max time.Duration
}

// DefaultBackoff starts fast (a dependency that is seconds away is picked up quickly) and
// caps low enough that a dependency that returns is noticed within seconds.
var DefaultBackoff = Backoff{Min: 200 * time.Millisecond, Max: 5 * time.Second}

// Tracker holds the last known state of each named dependency.
type Tracker struct {
	// Logf logs each retry of Wait (log.Printf by default).
	Logf func(format string, args ...any)
	// Backoff paces Wait (DefaultBackoff by default).
	Backoff Backoff
	// Now is the clock (tests may pin it).
	Now func() time.Time
	// ProbeTimeout bounds each probe (DefaultProbeTimeout by default).
	ProbeTimeout time.Duration
	// StatusReuse is how long one round of probes answers ServeStatus (DefaultStatusReuse
	// by default): however many unauthenticated probes come, the dependencies are asked at
	// most once per StatusReuse, and the probes that come while a round runs wait for it.
	StatusReuse time.Duration

	mu     sync.Mutex
	names  []string
	states map[string]*state
	probes map[string]func(context.Context) error
	phase  string

	// The shared round of ServeStatus.
	statusMu      sync.Mutex
	statusAt      time.Time     // when the last shared round ended (zero: none yet)
	statusReady   bool          // its verdict
	statusRunning chan struct{} // closed when the round running now ends (nil: none runs)
}

// DefaultStatusReuse: a flood of anonymous readiness probes costs the dependencies one
// round a second, and an outage shows within a second.
const DefaultStatusReuse = time.Second

type state struct {
	err   error
	since time.Time // when the dependency last turned ready or not ready
}

// New tracks names, each not ready until Set (or a probe) says otherwise.
func New(names ...string) *Tracker {
	t := &Tracker{Logf: log.Printf, Backoff: DefaultBackoff, Now: time.Now, ProbeTimeout: DefaultProbeTimeout, StatusReuse: DefaultStatusReuse,
		states: map[string]*state{}, probes: map[string]func(context.Context) error{}, phase: PhaseStarting}
	now := t.Now()
	for _, n := range names {
		t.names = append(t.names, n)
		t.states[n] = &state{err: ErrNotChecked, since: now}
	}
	return t
}

// Set records name's state: nil is ready. since moves only when the dependency turns ready
// or not ready, so it says how long a failing dependency has been failing (from process
// start, while starting) even as its error text changes from one attempt to the next.
func (t *Tracker) Set(name string, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.states[name]
	if !ok {
		t.names = append(t.names, name)
		t.states[name] = &state{err: err, since: t.Now()}
		return
	}
	if (s.err == nil) != (err == nil) {
		s.since = t.Now()
	}
	s.err = err
}

// Probe makes every /readyz request check name live with fn (for example a ping) instead of
// reporting the last Set, so a dependency that goes away after start-up shows at once.
func (t *Tracker) Probe(name string, fn func(context.Context) error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.states[name]; !ok {
		t.names = append(t.names, name)
		t.states[name] = &state{err: ErrNotChecked, since: t.Now()}
	}
	t.probes[name] = fn
}

// ProbeConnections makes /readyz check PostgreSQL (a ping on pool) and Temporal (its health
// check) live, as every tickgate process does once connected: an outage after start-up
// shows at once, and so does its end (pgxpool and the gRPC connection reconnect by
// themselves).
func (t *Tracker) ProbeConnections(pool *pgxpool.Pool, tc client.Client) {
	t.Probe("postgres", func(ctx context.Context) error { return pool.Ping(ctx) })
	t.Probe("temporal", func(ctx context.Context) error {
		_, err := tc.CheckHealth(ctx, &client.CheckHealthRequest{})
		return err
	})
}

// Started marks the end of start-up: the phase reported becomes "running".
func (t *Tracker) Started() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.phase = PhaseRunning
}

// Retry calls attempt until it succeeds, waiting b's capped exponential delay between
// tries; failed (may be nil) hears of each failure and the delay before the next try. It
// gives up only when ctx ends, with ctx's error and the last failure.
func Retry(ctx context.Context, b Backoff, attempt func(context.Context) error, failed func(err error, next time.Duration)) error {
	delay := b.Min
	for {
		err := attempt(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		}
		if failed != nil {
			failed(err, delay)
		}
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-timer.C:
		}
		delay = min(delay*2, b.Max)
	}
}

// Wait retries attempt (see Retry), recording each result under name and logging each
// failure with the delay before the next try. It gives up only when ctx ends.
func (t *Tracker) Wait(ctx context.Context, name string, attempt func(context.Context) error) error {
	err := Retry(ctx, t.Backoff, attempt, func(err error, next time.Duration) {
		t.Set(name, err)
		t.Logf("waiting for %s: %v (retrying in %s)", name, err, next)
	})
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", name, err)
	}
	t.Set(name, nil)
	return nil
}

// Check is one dependency in a report.
type Check struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	// Since is when the dependency last turned ready or not ready.
	Since time.Time `json:"since"`
	// For is how long a failing dependency has been failing (rounded), empty when ready.
	For string `json:"for,omitempty"`
}

// Report is the state of every dependency at one moment.
type Report struct {
	Ready  bool             `json:"-"`
	Phase  string           `json:"phase"`
	Checks map[string]Check `json:"checks"`
	// order keeps the tracker's order of names for the human-readable summary.
	order []string
}

// Report runs the probes (concurrently, each bounded by ProbeTimeout), records their results
// and returns the state of every dependency.
func (t *Tracker) Report(ctx context.Context) Report {
	t.mu.Lock()
	timeout := t.ProbeTimeout
	probes := make(map[string]func(context.Context) error, len(t.probes))
	for n, fn := range t.probes {
		probes[n] = fn
	}
	t.mu.Unlock()

	var wg sync.WaitGroup
	for name, fn := range probes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			t.Set(name, fn(pctx))
		}()
	}
	wg.Wait()
	return t.report()
}

// report is the recorded state of every dependency, without probing.
func (t *Tracker) report() Report {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.Now()
	r := Report{Ready: true, Phase: t.phase, Checks: map[string]Check{}, order: append([]string(nil), t.names...)}
	for _, n := range t.names {
		s := t.states[n]
		c := Check{OK: s.err == nil, Since: s.since.UTC()}
		if s.err != nil {
			r.Ready = false
			c.Error = s.err.Error()
			c.For = now.Sub(s.since).Round(100 * time.Millisecond).String()
		}
		r.Checks[n] = c
	}
	return r
}

// Failing lists the dependencies that are not ready, in the tracker's order.
func (r Report) Failing() []string {
	var out []string
	for _, n := range r.order {
		if !r.Checks[n].OK {
			out = append(out, n)
		}
	}
	return out
}

// Summary says in one line what is not ready and why.
func (r Report) Summary() string {
	var parts []string
	for _, n := range r.Failing() {
		c := r.Checks[n]
		parts = append(parts, fmt.Sprintf("%s: %s (for %s)", n, c.Error, c.For))
	}
	return "not ready: " + strings.Join(parts, "; ")
}

// problem is an RFC 9457 problem details body with the same type URIs and titles as the
// API's (api/problem.go), which this package cannot import (the API imports it).
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Phase and Checks are extension members (RFC 9457 §3.2) for /readyz.
	Phase  string           `json:"phase,omitempty"`
	Checks map[string]Check `json:"checks,omitempty"`
}

func unavailable(detail string) problem {
	return problem{Type: "https://tickgate.dev/problems/unavailable", Title: http.StatusText(http.StatusServiceUnavailable),
		Status: http.StatusServiceUnavailable, Detail: detail}
}

// retryAfter is what a refused request is told to wait: about one backoff step, so clients
// neither hammer a starting process nor wait long after it is up.
const retryAfter = "2"

func writeJSON(w http.ResponseWriter, r *http.Request, contentType string, status int, body any) {
	b, err := json.Marshal(body)
	if err != nil {
		// Only plain strings, bools and times are marshalled: this cannot happen.
		http.Error(w, "encode: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", contentType)
	// A probe's answer is about now; a cached one would hide a recovery or an outage.
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(append(b, '\n'))
	}
}

// ServeHTTP answers /readyz: 200 {"status":"ready","phase":…,"checks":{…}} when every
// dependency is ready, otherwise 503 problem+json whose detail names each failing
// dependency and its error, with the same phase and checks as extension members.
func (t *Tracker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rep := t.Report(r.Context())
	if rep.Ready {
		writeJSON(w, r, "application/json", http.StatusOK,
			map[string]any{"status": "ready", "phase": rep.Phase, "checks": rep.Checks})
		return
	}
	p := unavailable(rep.Summary())
	p.Phase, p.Checks = rep.Phase, rep.Checks
	refuse(w, r, p)
}

// ServeStatus answers /readyz with the status alone, for callers who may not see why a
// dependency fails (an error names its host and port): 200 {"status":"ready"}, or 503
// problem+json "not ready" with Retry-After. Its callers share the rounds of probes
// (sharedReady), so anyone may ask it as often as they like.
func (t *Tracker) ServeStatus(w http.ResponseWriter, r *http.Request) {
	if t.sharedReady(r.Context()) {
		writeJSON(w, r, "application/json", http.StatusOK, map[string]any{"status": "ready"})
		return
	}
	refuse(w, r, unavailable("not ready"))
}

// sharedReady is the verdict of the last round of probes if it ended less than StatusReuse
// ago, else of the round running now, else of a new round, which the callers arriving
// meanwhile wait for. (Monotonic time: Now may be a test's clock.)
func (t *Tracker) sharedReady(ctx context.Context) bool {
	t.statusMu.Lock()
	if !t.statusAt.IsZero() && time.Since(t.statusAt) < t.StatusReuse {
		defer t.statusMu.Unlock()
		return t.statusReady
	}
	if running := t.statusRunning; running != nil {
		t.statusMu.Unlock()
		select {
		case <-running:
		case <-ctx.Done():
			return false
		}
		t.statusMu.Lock()
		defer t.statusMu.Unlock()
		return t.statusReady
	}
	running := make(chan struct{})
	t.statusRunning = running
	t.statusMu.Unlock()
	// The round is everyone's: a caller that leaves does not cut it short.
	ready := t.Report(context.WithoutCancel(ctx)).Ready
	t.statusMu.Lock()
	t.statusReady, t.statusAt, t.statusRunning = ready, time.Now(), nil
	t.statusMu.Unlock()
	close(running)
	return ready
}

// refuse answers 503 problem+json with Retry-After.
func refuse(w http.ResponseWriter, r *http.Request, p problem) {
	w.Header().Set("Retry-After", retryAfter)
	writeJSON(w, r, "application/problem+json", http.StatusServiceUnavailable, p)
}

// Healthz answers liveness: the process runs and serves HTTP, whatever its dependencies do
// (restarting a process because PostgreSQL is down would not bring PostgreSQL back).
func Healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, r, "application/json", http.StatusOK, map[string]string{"status": "ok"})
}

// NotReady is the whole HTTP surface of an API process that is still connecting: /healthz
// and /readyz answer, every other request is refused with 503 problem+json and
// Retry-After. Its /readyz gives the status alone (ServeStatus): no token can be checked
// yet, and the dependencies' errors stay in the process's log.
func (t *Tracker) NotReady() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", Healthz)
	mux.HandleFunc("GET /readyz", t.ServeStatus)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// No live probes: this only reports what the connecting loop last saw, and the
		// error texts stay in the log (this route may be anything a client asked for).
		detail := "not ready: starting"
		if waiting := t.report().Failing(); len(waiting) > 0 {
			detail = "not ready: waiting for " + strings.Join(waiting, ", ") + " (the log says why)"
		}
		refuse(w, r, unavailable(detail))
	})
	return mux
}

// Switch is an http.Handler whose target can be replaced while it serves: a process listens
// with its not-ready surface at once and swaps in its real application once connected.
type Switch struct {
	h atomic.Pointer[http.Handler]
}

// Set makes h serve every request from now on.
func (s *Switch) Set(h http.Handler) { s.h.Store(&h) }

// ServeHTTP serves with the current handler; before any Set, everything is 503.
func (s *Switch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := s.h.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	refuse(w, r, unavailable("not ready: starting"))
}
