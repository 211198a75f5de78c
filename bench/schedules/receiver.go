package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tickgate/tickgate/domain"
)

// receiver is the HTTP server both engines' http bursts post to, in the bench's process on
// 127.0.0.1: it notes when each request's handler is entered (its headers have arrived —
// the first the receiver's code sees of it) under the request's Idempotency-Key,
// "<schedule>@<nominal tick, RFC 3339>", and answers 200 at once. Each engine posts to a
// path of its own (receiverPath*), so the two are counted apart.
type receiver struct {
	srv *http.Server
	url string // http://127.0.0.1:<port>

	mu    sync.Mutex
	paths map[string]*arrivals
}

// arrivals are one path's requests by key.
type arrivals struct {
	first   map[string]time.Time // each key's first arrival
	count   map[string]int       // requests per key (more than one: a duplicate)
	perTick map[int64]int        // distinct keys per nominal tick (UnixNano)
	unkeyed int                  // requests without a readable key
}

// The paths the engines' http actions post to.
const (
	receiverPathTickgate    = "/tickgate"
	receiverPathTickgateBig = "/tickgate-big"
	receiverPathNative      = "/native"
)

// startReceiver listens on a free port of 127.0.0.1.
func startReceiver() (*receiver, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("receiver: %w", err)
	}
	r := &receiver{url: "http://" + l.Addr().String(), paths: map[string]*arrivals{}}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(l) }()
	return r, nil
}

func (r *receiver) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.srv.Shutdown(ctx)
}

// ServeHTTP notes the arrival before anything else, then reads the body and answers 200.
func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	r.note(req.URL.Path, req.Header.Get(domain.IdempotencyKeyHeader), at)
	_, _ = io.Copy(io.Discard, req.Body)
	w.WriteHeader(http.StatusOK)
}

func (r *receiver) note(path, key string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.paths[path]
	if a == nil {
		a = &arrivals{first: map[string]time.Time{}, count: map[string]int{}, perTick: map[int64]int{}}
		r.paths[path] = a
	}
	_, tick, err := parseTickKey(key)
	if err != nil {
		a.unkeyed++
		return
	}
	a.count[key]++
	if a.count[key] == 1 {
		a.first[key] = at
		a.perTick[tick.UnixNano()]++
	}
}

// parseTickKey reads "<schedule>@<tick>" (domain.TickKey's shape; the native workflow
// sends the same).
func parseTickKey(key string) (string, time.Time, error) {
	id, at, ok := strings.Cut(key, "@")
	if !ok || id == "" {
		return "", time.Time{}, errors.New("no <schedule>@<tick> key")
	}
	tick, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("key %q: %w", key, err)
	}
	return id, tick, nil
}

// received counts the distinct keys of tick that reached path.
func (r *receiver) received(path string, tick time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a := r.paths[path]; a != nil {
		return a.perTick[tick.UnixNano()]
	}
	return 0
}

// lateness is, for each schedule of ids and each tick, the first arrival of its key at path
// − the tick (+Inf for a key that never came).
func (r *receiver) lateness(path string, ids []string, ticks []time.Time) lateness {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := map[fireKey[string]]float64{}
	if a := r.paths[path]; a != nil {
		for key, at := range a.first {
			id, tick, err := parseTickKey(key)
			if err != nil {
				continue
			}
			got[fireKey[string]{id, tick.UnixNano()}] = float64(at.Sub(tick).Microseconds()) / 1000
		}
	}
	return collect(ids, ticks, got)
}

// duplicates counts the requests at path beyond the first of their key (every tick, warm-up
// ones too), and the requests that carried no readable key.
func (r *receiver) duplicates(path string) (dups, unkeyed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.paths[path]
	if a == nil {
		return 0, 0
	}
	for _, n := range a.count {
		dups += n - 1
	}
	return dups, a.unkeyed
}
