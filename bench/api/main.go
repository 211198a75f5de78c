// Command bench-api measures what the surface adds to a request: bearer-token
// authentication (a SHA-256 and one indexed lookup), the route permission check, the
// Idempotency-Key claim / replay and the /metrics scrape with its SQL-derived figures, each
// with the CPU per request of this process (API and clients) and PostgreSQL. It
// starts its own PostgreSQL cluster (no Temporal: the routes it drives do not use it),
// serves the API on a loopback port and prints a Markdown table ending with a RESULT line.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/bench/internal/benchstack"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/dev/devstack"
	"github.com/tickgate/tickgate/metrics"
	"github.com/tickgate/tickgate/store"
)

var (
	flagRequests    = flag.Int("requests", 4000, "requests per case")
	flagConcurrency = flag.Int("concurrency", 8, "concurrent clients")
	flagRuns        = flag.Int("runs", 20000, "schedule_runs rows seeded for the /metrics scrape")
)

func main() {
	flag.Parse()
	log.SetFlags(log.Ltime)
	if err := run(context.Background()); err != nil {
		log.Fatalf("bench-api: %v", err)
	}
}

type result struct {
	name       string
	n          int
	rps        float64
	p50, p99   time.Duration
	statusSeen map[int]int
	// CPU per request in ms over the case's window: this process (the API server and the
	// bench's HTTP clients, both in it) and PostgreSQL.
	cpuTickgate, cpuPG float64
}

// cpuNow is this process's and the cluster's CPU time.
func cpuNow(pg *devstack.Postgres) (self, cluster benchstack.CPU, err error) {
	if self, err = benchstack.SelfCPU(); err != nil {
		return 0, 0, err
	}
	if cluster, err = benchstack.ClusterCPU(pg.DataDir); err != nil {
		return 0, 0, err
	}
	return self, cluster, nil
}

