// Command bench-console measures what the operator's console asks of the API at scale
// (docs/console.md): the schedules list's pages and filters over -schedules schedules, and
// the statistics over a window of a schedule_runs table holding -busy schedules' fires, one a
// minute for -days days. Each case runs with the console's indexes (migration 00031) and
// again, in the same run, with them dropped, so the pair says what the indexes buy, in
// latency and in CPU per request (this process, PostgreSQL). It prints a Markdown table
// ending with a RESULT line.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"time"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/bench/internal/benchstack"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store"
)

var (
	flagSchedules = flag.Int("schedules", 10000, "schedules")
	flagPaused    = flag.Int("paused-every", 10, "every n-th schedule is paused")
	flagBusy      = flag.Int("busy", 200, "schedules that fired every minute")
	flagDays      = flag.Int("days", 6, "days of their fires in schedule_runs")
	flagRequests  = flag.Int("requests", 100, "requests per case, one at a time")
)

func main() {
	flag.Parse()
	log.SetFlags(log.Ltime)
	if err := run(context.Background()); err != nil {
		log.Fatalf("bench-console: %v", err)
	}
}

// latency is one case's p50 and p99 in milliseconds, and the CPU per request in ms over its
// requests: of this process (the API, and the bench's one client) and of PostgreSQL.
type latency struct{ p50, p99, cpuTickgate, cpuPG float64 }

func run(ctx context.Context) error {
	stack, err := benchstack.Start(ctx, benchstack.Options{Name: "console", PGPort: 55480})
	if err != nil {
		return err
	}
	defer stack.Stop()
	url, err := stack.FreshDatabase(ctx, "bench_console")
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, url)
	if err != nil {
		return err
	}
	defer st.Close()
	runs, err := seed(ctx, st)
	if err != nil {
		return err
	}
	_, token, err := st.CreateToken(ctx, store.NewToken{Role: domain.RoleViewer, Note: "bench-console"})
	if err != nil {
		return err
	}
	srv := httptest.NewServer(api.New(&api.Server{Store: st, Logf: log.Printf}))
	defer srv.Close()

	deep := scheduleName(*flagSchedules - 100)
	cases := []struct{ name, path string }{
		{"schedules, first page", "/api/v1/schedules?limit=50"},
		{"schedules, a page near the end", "/api/v1/schedules?limit=50&cursor=" + api.EncodeCursor(deep)},
		{"schedules, paused", "/api/v1/schedules?limit=50&state=paused"},
		{"schedules, paused, near the end", "/api/v1/schedules?limit=50&state=paused&cursor=" + api.EncodeCursor(deep)},
		{"schedules, name holds 0042", "/api/v1/schedules?limit=50&name=0042"},
		{"schedules, active, name holds 999", "/api/v1/schedules?limit=50&state=active&name=999"},
		{"overview, 1 h", "/api/v1/stats/overview?window=1h"},
		{"overview, 24 h", "/api/v1/stats/overview?window=24h"},
		{"one schedule's stats, 1 h", "/api/v1/schedules/" + scheduleName(1) + "/stats?window=1h"},
		{"runs, FAILED in 1 h", "/api/v1/runs?window=1h&status=FAILED&limit=50"},
	}
	with := map[string]latency{}
	without := map[string]latency{}
	for _, pass := range []map[string]latency{with, without} {
		if len(with) > 0 {
			if _, err := st.Pool.Exec(ctx, `DROP INDEX schedules_by_state; DROP INDEX schedule_runs_by_tick; ANALYZE schedules; ANALYZE schedule_runs`); err != nil {
				return err
			}
		}
		for _, c := range cases {
			l, err := measure(stack, srv.URL+c.path, token)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			pass[c.name] = l
		}
	}

	fmt.Printf("\n## bench-console: the console's reads (%d schedules, one in %d paused; %d schedule_runs rows; %d requests a case, one at a time, 2-core machine)\n\n",
		*flagSchedules, *flagPaused, runs, *flagRequests)
	fmt.Println("| case | with the console's indexes p50 / p99 ms | CPU per request with them: this process / PostgreSQL (ms) | without them p50 / p99 ms | CPU per request without them: this process / PostgreSQL (ms) |")
	fmt.Println("| --- | --- | --- | --- | --- |")
	for _, c := range cases {
		w, wo := with[c.name], without[c.name]
		fmt.Printf("| %s | %.1f / %.1f | %.3f / %.3f | %.1f / %.1f | %.3f / %.3f |\n", c.name, w.p50, w.p99, w.cpuTickgate, w.cpuPG, wo.p50, wo.p99, wo.cpuTickgate, wo.cpuPG)
	}
	res, err := benchstack.ProcResolution()
	if err != nil {
		return err
	}
	fmt.Printf("\nCPU per request is over each case's requests ÷ their number. This process holds the API and the bench's one client; PostgreSQL's time is read from /proc in %s ticks, so its figure is good to %.3f ms a request.\n",
		res, res.Seconds()*1000/float64(*flagRequests))
	k := func(name string) latency { return with[name] }
	fmt.Printf("\nRESULT schedules=%d runs=%d list_p99_ms=%.1f list_paused_p99_ms=%.1f list_name_p99_ms=%.1f overview_1h_p99_ms=%.1f overview_1h_noindex_p99_ms=%.1f overview_24h_p99_ms=%.1f schedule_stats_1h_p99_ms=%.1f schedule_stats_1h_noindex_p99_ms=%.1f",
		*flagSchedules, runs, k("schedules, first page").p99, k("schedules, paused").p99, k("schedules, name holds 0042").p99,
		k("overview, 1 h").p99, without["overview, 1 h"].p99, k("overview, 24 h").p99,
		k("one schedule's stats, 1 h").p99, without["one schedule's stats, 1 h"].p99)
	// CPU keys beside the latency keys: every case with the indexes, and the ones the indexes
	// serve (the window statistics and the paused filter) without them too.
	cpuKeys := []struct {
		prefix, name string
		pass         map[string]latency
	}{
		{"list", "schedules, first page", with},
		{"list_deep", "schedules, a page near the end", with},
		{"list_paused", "schedules, paused", with},
		{"list_paused_noindex", "schedules, paused", without},
		{"list_paused_deep", "schedules, paused, near the end", with},
		{"list_paused_deep_noindex", "schedules, paused, near the end", without},
		{"list_name", "schedules, name holds 0042", with},
		{"list_active_name", "schedules, active, name holds 999", with},
		{"overview_1h", "overview, 1 h", with},
		{"overview_1h_noindex", "overview, 1 h", without},
		{"overview_24h", "overview, 24 h", with},
		{"overview_24h_noindex", "overview, 24 h", without},
		{"schedule_stats_1h", "one schedule's stats, 1 h", with},
		{"schedule_stats_1h_noindex", "one schedule's stats, 1 h", without},
		{"runs_failed_1h", "runs, FAILED in 1 h", with},
		{"runs_failed_1h_noindex", "runs, FAILED in 1 h", without},
	}
	for _, c := range cpuKeys {
		l := c.pass[c.name]
		fmt.Printf(" %s_cpu_ms_per_req_tickgate=%.3f %s_cpu_ms_per_req_pg=%.3f", c.prefix, l.cpuTickgate, c.prefix, l.cpuPG)
	}
	fmt.Println()
	return nil
}

