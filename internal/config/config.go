// Package config reads tickgate's settings from the environment (docs/operations.md,
// "Configuration").
package config

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log/slog"
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
	// workflows the workers keep running (docs/schedules.md "How it runs"); they share the
	// schedules at rest through the rows' locks.
	SchedulePlanners int
	// TraceURLTemplate is the trace viewer's address of a trace, {trace_id} standing for the
	// id (TICKGATE_TRACE_URL_TEMPLATE, e.g. http://127.0.0.1:16686/trace/{trace_id}): the
	// dashboard links each run that recorded a trace to it. Tracing itself is turned on by
	// the standard OTEL_* variables (internal/telemetry).
	TraceURLTemplate string
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
		TaskQueue:         getenv("TICKGATE_TASK_QUEUE", "tickgate"),
		HTTPAddr:          getenv("TICKGATE_HTTP_ADDR", "127.0.0.1:8080"),
		DeviceTimeout:     domain.DefaultDeviceTimeout,
		DeviceMaxAttempts: domain.DefaultDeviceMaxAttempts,
		TemporalTLSCert:   os.Getenv("TEMPORAL_TLS_CERT"),
		TemporalTLSKey:    os.Getenv("TEMPORAL_TLS_KEY"),
		TemporalAPIKey:    os.Getenv("TEMPORAL_API_KEY"),
		WorkerMetricsAddr: os.Getenv("TICKGATE_WORKER_METRICS_ADDR"),
		WorkerPollers:     DefaultWorkerPollers,
		SchedulePlanners:  DefaultSchedulePlanners,
		TraceURLTemplate:  os.Getenv("TICKGATE_TRACE_URL_TEMPLATE"),
	}
	if v := os.Getenv("TICKGATE_DEVICE_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return c, fmt.Errorf("TICKGATE_DEVICE_TIMEOUT: want a positive duration such as 20m, got %q", v)
		}
		c.DeviceTimeout = d
	}
	if v := os.Getenv("TICKGATE_DEVICE_MAX_ATTEMPTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return c, fmt.Errorf("TICKGATE_DEVICE_MAX_ATTEMPTS: want a positive integer, got %q", v)
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
	return c, nil
}

func getenv(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// ClientOptions are the Temporal client options for this configuration.
func (c Config) ClientOptions() (client.Options, error) {
	opts := client.Options{
		HostPort: c.TemporalAddress, Namespace: c.TemporalNamespace,
		// The SDK's default logger prints at debug level; slog's default is info.
		Logger: log.NewStructuredLogger(slog.Default()),
		// The SDK's own worker metrics (polls, task latencies, slots) go to /metrics.
		MetricsHandler: metrics.TemporalHandler(),
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
