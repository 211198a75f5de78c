package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	zlog "github.com/rs/zerolog/log"
)

// The wire: a fault proxy on every link that crosses a process boundary of the run — each
// worker and API to PostgreSQL and to Temporal, each agent simulator to its API, and on the
// real server Temporal to its PostgreSQL. The proxies are Toxiproxy's, served from this
// process (its library, not its HTTP API), so that a fault is a toxic added to some links
// and removed later: latency with jitter, a blackhole (the proxy holds the connections and
// forwards nothing, no reset), reset connections (RST), a bandwidth limit. The run's own
// observers (the checker, the load's API client, the target worker) connect directly: what
// they see is the truth the faults are judged against.

// Link ends, as the links are named ("worker-1→postgres").
const (
	endPostgres = "postgres"
	endTemporal = "temporal"
)

// wireLink is one proxied link: from a process to a service.
type wireLink struct {
	from, to string
	proxy    *toxiproxy.Proxy
}

func (l *wireLink) name() string { return l.from + "→" + l.to }

// wire is the run's set of fault proxies.
type wire struct {
	srv *toxiproxy.ApiServer

	mu    sync.Mutex
	links []*wireLink
}

func newWire() *wire {
	// Some toxics log through zerolog's global logger, at trace level, to stderr: nothing
	// else here uses it.
	zlog.Logger = zerolog.Nop()
	return &wire{srv: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())}
}

// link starts a proxy from process from to service to at upstream and answers the address
// the process must dial instead.
func (w *wire) link(from, to, upstream string) (string, error) {
	p := toxiproxy.NewProxy(w.srv, from+"→"+to, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return "", fmt.Errorf("wire: proxy %s→%s: %w", from, to, err)
	}
	w.mu.Lock()
	w.links = append(w.links, &wireLink{from: from, to: to, proxy: p})
	w.mu.Unlock()
	return p.Listen, nil
}

// repoint sends the links to service to at a new upstream (PostgreSQL restarted on another
// port); the connections through them are closed.
func (w *wire) repoint(to, upstream string) error {
	var errs []error
	for _, l := range w.to(to) {
		if l.proxy.Upstream == upstream {
			continue
		}
		errs = append(errs, l.proxy.Update(&toxiproxy.Proxy{Listen: l.proxy.Listen, Upstream: upstream, Enabled: true}))
	}
	return errors.Join(errs...)
}

// close stops every proxy.
func (w *wire) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range w.links {
		l.proxy.Stop()
	}
}

// where answers the links that match keep.
func (w *wire) where(keep func(*wireLink) bool) []*wireLink {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*wireLink
	for _, l := range w.links {
		if keep(l) {
			out = append(out, l)
		}
	}
	return out
}

func (w *wire) all() []*wireLink { return w.where(func(*wireLink) bool { return true }) }

func (w *wire) to(service string) []*wireLink {
	return w.where(func(l *wireLink) bool { return l.to == service })
}

func (w *wire) between(from, to string) []*wireLink {
	return w.where(func(l *wireLink) bool { return l.from == from && l.to == to })
}

// toxic is one Toxiproxy toxic, applied to both directions of a link unless downstreamOnly.
type toxic struct {
	name           string
	kind           string // latency, timeout, reset_peer, bandwidth
	attributes     map[string]any
	downstreamOnly bool
}

func (t toxic) streams() []string {
	if t.downstreamOnly {
		return []string{"downstream"}
	}
	return []string{"downstream", "upstream"}
}

// apply adds t to every link in links.
func apply(links []*wireLink, t toxic) error {
	var errs []error
	for _, l := range links {
		for _, stream := range t.streams() {
			body, err := json.Marshal(map[string]any{"name": t.name + "-" + stream, "type": t.kind, "stream": stream, "toxicity": 1.0, "attributes": t.attributes})
			if err != nil {
				return err
			}
			if _, err := l.proxy.Toxics.AddToxicJson(strings.NewReader(string(body))); err != nil {
				errs = append(errs, fmt.Errorf("wire: %s on %s (%s): %w", t.kind, l.name(), stream, err))
			}
		}
	}
	return errors.Join(errs...)
}

// lift removes t from every link in links. Lifting a blackhole closes the connections it
// held (the bytes it dropped are gone, so they could not go on): the clients reconnect.
func lift(ctx context.Context, links []*wireLink, t toxic) error {
	var errs []error
	for _, l := range links {
		for _, stream := range t.streams() {
			if err := l.proxy.Toxics.RemoveToxic(ctx, t.name+"-"+stream); err != nil {
				errs = append(errs, fmt.Errorf("wire: lift %s on %s (%s): %w", t.kind, l.name(), stream, err))
			}
		}
	}
	return errors.Join(errs...)
}

// linkNames lists the links' names, for the report.
func linkNames(links []*wireLink) string {
	names := make([]string, len(links))
	for i, l := range links {
		names[i] = l.name()
	}
	return strings.Join(names, ", ")
}
