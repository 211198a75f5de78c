package domain

import (
	"fmt"
	"strconv"
	"strings"
)

// Limits on http action deliveries per destination host (docs/schedules.md "Kind to
// receivers"): at most MaxInFlight requests in flight to the host at once, and at most
// PerMinute sent in any minute (none when 0). They come from the operator
// (TICKGATE_HTTP_HOST_LIMITS, per host) and from an action's own limits (action.limits); the
// smaller of each applies.

// DefaultHostMaxInFlight is the in-flight limit of a host nothing else limits.
const DefaultHostMaxInFlight = 100

// Bounds of a host limit.
const (
	MaxHostInFlight  = 10000
	MaxHostPerMinute = 1_000_000
)

// HostLimit limits the deliveries to one host. A zero field sets no limit of its own.
type HostLimit struct {
	MaxInFlight int `json:"max_in_flight,omitempty"`
	PerMinute   int `json:"per_minute,omitempty"`
}

// check refuses limits out of bounds, naming field (the limit's place).
func (l HostLimit) check(field string) error {
	if l.MaxInFlight == 0 && l.PerMinute == 0 {
		return &FieldError{Field: field, Msg: "give max_in_flight, per_minute or both"}
	}
	if l.MaxInFlight < 0 || l.MaxInFlight > MaxHostInFlight {
		return &FieldError{Field: field + ".max_in_flight", Msg: fmt.Sprintf("want 1 to %d requests in flight, got %d", MaxHostInFlight, l.MaxInFlight)}
	}
	if l.PerMinute < 0 || l.PerMinute > MaxHostPerMinute {
		return &FieldError{Field: field + ".per_minute", Msg: fmt.Sprintf("want 1 to %d requests a minute, got %d", MaxHostPerMinute, l.PerMinute)}
	}
	return nil
}

// Narrowed is the limit that keeps to both l and o: the smaller of each field set.
func (l HostLimit) Narrowed(o HostLimit) HostLimit {
	return HostLimit{MaxInFlight: smallerSet(l.MaxInFlight, o.MaxInFlight), PerMinute: smallerSet(l.PerMinute, o.PerMinute)}
}

func smallerSet(a, b int) int {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

// HostLimits are the operator's limits: per host, and a default for every other host.
type HostLimits struct {
	Default HostLimit
	Hosts   map[string]HostLimit
}

// Of is the operator's limit of host, with DefaultHostMaxInFlight when none sets the number
// in flight.
func (h HostLimits) Of(host string) HostLimit {
	l, ok := h.Hosts[strings.ToLower(host)]
	if !ok {
		l = h.Default
	}
	if l.MaxInFlight == 0 {
		l.MaxInFlight = h.Default.MaxInFlight
	}
	if l.MaxInFlight == 0 {
		l.MaxInFlight = DefaultHostMaxInFlight
	}
	return l
}

// ParseHostLimits reads TICKGATE_HTTP_HOST_LIMITS: a comma-separated list of
// host=in_flight/per_minute, either part optional (api.example.com=50/600,
// hooks.example.org=10, slow.example.net=/60); the host * sets the default of every host the
// list does not name.
func ParseHostLimits(s string) (HostLimits, error) {
	out := HostLimits{Hosts: map[string]HostLimit{}}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		host, spec, ok := strings.Cut(item, "=")
		host = strings.ToLower(strings.TrimSpace(host))
		if !ok || host == "" || strings.ContainsAny(host, "/@ ") || strings.Count(host, ":") == 1 {
			// (A port is not part of the host its limits key; an IPv6 address has colons.)
			return HostLimits{}, fmt.Errorf("%q: want host=in_flight/per_minute, such as api.example.com=50/600 (a host name or address, no port)", item)
		}
		host = strings.Trim(host, "[]")
		inFlight, perMinute, _ := strings.Cut(strings.TrimSpace(spec), "/")
		var l HostLimit
		var err error
		if inFlight != "" {
			if l.MaxInFlight, err = strconv.Atoi(inFlight); err != nil {
				return HostLimits{}, fmt.Errorf("%q: in flight %q is not a number", item, inFlight)
			}
		}
		if perMinute != "" {
			if l.PerMinute, err = strconv.Atoi(perMinute); err != nil {
				return HostLimits{}, fmt.Errorf("%q: per minute %q is not a number", item, perMinute)
			}
		}
		if err := l.check(host); err != nil {
			return HostLimits{}, fmt.Errorf("%q: %w", item, err)
		}
		if _, dup := out.Hosts[host]; dup || (host == "*" && out.Default != (HostLimit{})) {
			return HostLimits{}, fmt.Errorf("%q: host %s is named twice", item, host)
		}
		if host == "*" {
			out.Default = l
			continue
		}
		out.Hosts[host] = l
	}
	return out, nil
}
