package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Per-schedule series, for the schedules that ask for them (a schedule's "metrics": true;
// docs/console.md#prometheus). Each such schedule adds one series per counter below and
// one histogram (len(LatenessBuckets)+1 buckets, a sum and a count): 4 + 15 = 19 series.
// At most MaxScheduleSeries schedules have them, so they add at most 1,900 series.

// MaxScheduleSeries caps the schedules with series of their own: the API refuses one more,
// and a scrape reports the first ones by name whatever the table holds.
const MaxScheduleSeries = 100

// ScheduleLatenessFires is how many of a schedule's latest scheduled and catch-up fires its
// lateness histogram covers.
const ScheduleLatenessFires = 1000

var (
	scheduleLabel         = []string{"schedule"}
	descScheduleFired     = prometheus.NewDesc("tickgate_schedule_fired_total", "Fires of the schedule (every trigger; failed runs included).", scheduleLabel, nil)
	descScheduleSkipped   = prometheus.NewDesc("tickgate_schedule_skipped_total", "Ticks of the schedule recorded SKIPPED.", scheduleLabel, nil)
	descScheduleMissed    = prometheus.NewDesc("tickgate_schedule_missed_total", "Ticks of the schedule recorded MISSED.", scheduleLabel, nil)
	descScheduleFailed    = prometheus.NewDesc("tickgate_schedule_failed_total", "Runs of the schedule that ended FAILED.", scheduleLabel, nil)
	descScheduleLateness  = prometheus.NewDesc("tickgate_schedule_lateness_seconds", "Lateness (fired_at - scheduled_at) of the schedule's last 1000 scheduled and catch-up fires.", scheduleLabel, nil)
	descScheduleScrapeErr = prometheus.NewDesc("tickgate_schedule_series_errors", "1 when reading the per-schedule series failed in this scrape.", nil, nil)
)

// BucketCount counts the values of one histogram bucket: those exceeding exactly Above of
// the ascending bounds (0: at most the first bound), with their sum.
type BucketCount struct {
	Above int
	Count int64
	Sum   float64
}

// ScheduleFigures are what one schedule's series report.
type ScheduleFigures struct {
	Name                           string
	Fired, Skipped, Missed, Failed int64
	Lateness                       []BucketCount
}

// ScheduleCollector reports the per-schedule series at scrape time from Read, which
// answers the figures of at most limit schedules (the first by name), the lateness of their
// last perSchedule fires bucketed by bounds.
type ScheduleCollector struct {
	Read    func(ctx context.Context, limit, perSchedule int, bounds []float64) ([]ScheduleFigures, error)
	Timeout time.Duration
}

// Describe implements prometheus.Collector.
func (c *ScheduleCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descScheduleFired, descScheduleSkipped, descScheduleMissed, descScheduleFailed,
		descScheduleLateness, descScheduleScrapeErr} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *ScheduleCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := scrapeContext(c.Timeout)
	defer cancel()
	figures, err := c.Read(ctx, MaxScheduleSeries, ScheduleLatenessFires, LatenessBuckets)
	failed := 0.0
	if err != nil {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(descScheduleScrapeErr, prometheus.GaugeValue, failed)
	for _, f := range figures {
		for _, m := range []struct {
			desc *prometheus.Desc
			v    int64
		}{{descScheduleFired, f.Fired}, {descScheduleSkipped, f.Skipped}, {descScheduleMissed, f.Missed}, {descScheduleFailed, f.Failed}} {
			ch <- prometheus.MustNewConstMetric(m.desc, prometheus.CounterValue, float64(m.v), f.Name)
		}
		count, sum, buckets := cumulative(LatenessBuckets, f.Lateness)
		ch <- prometheus.MustNewConstHistogram(descScheduleLateness, count, sum, buckets, f.Name)
	}
}

// scrapeContext bounds one scrape's SQL (timeout 0: 5 seconds).
func scrapeContext(timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	return context.WithTimeout(context.Background(), timeout)
}

// cumulative turns per-bucket counts into Prometheus's cumulative "le" buckets: a value
// above exactly k bounds is at most bounds[k], bounds[k+1], ….
func cumulative(bounds []float64, counts []BucketCount) (count uint64, sum float64, buckets map[float64]uint64) {
	perBound := make([]uint64, len(bounds))
	for _, b := range counts {
		count += uint64(b.Count) // #nosec G115 -- a bucket's count is a count(*), never negative
		sum += b.Sum
		for j := b.Above; j < len(bounds); j++ {
			perBound[j] += uint64(b.Count) // #nosec G115 -- a bucket's count is a count(*), never negative
		}
	}
	buckets = make(map[float64]uint64, len(bounds))
	for i, b := range bounds {
		buckets[b] = perBound[i]
	}
	return count, sum, buckets
}
