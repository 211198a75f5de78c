package metrics

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tickgate/tickgate/store"
)

// LatenessBuckets are the fire-lateness histogram's upper bounds in seconds.
var LatenessBuckets = []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// LatenessWindow is how many of the latest fires the lateness histogram covers: a scrape
// reads them backwards along the primary key instead of scanning every run ever recorded
// (200 schedules a second add 17 million rows a day). The worker's in-process
// tickgate_schedule_fire_lateness_observed_seconds is the cumulative figure.
const LatenessWindow = 10000

// RefillBuckets are the refill-latency histogram's upper bounds in seconds.
var RefillBuckets = []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

var (
	descLateness = prometheus.NewDesc("tickgate_schedule_fire_lateness_seconds",
		fmt.Sprintf("Lateness of the last %d scheduled and catch-up fires (fired_at - scheduled_at), from schedule_runs.", LatenessWindow), nil, nil)
	descScheduleRuns = prometheus.NewDesc("tickgate_schedule_runs",
		"Schedule runs by status (SKIPPED and MISSED included).", []string{"status"}, nil)
	descTaskRuns = prometheus.NewDesc("tickgate_task_runs",
		"Rollout task runs by status.", []string{"status"}, nil)
	descDeviceTasks = prometheus.NewDesc("tickgate_device_tasks",
		"Device tasks by status.", []string{"status"}, nil)
	descSlotsBusy = prometheus.NewDesc("tickgate_device_slots_busy",
		"Device slots in use per PC (task_devices holding a slot).", []string{"pc"}, nil)
	descSlotsTarget = prometheus.NewDesc("tickgate_device_slots_target",
		"Device slots a PC should keep busy: min(capacity, eligible devices).", []string{"pc"}, nil)
	descRefill = prometheus.NewDesc("tickgate_device_refill_latency_seconds",
		fmt.Sprintf("Time from a PC's slot freeing to the next execution created on it (last %d executions).", RefillWindow), nil, nil)
	descScrapeErrors = prometheus.NewDesc("tickgate_metrics_sql_errors",
		"1 when a SQL query of this scrape failed.", []string{"query"}, nil)
)

// SQLCollector reads the engines' figures from PostgreSQL (through store) at scrape time.
type SQLCollector struct {
	Store   *store.Store
	Timeout time.Duration
}

// Describe implements prometheus.Collector.
func (c *SQLCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLateness, descScheduleRuns, descTaskRuns, descDeviceTasks,
		descSlotsBusy, descSlotsTarget, descRefill, descScrapeErrors} {
		ch <- d
	}
	for _, d := range healthDescs {
		ch <- d
	}
}

// RefillWindow is how many of the latest device executions the refill histogram covers.
const RefillWindow = 1000

// Collect implements prometheus.Collector.
func (c *SQLCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := scrapeContext(c.Timeout)
	defer cancel()
	report := func(query string, err error) {
		v := 0.0
		if err != nil {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(descScrapeErrors, prometheus.GaugeValue, v, query)
	}
	report("lateness", histogram(ch, descLateness, LatenessBuckets, func() ([]store.LatencyBucket, error) {
		return c.Store.RecentFireLateness(ctx, LatenessWindow, LatenessBuckets)
	}))
	report("refill", histogram(ch, descRefill, RefillBuckets, func() ([]store.LatencyBucket, error) {
		return c.Store.RecentRefillLatency(ctx, RefillWindow, RefillBuckets)
	}))
	report("schedule_runs", c.counts(ctx, ch, descScheduleRuns, store.CountScheduleRuns))
	report("task_runs", c.counts(ctx, ch, descTaskRuns, store.CountTaskRuns))
	report("tasks", c.counts(ctx, ch, descDeviceTasks, store.CountDeviceTasks))
	report("slots", c.slots(ctx, ch))
	report("health", c.health(ctx, ch))
}

func (c *SQLCollector) counts(ctx context.Context, ch chan<- prometheus.Metric, desc *prometheus.Desc, table string) error {
	counts, err := c.Store.StatusCounts(ctx, table)
	if err != nil {
		return err
	}
	for _, n := range counts {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(n.N), n.Status)
	}
	return nil
}

func (c *SQLCollector) slots(ctx context.Context, ch chan<- prometheus.Metric) error {
	pcs, err := c.Store.PCSlotCounts(ctx)
	if err != nil {
		return err
	}
	for _, p := range pcs {
		ch <- prometheus.MustNewConstMetric(descSlotsBusy, prometheus.GaugeValue, float64(p.Running), p.PC)
		ch <- prometheus.MustNewConstMetric(descSlotsTarget, prometheus.GaugeValue, float64(p.Target), p.PC)
	}
	return nil
}

// histogram emits the buckets read as a Prometheus histogram with "le" (less-or-equal)
// buckets.
func histogram(ch chan<- prometheus.Metric, desc *prometheus.Desc, bounds []float64, read func() ([]store.LatencyBucket, error)) error {
	rows, err := read()
	if err != nil {
		return err
	}
	counts := make([]BucketCount, len(rows))
	for i, r := range rows {
		counts[i] = BucketCount{Above: r.Above, Count: r.Count, Sum: r.Sum}
	}
	count, sum, buckets := cumulative(bounds, counts)
	ch <- prometheus.MustNewConstHistogram(desc, count, sum, buckets)
	return nil
}
