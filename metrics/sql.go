package metrics

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
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
		"Time from a PC's slot freeing to the next execution created on it (last 1000 refills).", nil, nil)
	descScrapeErrors = prometheus.NewDesc("tickgate_metrics_sql_errors",
		"1 when a SQL query of this scrape failed.", []string{"query"}, nil)
)

// SQLCollector reads the engines' figures from PostgreSQL at scrape time.
type SQLCollector struct {
	Pool    *pgxpool.Pool
	Timeout time.Duration
}

// Describe implements prometheus.Collector.
func (c *SQLCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLateness, descScheduleRuns, descTaskRuns, descDeviceTasks,
		descSlotsBusy, descSlotsTarget, descRefill, descScrapeErrors} {
		ch <- d
	}
}

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
	report("lateness", c.histogram(ctx, ch, descLateness, LatenessBuckets,
		fmt.Sprintf(`SELECT date_part('epoch', fired_at - scheduled_at) FROM (
		   SELECT fired_at, scheduled_at FROM schedule_runs
		   WHERE fired_at IS NOT NULL AND NOT armed AND trigger IN ('scheduled', 'catchup')
		   ORDER BY id DESC LIMIT %d) AS recent`, LatenessWindow)))
	report("refill", c.histogram(ctx, ch, descRefill, RefillBuckets,
		`SELECT date_part('epoch', td.created_at - f.freed)
		 FROM (SELECT * FROM task_devices ORDER BY id DESC LIMIT 1000) td
		 CROSS JOIN LATERAL (SELECT max(p.completed_at) AS freed FROM task_devices p
		                     WHERE p.pc_id = td.pc_id AND p.id < td.id
		                       AND p.completed_at <= td.created_at
		                       AND p.completed_at > td.created_at - interval '5 minutes') f
		 WHERE f.freed IS NOT NULL`))
	report("schedule_runs", c.counts(ctx, ch, descScheduleRuns, `SELECT status, count(*) FROM schedule_runs WHERE NOT armed GROUP BY status`))
	report("task_runs", c.counts(ctx, ch, descTaskRuns, `SELECT status, count(*) FROM task_runs GROUP BY status`))
	report("tasks", c.counts(ctx, ch, descDeviceTasks, `SELECT status, count(*) FROM tasks GROUP BY status`))
	report("slots", c.slots(ctx, ch))
}

func (c *SQLCollector) counts(ctx context.Context, ch chan<- prometheus.Metric, desc *prometheus.Desc, query string) error {
	rows, err := c.Pool.Query(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var label string
		var n int64
		if err := rows.Scan(&label, &n); err != nil {
			return err
		}
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(n), label)
	}
	return rows.Err()
}

func (c *SQLCollector) slots(ctx context.Context, ch chan<- prometheus.Metric) error {
	rows, err := c.Pool.Query(ctx, `SELECT pc_name, running, target FROM pc_device_summary`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var pc string
		var running, target int64
		if err := rows.Scan(&pc, &running, &target); err != nil {
			return err
		}
		ch <- prometheus.MustNewConstMetric(descSlotsBusy, prometheus.GaugeValue, float64(running), pc)
		ch <- prometheus.MustNewConstMetric(descSlotsTarget, prometheus.GaugeValue, float64(target), pc)
	}
	return rows.Err()
}

// histogram buckets one column of seconds in SQL (one width_bucket per row, grouped) and
// emits it as a Prometheus histogram with "le" (less-or-equal) buckets.
func (c *SQLCollector) histogram(ctx context.Context, ch chan<- prometheus.Metric, desc *prometheus.Desc, bounds []float64, values string) error {
	// width_bucket(-v, ascending negated bounds) is the number of bounds >= v.
	neg := make([]float64, len(bounds))
	for i, b := range bounds {
		neg[len(bounds)-1-i] = -b
	}
	rows, err := c.Pool.Query(ctx, fmt.Sprintf(`SELECT width_bucket(-v, $1::float8[]), count(*), COALESCE(sum(GREATEST(v, 0)), 0)::float8
		FROM (%s) AS s(v) WHERE v IS NOT NULL GROUP BY 1`, values), neg)
	if err != nil {
		return err
	}
	defer rows.Close()
	var counts []BucketCount
	for rows.Next() {
		var atLeast int
		var b BucketCount
		if err := rows.Scan(&atLeast, &b.Count, &b.Sum); err != nil {
			return err
		}
		// These values are <= the largest atLeast bounds: above the others.
		b.Above = len(bounds) - atLeast
		counts = append(counts, b)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	count, sum, buckets := cumulative(bounds, counts)
	ch <- prometheus.MustNewConstHistogram(desc, count, sum, buckets)
	return nil
}
