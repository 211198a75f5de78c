package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
)

// The engine's health, read from PostgreSQL at scrape time (store.ReadEngineHealth): the
// series the shipped alerts watch beside the others (deploy/observability; the runbook of
// each alert is in docs/operations.md#alerts).
var (
	descWorkersAlive = prometheus.NewDesc("tickgate_workers_alive",
		"Worker processes alive: beating in worker_liveness within the liveness grace (15 s).", nil, nil)
	descPlannerLag = prometheus.NewDesc("tickgate_schedule_planner_lag_seconds",
		"How long the oldest schedule at rest whose plan_at has come has waited for a planner round (0: none waits).", nil, nil)
	descReleaseLag = prometheus.NewDesc("tickgate_schedule_release_lag_seconds",
		"How long the oldest armed fire whose time has come has waited for its release (0: none waits).", nil, nil)
	descDeadLetter = prometheus.NewDesc("tickgate_schedule_dead_letter_runs",
		"Runs in the dead letter: the FAILED runs of http and workflow actions (a redrive takes one out).", nil, nil)
	descDeviceTimeouts = prometheus.NewDesc("tickgate_device_timeouts_total",
		"Device execution attempts that timed out (TIMEOUT events).", nil, nil)
	descDevices = prometheus.NewDesc("tickgate_devices",
		"Devices by status (online, offline, error).", []string{"status"}, nil)
	descRolloutsPaused = prometheus.NewDesc("tickgate_rollouts_paused",
		"Paused rollouts by cause: health (their wave's health checks failed), tasks (their wave's tasks failed), other (an operator or an abort threshold).",
		[]string{"cause"}, nil)
)

var healthDescs = []*prometheus.Desc{descWorkersAlive, descPlannerLag, descReleaseLag, descDeadLetter, descDeviceTimeouts,
	descDevices, descRolloutsPaused}

// health reports the engine's health figures.
func (c *SQLCollector) health(ctx context.Context, ch chan<- prometheus.Metric) error {
	h, err := c.Store.ReadEngineHealth(ctx)
	if err != nil {
		return err
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descWorkersAlive, float64(h.WorkersAlive))
	gauge(descPlannerLag, h.PlannerLag.Seconds())
	gauge(descReleaseLag, h.ReleaseLag.Seconds())
	gauge(descDeadLetter, float64(h.DeadLetter))
	ch <- prometheus.MustNewConstMetric(descDeviceTimeouts, prometheus.CounterValue, float64(h.DeviceTimeouts))
	for _, d := range h.Devices {
		gauge(descDevices, float64(d.N), d.Status)
	}
	for _, p := range h.PausedRollouts {
		gauge(descRolloutsPaused, float64(p.N), p.Status)
	}
	return nil
}
