// Package config reads tickgate's settings from the environment (docs/operations.md,
// "Configuration").
package config

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/outbound"
	"github.com/tickgate/tickgate/internal/readiness"
	"go.temporal.io/sdk/log"

	"github.com/tickgate/tickgate/metrics"
)

// Config is every setting a tickgate process reads.
type Config struct {
	DatabaseURL       string
	TemporalAddress   string
	TemporalNamespace string
	TaskQueue         string
	HTTPAddr          string
	// DeviceTimeout and DeviceMaxAttempts are the device settings configured
	// (TICKGATE_DEVICE_TIMEOUT, TICKGATE_DEVICE_MAX_ATTEMPTS); zero when unset. A device
	// task takes DeviceSettings, which fills them with their defaults.
	DeviceTimeout     time.Duration
	DeviceMaxAttempts int
	// Remote clusters (Temporal Cloud): mTLS files or an API key.
	TemporalTLSCert string
	TemporalTLSKey  string
	TemporalAPIKey  string
	// SQLTargets maps a rollout's target database name to the DSN the sql executor uses
	// (TICKGATE_SQL_TARGETS, a JSON object). DSNs never leave the worker.
	SQLTargets map[string]string
	// HTTPAllow lists the non-public addresses an HTTP action (and a health check) may
	// reach (TICKGATE_HTTP_ALLOW; internal/outbound).
	HTTPAllow outbound.Rule
	// WorkflowTaskQueues, when set (TICKGATE_WORKFLOW_TASK_QUEUES, comma-separated), are
	// the only task queues a schedule's workflow action may start workflows on (tickgate's
	// own are refused whatever it says).
	WorkflowTaskQueues []string
	// HTTPHostLimits are the limits of http action deliveries per destination host
	// (TICKGATE_HTTP_HOST_LIMITS: host=in_flight/per_minute,…; default 100 in flight each),
	// kept by each worker process (activities.HostLimiter).
	HTTPHostLimits domain.HostLimits
	// WorkerMetricsAddr, when set, makes `tickgate worker` serve /metrics there
	// (TICKGATE_WORKER_METRICS_ADDR); the API serves the same figures on its own port.
	WorkerMetricsAddr string
	// WorkerPollers (TICKGATE_WORKER_POLLERS, default 8) is how many activity-task polls a
	// worker keeps open, and how many workflow-task polls it opens to begin with: those
	// then autoscale (worker.PollerOptions).
	WorkerPollers int
	// SchedulePlanners (TICKGATE_SCHEDULE_PLANNERS, default 2) is how many schedule planner
	// workflows the workers keep running (docs/schedules.md "The planner arms fires ahead"); they share the
	// schedules at rest through the rows' locks.
	SchedulePlanners int
	// SchedulesResident (TICKGATE_SCHEDULES_RESIDENT, default false) keeps each schedule's
	// workflow open between fires, so that the Temporal UI shows every schedule
	// (docs/schedules.md "Resident workflows"); by default a schedule at rest has none.
	SchedulesResident bool
	// TraceURLTemplate is the trace viewer's address of a trace, {trace_id} standing for the
	// id (TICKGATE_TRACE_URL_TEMPLATE, e.g. http://127.0.0.1:16686/trace/{trace_id}): the
	// dashboard links each run that recorded a trace to it. Tracing itself is turned on by
	// the standard OTEL_* variables (internal/telemetry).
	TraceURLTemplate string

	// The API's HTTP server timeouts (TICKGATE_API_READ_TIMEOUT, TICKGATE_API_WRITE_TIMEOUT,
	// TICKGATE_API_IDLE_TIMEOUT; zero: api.DefaultHTTPTimeouts). The worker's metrics port
	// uses them too.
	APIReadTimeout, APIWriteTimeout, APIIdleTimeout time.Duration
	// APIAuthFailures is how many failed authentications a minute one client address may
	// make before the API answers it 429 (TICKGATE_API_AUTH_FAILURES; 0: the API's default,
	// negative: no limit).
	APIAuthFailures int
	// APITrustedProxies are the proxies in front of the API whose X-Forwarded-For names the
	// client (TICKGATE_API_TRUSTED_PROXIES, comma-separated addresses or CIDR prefixes).
	APITrustedProxies []netip.Prefix
	// SQLStatementTimeout and SQLLockTimeout are set server-side (SET LOCAL) in every sql
	// executor transaction (TICKGATE_SQL_STATEMENT_TIMEOUT, TICKGATE_SQL_LOCK_TIMEOUT); a
	// wave's SQL probe runs under its check's timeout and at most the same lock timeout.
	SQLStatementTimeout, SQLLockTimeout time.Duration
	// SQLProbeTargets maps a target database name to a read-only DSN for the waves' SQL
	// health probes (TICKGATE_SQL_PROBE_TARGETS, a JSON object); a database without one is
	// probed through its SQLTargets DSN, in a read-only transaction.
	SQLProbeTargets map[string]string
}

