// Package metrics holds tickgate's Prometheus collectors, registered on the default
// registry that /metrics serves.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Schedule metrics.
var (
	// FireLateness is fired_at − nominal tick for every fire that ran.
	FireLateness = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "tickgate_schedule_fire_lateness_seconds",
		Help:    "How late a schedule fire ran after its nominal tick (jitter included).",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 3600},
	}, []string{"trigger"})
	// Ticks counts recorded ticks by outcome: fired, skipped, missed.
	Ticks = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "tickgate_schedule_ticks_total",
		Help: "Schedule ticks recorded, by outcome (fired, skipped, missed) and trigger.",
	}, []string{"outcome", "trigger"})
)