// seed inserts the schedules and the busy ones' fires (one in a hundred FAILED) straight in
// SQL, and answers how many runs the table holds.
func seed(ctx context.Context, st *store.Store) (int64, error) {
	start := time.Now()
	if _, err := st.Pool.Exec(ctx, `
		INSERT INTO schedules (name, spec, action, paused, next_run_at)
		SELECT 'fleet-' || lpad(i::text, $3::int, '0'), '{"interval":{"every":1,"unit":"MINUTES"},"timezone":"UTC","start_at":"2026-01-01T00:00:00Z"}',
		       '{"kind":"event","topic":"bench","type":"tick"}', i % $2::int = 0,
		       CASE WHEN i % $2::int = 0 THEN NULL ELSE date_trunc('minute', now()) + interval '1 minute' END
		FROM generate_series(1, $1::int) AS i`, *flagSchedules, *flagPaused, nameDigits()); err != nil {
		return 0, fmt.Errorf("seed schedules: %w", err)
	}
	if _, err := st.Pool.Exec(ctx, `
		INSERT INTO schedule_runs (schedule_id, scheduled_at, fired_at, trigger, status, error, idempotency_key, finished_at)
		SELECT s.id, m, m + (s.id % 50) * interval '1 millisecond', 'scheduled',
		       CASE WHEN (s.id + extract(epoch FROM m)::bigint / 60) % 100 = 0 THEN 'FAILED' ELSE 'SUCCEEDED' END,
		       CASE WHEN (s.id + extract(epoch FROM m)::bigint / 60) % 100 = 0 THEN 'bench' ELSE '' END,
		       s.id || '@' || extract(epoch FROM m)::bigint, m + interval '1 second'
		FROM generate_series(date_trunc('minute', now()) - make_interval(days => $2::int), date_trunc('minute', now()), interval '1 minute') AS m
		CROSS JOIN (SELECT id FROM schedules ORDER BY id LIMIT $1::int) s`, *flagBusy, *flagDays); err != nil {
		return 0, fmt.Errorf("seed runs: %w", err)
	}
	for _, table := range []string{"schedules", "schedule_runs"} {
		if _, err := st.Pool.Exec(ctx, "VACUUM ANALYZE "+table); err != nil {
			return 0, err
		}
	}
	var n int64
	if err := st.Pool.QueryRow(ctx, `SELECT count(*) FROM schedule_runs`).Scan(&n); err != nil {
		return 0, err
	}
	log.Printf("bench-console: seeded %d schedules and %d runs in %s", *flagSchedules, n, time.Since(start).Round(time.Second))
	return n, nil
}

// nameDigits is how many digits the seeded names number with (fleet-00001: at least five).
func nameDigits() int { return max(5, len(strconv.Itoa(*flagSchedules))) }

func scheduleName(i int) string { return fmt.Sprintf("fleet-%0*d", nameDigits(), i) }

// measure sends the request -requests times, one at a time, and answers its latency and the
// CPU the requests took.
func measure(stack *benchstack.Stack, url, token string) (latency, error) {
	ds := make([]time.Duration, 0, *flagRequests)
	before, err := stack.CPU()
	if err != nil {
		return latency{}, err
	}
	for i := 0; i < *flagRequests; i++ {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			return latency{}, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return latency{}, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		ds = append(ds, time.Since(start))
		if resp.StatusCode != http.StatusOK {
			return latency{}, fmt.Errorf("answered %d", resp.StatusCode)
		}
	}
	after, err := stack.CPU()
	if err != nil {
		return latency{}, err
	}
	cpu, n := after.Sub(before), int64(len(ds))
	slices.Sort(ds)
	at := func(q float64) float64 { return float64(ds[int(q*float64(len(ds)-1))].Microseconds()) / 1000 }
	return latency{p50: at(0.5), p99: at(0.99), cpuTickgate: cpu.Worker.PerOp(n), cpuPG: cpu.Postgres.PerOp(n)}, nil
}