// DefaultSchedulePlanners is how many schedule planners run unless configured: two, so
// that one worker's death never stops planning while its planner moves.
const DefaultSchedulePlanners = 2

// DefaultWorkerPollers is twice the task queue partitions a Temporal server has by default
// (4): the workflow polls a worker opens to begin with (they scale from there, see
// worker.PollerOptions) and its activity pollers. The SDK's default of 2 pollers, split
// between the sticky and the normal queue, left partitions unpolled for a long-poll's
// minute: in the chaos run a backlog of 109 workflow tasks waited there with two idle workers.
const DefaultWorkerPollers = 8

// FromEnv reads the environment, applying the defaults docs/operations.md lists.
func FromEnv() (Config, error) {
	c := Config{
		DatabaseURL:       os.Getenv("DATABASE_URL"),
		TemporalAddress:   getenv("TEMPORAL_ADDRESS", "127.0.0.1:7233"),
		TemporalNamespace: getenv("TEMPORAL_NAMESPACE", "default"),
		TaskQueue:         getenv("TICKGATE_TASK_QUEUE", domain.DefaultTaskQueue),
		HTTPAddr:          getenv("TICKGATE_HTTP_ADDR", "127.0.0.1:8080"),
		TemporalTLSCert:   os.Getenv("TEMPORAL_TLS_CERT"),
		TemporalTLSKey:    os.Getenv("TEMPORAL_TLS_KEY"),
		TemporalAPIKey:    os.Getenv("TEMPORAL_API_KEY"),
		WorkerMetricsAddr: os.Getenv("TICKGATE_WORKER_METRICS_ADDR"),
		WorkerPollers:     DefaultWorkerPollers,
		SchedulePlanners:  DefaultSchedulePlanners,
		TraceURLTemplate:  os.Getenv("TICKGATE_TRACE_URL_TEMPLATE"),
	}
	// The device settings follow the rule every taker of them applies (domain.DeviceSettings).
	if v := os.Getenv("TICKGATE_DEVICE_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return c, fmt.Errorf("TICKGATE_DEVICE_TIMEOUT: want a duration such as 20m, got %q", v)
		}
		if err := domain.ValidateDeviceTimeout(d); err != nil {
			return c, fmt.Errorf("TICKGATE_DEVICE_TIMEOUT: %w", err)
		}
		c.DeviceTimeout = d
	}
	if v := os.Getenv("TICKGATE_DEVICE_MAX_ATTEMPTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return c, fmt.Errorf("TICKGATE_DEVICE_MAX_ATTEMPTS: want an integer such as 3, got %q", v)
		}
		if err := domain.ValidateDeviceMaxAttempts(n); err != nil {
			return c, fmt.Errorf("TICKGATE_DEVICE_MAX_ATTEMPTS: %w", err)
		}
		c.DeviceMaxAttempts = n
	}
	if v := os.Getenv("TICKGATE_WORKER_POLLERS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 2 {
			return c, fmt.Errorf("TICKGATE_WORKER_POLLERS: want an integer of at least 2, got %q", v)
		}
		c.WorkerPollers = n
	}
	if v := os.Getenv("TICKGATE_SCHEDULE_PLANNERS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 64 {
			return c, fmt.Errorf("TICKGATE_SCHEDULE_PLANNERS: want an integer from 1 to 64, got %q", v)
		}
		c.SchedulePlanners = n
	}
	if v := os.Getenv("TICKGATE_SCHEDULES_RESIDENT"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return c, fmt.Errorf("TICKGATE_SCHEDULES_RESIDENT: want true or false, got %q", v)
		}
		c.SchedulesResident = b
	}
	if v := c.TraceURLTemplate; v != "" && !strings.Contains(v, "{trace_id}") {
		return c, fmt.Errorf("TICKGATE_TRACE_URL_TEMPLATE: want an address with {trace_id} in it, got %q", v)
	}
	allow, err := outbound.FromEnv()
	if err != nil {
		return c, err
	}
	c.HTTPAllow = allow
	for _, q := range strings.Split(os.Getenv("TICKGATE_WORKFLOW_TASK_QUEUES"), ",") {
		if q = strings.TrimSpace(q); q != "" {
			c.WorkflowTaskQueues = append(c.WorkflowTaskQueues, q)
		}
	}
	if c.HTTPHostLimits, err = domain.ParseHostLimits(os.Getenv("TICKGATE_HTTP_HOST_LIMITS")); err != nil {
		return c, fmt.Errorf("TICKGATE_HTTP_HOST_LIMITS: %w", err)
	}
	if v := os.Getenv("TICKGATE_SQL_TARGETS"); v != "" {
		if err := json.Unmarshal([]byte(v), &c.SQLTargets); err != nil {
			return c, fmt.Errorf("TICKGATE_SQL_TARGETS: want a JSON object {\"database\": \"dsn\"}: %w", err)
		}
	}
	if err := c.readBounds(); err != nil {
		return c, err
	}
	return c, nil
}

