package store

import (
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// How the pool lives with a network that fails: a link that drops packets without a reset
// (a partition, a dead middlebox) leaves a connection that looks open and never answers,
// and only a deadline ends a wait on it. Each setting below is one such deadline; the
// chaos run (make chaos, its network faults) is what they were sized against, and
// docs/production.md lists them. A DATABASE_URL that sets a libpq parameter of its own
// (connect_timeout, or a runtime parameter below) keeps it.
const (
	// ConnectTimeout bounds opening a connection: TCP, TLS and the startup exchange. Without
	// it a connection opened into a partition waits for as long as its caller's context,
	// which for a background loop is forever.
	ConnectTimeout = 10 * time.Second
	// PingTimeout bounds the liveness ping the pool sends on a connection idle for more than
	// a second before handing it out: a connection cut while idle is dropped after this
	// rather than handed to a statement that would hang on it.
	PingTimeout = 5 * time.Second
	// HealthCheckPeriod is how often the pool checks its idle connections (closing those
	// past their lifetime and refilling its minimum).
	HealthCheckPeriod = 15 * time.Second
	// The client's TCP keepalive: after KeepAliveIdle without traffic, a probe every
	// KeepAliveInterval, KeepAliveCount unanswered probes closing the connection. It finds
	// a peer that vanished (a host lost, a NAT entry dropped) within about 30 s.
	KeepAliveIdle     = 15 * time.Second
	KeepAliveInterval = 5 * time.Second
	KeepAliveCount    = 3
)

// serverSideTimeouts are runtime parameters PostgreSQL applies to tickgate's sessions, for
// the other side of a cut link: a session whose client was cut off mid-transaction holds
// its row and advisory locks until the server gives up on it, and every other process
// waits behind those locks. idle_in_transaction_session_timeout ends such a transaction
// (no tickgate transaction waits on its client that long); the keepalives let the server
// notice a vanished client as the client notices a vanished server.
var serverSideTimeouts = map[string]string{
	"idle_in_transaction_session_timeout": "30s",
	"tcp_keepalives_idle":                 strconv.Itoa(int(KeepAliveIdle / time.Second)),
	"tcp_keepalives_interval":             strconv.Itoa(int(KeepAliveInterval / time.Second)),
	"tcp_keepalives_count":                strconv.Itoa(KeepAliveCount),
}

// withNetworkTimeouts applies the settings above to cfg, leaving those the URL set.
func withNetworkTimeouts(cfg *pgxpool.Config, urlSet func(key string) bool) {
	cc := cfg.ConnConfig
	if !urlSet("connect_timeout") {
		cc.ConnectTimeout = ConnectTimeout
	}
	dialer := &net.Dialer{
		Timeout: cc.ConnectTimeout,
		KeepAliveConfig: net.KeepAliveConfig{
			Enable: true, Idle: KeepAliveIdle, Interval: KeepAliveInterval, Count: KeepAliveCount,
		},
	}
	cc.DialFunc = dialer.DialContext
	if cc.RuntimeParams == nil {
		cc.RuntimeParams = map[string]string{}
	}
	for k, v := range serverSideTimeouts {
		if _, ok := cc.RuntimeParams[k]; !ok && !urlSet(k) {
			cc.RuntimeParams[k] = v
		}
	}
	if !urlSet("pool_ping_timeout") {
		cfg.PingTimeout = PingTimeout
	}
	if !urlSet("pool_health_check_period") {
		cfg.HealthCheckPeriod = HealthCheckPeriod
	}
}

// urlSets reports whether a connection string — a postgres:// URL or libpq's key=value
// form — sets key.
func urlSets(connString, key string) bool {
	if strings.HasPrefix(connString, "postgres://") || strings.HasPrefix(connString, "postgresql://") {
		u, err := url.Parse(connString)
		return err == nil && u.Query().Has(key)
	}
	for _, field := range strings.Fields(connString) {
		if k, _, ok := strings.Cut(field, "="); ok && strings.TrimSpace(k) == key {
			return true
		}
	}
	return false
}