func run(ctx context.Context) error {
	root, err := devstack.RepoRoot()
	if err != nil {
		return err
	}
	bin, err := devstack.FindPostgresBinDir(true)
	if err != nil {
		return err
	}
	pg := &devstack.Postgres{BinDir: bin, DataDir: filepath.Join(root, ".dev", "bench-api", "pg"),
		Port: 55470, FindFreePort: true, Log: log.Printf}
	if err := pg.Start(ctx); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	defer pg.Stop() //nolint:errcheck
	st, err := freshStore(ctx, pg, "bench_api")
	if err != nil {
		return err
	}
	defer st.Close()

	// Data: 100 schedules, flagRuns runs with lateness, 50 PCs.
	if _, err := st.Pool.Exec(ctx, `INSERT INTO schedules (name, spec, action) SELECT 's-' || g, '{"interval":"1h"}', '{"kind":"event"}' FROM generate_series(1, 100) g`); err != nil {
		return err
	}
	if _, err := st.Pool.Exec(ctx, `INSERT INTO schedule_runs (schedule_id, scheduled_at, fired_at, trigger, status, idempotency_key, finished_at)
		SELECT 1 + g % 100, now() - g * interval '1 minute', now() - g * interval '1 minute' + (g % 500) * interval '1 millisecond',
		       'scheduled', 'SUCCEEDED', 'bench-' || g, now() FROM generate_series(1, $1::int) g`, *flagRuns); err != nil {
		return err
	}
	_, admin, err := st.CreateToken(ctx, store.NewToken{Role: domain.RoleAdmin, Note: "bench-api"})
	if err != nil {
		return err
	}
	srv := httptest.NewServer(api.New(&api.Server{Store: st, Logf: func(string, ...any) {}}))
	defer srv.Close()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

	var seq atomic.Int64
	type req struct {
		method, path, token, key string
		body                     []byte
	}
	cases := []struct {
		name string
		make func() req
		n    int
		conc int // 0: -concurrency
	}{
		{"GET /healthz (public: no token, no SQL)", func() req { return req{method: "GET", path: "/healthz"} }, *flagRequests, 0},
		{"GET /api/v1/schedules?limit=50 with an admin token", func() req {
			return req{method: "GET", path: "/api/v1/schedules?limit=50", token: admin}
		}, *flagRequests, 0},
		{"GET /api/v1/schedules with an unknown token (401)", func() req {
			return req{method: "GET", path: "/api/v1/schedules", token: "tg_unknown-token-for-the-bench"}
		}, *flagRequests, 0},
		{"POST /api/v1/pcs, new Idempotency-Key each (claim + create + store)", func() req {
			i := seq.Add(1)
			return req{method: "POST", path: "/api/v1/pcs", token: admin, key: fmt.Sprintf("k-%d", i), body: []byte(fmt.Sprintf(`{"name":"pc-%d"}`, i))}
		}, *flagRequests, 0},
		{"POST /api/v1/pcs, same Idempotency-Key (replay)", func() req {
			return req{method: "POST", path: "/api/v1/pcs", token: admin, key: "k-1", body: []byte(`{"name":"pc-1"}`)}
		}, *flagRequests, 0},
		{fmt.Sprintf("GET /metrics, one scraper (%d schedule_runs rows, lateness over the latest %d; %d PCs)", *flagRuns, metrics.LatenessWindow, *flagRequests), func() req {
			return req{method: "GET", path: "/metrics", token: admin}
		}, 50, 1},
	}
	var results []result
	for _, c := range cases {
		r := result{name: c.name, n: c.n, statusSeen: map[int]int{}}
		lat := make([]time.Duration, c.n)
		var next atomic.Int64
		var mu sync.Mutex
		var firstErr error
		self0, pg0, err := cpuNow(pg)
		if err != nil {
			return err
		}
		start := time.Now()
		var wg sync.WaitGroup
		conc := c.conc
		if conc == 0 {
			conc = *flagConcurrency
		}
		for w := 0; w < conc; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= c.n {
						return
					}
					q := c.make()
					hr, _ := http.NewRequestWithContext(ctx, q.method, srv.URL+q.path, bytes.NewReader(q.body))
					if q.body != nil {
						hr.Header.Set("Content-Type", "application/json")
					}
					if q.token != "" {
						hr.Header.Set("Authorization", "Bearer "+q.token)
					}
					if q.key != "" {
						hr.Header.Set("Idempotency-Key", q.key)
					}
					t0 := time.Now()
					resp, err := hc.Do(hr)
					if err == nil {
						_, _ = io.Copy(io.Discard, resp.Body)
						_ = resp.Body.Close()
					}
					lat[i] = time.Since(t0)
					mu.Lock()
					if err != nil && firstErr == nil {
						firstErr = err
					} else if err == nil {
						r.statusSeen[resp.StatusCode]++
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if firstErr != nil {
			return fmt.Errorf("%s: %w", c.name, firstErr)
		}
		elapsed := time.Since(start)
		self1, pg1, err := cpuNow(pg)
		if err != nil {
			return err
		}
		r.cpuTickgate, r.cpuPG = (self1 - self0).PerOp(int64(c.n)), (pg1 - pg0).PerOp(int64(c.n))
		slices.Sort(lat)
		r.rps = float64(c.n) / elapsed.Seconds()
		r.p50, r.p99 = lat[c.n/2], lat[c.n*99/100]
		results = append(results, r)
	}
	var pcs int
	if err := st.Pool.QueryRow(ctx, "SELECT count(*) FROM pcs").Scan(&pcs); err != nil {
		return err
	}

	fmt.Printf("\n## bench-api: the surface's cost per request (loopback, %d clients, 2-core machine)\n\n", *flagConcurrency)
	fmt.Println("| case | requests | req/s | p50 ms | p99 ms | CPU per request: this process (API and clients) / PostgreSQL (ms) | statuses |")
	fmt.Println("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
	for _, r := range results {
		fmt.Printf("| %s | %d | %.0f | %.2f | %.2f | %.3f / %.3f | %v |\n", r.name, r.n, r.rps, ms(r.p50), ms(r.p99), r.cpuTickgate, r.cpuPG, r.statusSeen)
	}
	res, err := benchstack.ProcResolution()
	if err != nil {
		return err
	}
	fmt.Printf("\nCPU per request is over each case's window ÷ its requests. This process holds the API and the bench's HTTP clients (the healthz row is about what the round trip itself costs them); PostgreSQL's time is read from /proc in %s ticks, so its figure is good to %.3f ms a request (%.3f for /metrics).\n",
		res, res.Seconds()*1000/float64(*flagRequests), res.Seconds()*1000/float64(results[5].n))
	fmt.Printf("\nPCs created by the idempotent POSTs: %d (want %d: the replays created none)\n\n", pcs, *flagRequests)
	fmt.Printf("RESULT healthz_rps=%.0f auth_list_p50_ms=%.2f auth_list_p99_ms=%.2f auth_list_rps=%.0f unauth_p99_ms=%.2f idem_create_p99_ms=%.2f idem_replay_p99_ms=%.2f metrics_scrape_p50_ms=%.1f replays_created=%d",
		results[0].rps, ms(results[1].p50), ms(results[1].p99), results[1].rps, ms(results[2].p99), ms(results[3].p99), ms(results[4].p99), ms(results[5].p50), pcs-*flagRequests)
	for i, prefix := range []string{"healthz", "auth_list", "unauth", "idem_create", "idem_replay", "metrics_scrape"} {
		fmt.Printf(" %s_cpu_ms_per_req_tickgate=%.3f %s_cpu_ms_per_req_pg=%.3f", prefix, results[i].cpuTickgate, prefix, results[i].cpuPG)
	}
	fmt.Println()
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func freshStore(ctx context.Context, pg *devstack.Postgres, name string) (*store.Store, error) {
	conn, err := pgx.Connect(ctx, pg.URL("postgres"))
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return nil, err
	}
	if err := store.Migrate(ctx, pg.URL(name)); err != nil {
		return nil, err
	}
	return store.Open(ctx, pg.URL(name)+"&pool_max_conns=32")
}