// DeviceSettings are the attempt limit and device timeout a device task takes when it
// becomes active, as configured; the dispatcher's worker and the API process's engine take
// the same. A field left zero (a Config built by hand, not by FromEnv) takes its default.
func (c Config) DeviceSettings() domain.DeviceSettings {
	return domain.DeviceSettings{MaxAttempts: c.DeviceMaxAttempts, Timeout: c.DeviceTimeout}.OrDefaults()
}

func getenv(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// The Temporal client's gRPC keepalive: a ping after TemporalKeepAliveTime without
// traffic, the connection dropped and dialled again when no answer comes within
// TemporalKeepAliveTimeout. A connection into a partition (packets dropped, no reset)
// otherwise holds the worker's long polls, and the calls queued behind them, until the
// SDK's defaults (30 s + 15 s) give up; the server refuses pings more often than every 10 s
// (its keepalive enforcement), so 15 s is the shortest safe period.
const (
	TemporalKeepAliveTime    = 15 * time.Second
	TemporalKeepAliveTimeout = 5 * time.Second
)

// ClientOptions are the Temporal client options for this configuration.
func (c Config) ClientOptions() (client.Options, error) {
	opts := client.Options{
		HostPort: c.TemporalAddress, Namespace: c.TemporalNamespace,
		// The SDK's default logger prints at debug level; slog's default is info.
		Logger: log.NewStructuredLogger(slog.Default()),
		// The SDK's own worker metrics (polls, task latencies, slots) go to /metrics.
		MetricsHandler: metrics.TemporalHandler(),
		ConnectionOptions: client.ConnectionOptions{
			KeepAliveTime: TemporalKeepAliveTime, KeepAliveTimeout: TemporalKeepAliveTimeout,
		},
	}
	if c.TemporalTLSCert != "" || c.TemporalTLSKey != "" {
		cert, err := tls.LoadX509KeyPair(c.TemporalTLSCert, c.TemporalTLSKey)
		if err != nil {
			return opts, fmt.Errorf("load TEMPORAL_TLS_CERT/KEY: %w", err)
		}
		opts.ConnectionOptions.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if c.TemporalAPIKey != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(c.TemporalAPIKey)
		if opts.ConnectionOptions.TLS == nil {
			opts.ConnectionOptions.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
		}
	}
	return opts, nil
}

// DialTemporal connects to Temporal, retrying with backoff until ctx ends, so a process
// started before the server is reachable waits for it.
func (c Config) DialTemporal(ctx context.Context) (client.Client, error) {
	opts, err := c.ClientOptions()
	if err != nil {
		return nil, err
	}
	var cl client.Client
	err = readiness.Retry(ctx, readiness.DefaultBackoff, func(ctx context.Context) error {
		cl, err = client.DialContext(ctx, opts)
		return err
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("connect to temporal at %s: %w", c.TemporalAddress, err)
	}
	return cl, nil
}
