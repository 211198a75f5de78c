package metrics_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/metrics"
)

// TestDocsNameRealSeries: every tickgate_* series the operations, production and console pages
// name (in tables and in the alert examples) is one this package exports, so an alert
// copied from the docs watches a series that exists.
func TestDocsNameRealSeries(t *testing.T) {
	exported := map[string]bool{}
	descs := make(chan *prometheus.Desc, 64)
	for _, c := range []prometheus.Collector{metrics.HTTPDuration, metrics.PromotionRound,
		metrics.FireLatenessObserved, metrics.ScheduleTicks, metrics.ScheduleAutoPaused, metrics.HTTPFirstAttempts, &metrics.SQLCollector{}, &metrics.ScheduleCollector{}} {
		c.Describe(descs)
	}
	close(descs)
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range descs {
		m := fqName.FindStringSubmatch(d.String())
		require.NotNil(t, m, d.String())
		exported[m[1]] = true
	}
	require.Contains(t, exported, "tickgate_schedule_ticks_total")

	series := regexp.MustCompile(`\btickgate_[a-z_]+[a-z]`)
	for _, page := range []string{"operations.md", "production.md", "console.md"} {
		b, err := os.ReadFile(filepath.Join("..", "docs", page))
		require.NoError(t, err)
		names := series.FindAllString(string(b), -1)
		require.NotEmpty(t, names, page)
		for _, name := range names {
			base := name
			for _, suffix := range []string{"_bucket", "_count", "_sum"} {
				if _, ok := exported[base]; !ok {
					base = strings.TrimSuffix(base, suffix)
				}
			}
			require.Contains(t, exported, base, "%s names %s, which package metrics does not export", page, name)
		}
	}
}
