package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/bench/internal/benchstack"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/scheduleplan"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/worker"
)

// result is what one run measured.
type result struct {
	temporal            string
	schedules           int
	created, singleTook time.Duration
	single              int
	idle                benchstack.CPUSnapshot
	idleWindow          time.Duration
	bytesPG, bytesTemp  float64
	tick                time.Time
	armedByTick         int
	visible, missed     int
	early               int
	p50, p99, max       float64
	burstCPU            benchstack.CPUSnapshot
	consumer            consumerFigures
	nativeCreated       int
	nativeTook          time.Duration
	// one-time schedules: created through the bulk API (oneTime in oneTimeTook) and one a
	// request (oneSingle in oneSingleTook)
	oneTime, oneSingle         int
	oneTimeTook, oneSingleTook time.Duration
	// resident (-resident): every schedule's workflow open, opened in openTook from the
	// first create; the bytes per schedule in Temporal after the burst (each run looked once
	// after its fire), and the workflows still open then
	resident            bool
	opened              int64
	openTook            time.Duration
	bytesTempAfterBurst float64
	openAfterBurst      int64
	openCPU             benchstack.CPUSnapshot // from the first create to the last workflow open
}

func run(ctx context.Context) (string, error) {
	stack, err := benchstack.Start(ctx, benchstack.Options{Name: "scale", PGPort: 55480, CommitTimestamps: true})
	if err != nil {
		return "", err
	}
	defer stack.Stop()
	url, err := stack.FreshDatabase(ctx, "bench_scale")
	if err != nil {
		return "", err
	}
	cfg, err := stack.Config(url)
	if err != nil {
		return "", err
	}
	cfg.TaskQueue = "bench-scale"
	cfg.SchedulesResident = *flagResident
	st, err := store.Open(ctx, url)
	if err != nil {
		return "", err
	}
	defer st.Close()
	tc, err := cfg.DialTemporal(ctx)
	if err != nil {
		return "", err
	}
	defer tc.Close()
	w, err := worker.New(worker.Deps{Config: cfg, Store: st, Temporal: tc})
	if err != nil {
		return "", err
	}
	if err := w.Start(); err != nil {
		return "", fmt.Errorf("start worker: %w", err)
	}
	defer w.Stop()
	if err := worker.StartSingletons(ctx, worker.Deps{Config: cfg, Store: st, Temporal: tc}); err != nil {
		return "", err
	}
	s := &starter.Starter{Client: tc, TaskQueue: cfg.TaskQueue}
	// The API process listens on PostgreSQL, as the binary's does: a feed long-poll hears of
	// the release that makes the burst true.
	listener := st.StartListener(store.ListenerOptions{})
	defer listener.Close()
	srv := httptest.NewServer(api.New(&api.Server{Store: st, Temporal: tc, Starter: s, Listener: listener, Logf: func(string, ...any) {},
		SchedulesResident: cfg.SchedulesResident}))
	defer srv.Close()
	_, token, err := st.CreateToken(ctx, store.NewToken{Role: domain.RoleAdmin, Note: "bench-scale"})
	if err != nil {
		return "", err
	}
	h := &httpClient{base: srv.URL, token: token, c: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}

	res := result{temporal: stack.Temporal.Describe(), schedules: *flagSchedules, single: *flagSingle, idleWindow: *flagIdle, resident: *flagResident}
	tempBefore, err := stack.Temporal.StorageBytes(ctx)
	if err != nil {
		return "", err
	}
	// The tick every schedule shares: a daily cron at a minute well after the creation (at
	// -rate-estimate a second), the idle window and the planner's arming lead.
	all := *flagSchedules + *flagSingle + *flagOneTime + *flagOneSingle
	estimate := time.Duration(float64(all)/float64(*flagRateEstimate)*float64(time.Second)) + *flagIdle + scheduleplan.ArmLead + 2*time.Minute
	if *flagResident {
		estimate += time.Duration(float64(all) / float64(*flagOpenEstimate) * float64(time.Second))
	}
	res.tick = time.Now().UTC().Add(estimate).Truncate(time.Minute).Add(time.Minute)
	spec := map[string]any{"cron": fmt.Sprintf("%d %d * * *", res.tick.Minute(), res.tick.Hour())}
	log.Printf("creating %d schedules (+%d one by one), all due at %s, and %d one-time schedules (+%d one by one) a day later",
		*flagSchedules, *flagSingle, res.tick.Format(time.TimeOnly), *flagOneTime, *flagOneSingle)

	// The cron and the one-time passes alternate, a slice of each in turn (alternateRounds
	// slices): each kind creates into a table of the same size on average, and neither
	// gets the warm-up alone.
	cron := func(int) map[string]any { return spec }
	reminder := func(i int) map[string]any {
		return map[string]any{"at": res.tick.Add(24*time.Hour + time.Duration(i)*time.Second).Format(time.RFC3339)}
	}
	slice := func(n, r int) (int, int) { return r * n / alternateRounds, (r + 1) * n / alternateRounds }
	createStart := time.Now()
	createCPU, err := stack.CPU()
	if err != nil {
		return "", err
	}
	for r := range alternateRounds {
		from, to := slice(*flagSchedules, r)
		took, err := bulkCreate(ctx, h, "s", cron, from, to)
		if err != nil {
			return "", err
		}
		res.created += took
		from, to = slice(*flagOneTime, r)
		if took, err = bulkCreate(ctx, h, "remind", reminder, from, to); err != nil {
			return "", err
		}
		res.oneTimeTook += took
	}
	for r := range alternateRounds {
		from, to := slice(*flagSingle, r)
		took, err := singleCreate(ctx, h, "one", cron, from, to)
		if err != nil {
			return "", err
		}
		res.singleTook += took
		from, to = slice(*flagOneSingle, r)
		if took, err = singleCreate(ctx, h, "remind-one", reminder, from, to); err != nil {
			return "", err
		}
		res.oneSingleTook += took
	}
	res.oneTime, res.oneSingle = *flagOneTime, *flagOneSingle
	log.Printf("bulk: %d in %s (%.0f/s); one-time: %d in %s (%.0f/s)", *flagSchedules, res.created.Round(time.Millisecond), float64(*flagSchedules)/res.created.Seconds(),
		res.oneTime, res.oneTimeTook.Round(time.Millisecond), float64(res.oneTime)/res.oneTimeTook.Seconds())
	log.Printf("single: %d in %s (%.0f/s); one-time: %d in %s (%.0f/s)", *flagSingle, res.singleTook.Round(time.Millisecond), float64(*flagSingle)/res.singleTook.Seconds(),
		res.oneSingle, res.oneSingleTook.Round(time.Millisecond), float64(res.oneSingle)/res.oneSingleTook.Seconds())
	total := *flagSchedules + *flagSingle
	res.schedules = total
	if *flagResident {
		// Each created schedule's workflow is woken by the planner's first look, takes the
		// schedule and rests it in place, open.
		if err := waitOpen(ctx, tc, st, int64(all), &res, createStart); err != nil {
			return "", err
		}
		opened, err := stack.CPU()
		if err != nil {
			return "", err
		}
		res.openCPU = opened.Sub(createCPU)
		log.Printf("resident: CPU per workflow opened (creation included): tickgate %.2f ms, PostgreSQL %.2f ms, Temporal %.2f ms",
			res.openCPU.Worker.Ms()/float64(all), res.openCPU.Postgres.Ms()/float64(all), res.openCPU.Temporal.Ms()/float64(all))
	}

	// Idle: the schedules rest until the planner arms them a minute before their tick.
	if time.Until(res.tick.Add(-scheduleplan.ArmLead)) < *flagIdle+5*time.Second {
		return "", fmt.Errorf("creation overran the tick at %s: raise the estimate", res.tick.Format(time.TimeOnly))
	}
	time.Sleep(5 * time.Second) // the last creates' own work settles
	before, err := stack.CPU()
	if err != nil {
		return "", err
	}
	time.Sleep(*flagIdle)
	after, err := stack.CPU()
	if err != nil {
		return "", err
	}
	res.idle = after.Sub(before)
	var pgBytes int64
	if err := st.Pool.QueryRow(ctx, "SELECT pg_total_relation_size('schedules')").Scan(&pgBytes); err != nil {
		return "", err
	}
	res.bytesPG = float64(pgBytes) / float64(total+res.oneTime+res.oneSingle)
	tempAfter, err := stack.Temporal.StorageBytes(ctx)
	if err != nil {
		return "", err
	}
	res.bytesTemp = float64(tempAfter-tempBefore) / float64(total+res.oneTime+res.oneSingle)
	open, err := openScheduleWorkflows(ctx, tc)
	if err != nil {
		return "", err
	}
	log.Printf("idle %s: tickgate %.1f%%, PostgreSQL %.1f%%, Temporal %.1f%% CPU; %.0f B/schedule in PostgreSQL, %.0f B in Temporal; %d schedule workflows open",
		*flagIdle, pct(res.idle.Worker, *flagIdle), pct(res.idle.Postgres, *flagIdle), pct(res.idle.Temporal, *flagIdle), res.bytesPG, res.bytesTemp, open)

	if err := burst(ctx, stack, st, h, &res, total); err != nil {
		return "", err
	}
	if *flagResident {
		// Each resident run looks at its row once, 2 to 32 s after its fire.
		if err := sleepUntil(ctx, res.tick.Add(40*time.Second)); err != nil {
			return "", err
		}
		after, err := stack.Temporal.StorageBytes(ctx)
		if err != nil {
			return "", err
		}
		res.bytesTempAfterBurst = float64(after-tempBefore) / float64(all)
		if res.openAfterBurst, err = openScheduleWorkflows(ctx, tc); err != nil {
			return "", err
		}
		log.Printf("after the burst: %.0f B/schedule in Temporal; %d schedule workflows open", res.bytesTempAfterBurst, res.openAfterBurst)
	}
	if *flagNativeBudget > 0 {
		if err := nativeCreate(ctx, tc, &res); err != nil {
			return "", err
		}
	}
	return report(res), nil
}

func pct(c benchstack.CPU, over time.Duration) float64 {
	return 100 * float64(time.Duration(c)) / float64(over)
}

// burst waits for the shared tick and measures how the fires became visible.
func burst(ctx context.Context, stack *benchstack.Stack, st *store.Store, h *httpClient, res *result, total int) error {
	armStart := res.tick.Add(-scheduleplan.ArmLead - 5*time.Second)
	if err := sleepUntil(ctx, armStart); err != nil {
		return err
	}
	before, err := stack.CPU()
	if err != nil {
		return err
	}
	// A consumer of the burst's topic waits at the end of the feed from a few seconds
	// before the tick.
	if err := sleepUntil(ctx, res.tick.Add(-5*time.Second)); err != nil {
		return err
	}
	consumer := &feedConsumer{h: h, topic: event["topic"].(string), tick: res.tick}
	cctx, stopConsumer := context.WithCancel(ctx)
	defer stopConsumer()
	consumed := make(chan struct{})
	go func() { defer close(consumed); consumer.run(cctx) }()
	if err := sleepUntil(ctx, res.tick); err != nil {
		return err
	}
	if err := st.Pool.QueryRow(ctx, "SELECT count(*) FROM schedule_runs WHERE scheduled_at = $1", res.tick).Scan(&res.armedByTick); err != nil {
		return err
	}
	log.Printf("tick %s: %d of %d fires armed", res.tick.Format(time.TimeOnly), res.armedByTick, total)
	deadline := res.tick.Add(*flagDrain)
	for time.Now().Before(deadline) {
		var done int
		if err := st.Pool.QueryRow(ctx, `SELECT count(*) FROM schedule_runs WHERE scheduled_at = $1 AND run_shown(armed, visible_at)`, res.tick).Scan(&done); err != nil {
			return err
		}
		if done >= total {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	after, err := stack.CPU()
	if err != nil {
		return err
	}
	res.burstCPU = after.Sub(before)
	// When each fire became what a consumer of /events sees: the commit of the release that
	// made it true (its outbox message's own transaction for a fire released late, which
	// takes a feed position of its own), never before its visible_at.
	err = st.Pool.QueryRow(ctx, `
		WITH felt AS (
			SELECT extract(epoch FROM GREATEST(
			           COALESCE(pg_xact_commit_timestamp(rel.xmin), pg_xact_commit_timestamp(o.xmin)), o.visible_at) - r.scheduled_at) * 1000 AS ms
			FROM schedule_runs r JOIN event_store e ON e.schedule_run_id = r.id
			JOIN outbox_messages o ON o.event_id = e.id
			LEFT JOIN LATERAL (SELECT f.xmin FROM feed_releases f WHERE o.tx_id IS NULL AND f.released_until >= o.visible_at
			                   ORDER BY f.released_until LIMIT 1) rel ON true
			WHERE r.scheduled_at = $1 AND r.status = 'SUCCEEDED' AND (o.tx_id IS NOT NULL OR rel.xmin IS NOT NULL))
		SELECT count(*), COALESCE(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms), 0), COALESCE(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms), 0),
		       COALESCE(max(ms), 0), count(*) FILTER (WHERE ms < 0)
		FROM felt`, res.tick).Scan(&res.visible, &res.p50, &res.p99, &res.max, &res.early)
	if err != nil {
		return fmt.Errorf("read the burst's lateness: %w", err)
	}
	if err := st.Pool.QueryRow(ctx, "SELECT count(*) FROM schedule_runs WHERE scheduled_at = $1 AND status = 'MISSED'", res.tick).Scan(&res.missed); err != nil {
		return err
	}
	log.Printf("burst: %d of %d visible, p50 %.0f ms, p99 %.0f ms, max %.0f ms; %d missed, %d early", res.visible, total, res.p50, res.p99, res.max, res.missed, res.early)
	// The consumer has read them all, or is given until the drain's deadline.
	for consumer.received() < res.visible && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	stopConsumer()
	<-consumed
	res.consumer = consumer.figures()
	if res.consumer.err != nil {
		return fmt.Errorf("the feed consumer: %w", res.consumer.err)
	}
	log.Printf("consumer: %d events in %d pages, lateness from the tick p50 %.0f ms, p99 %.0f ms, max %.0f ms",
		res.consumer.events, res.consumer.pages, res.consumer.p50, res.consumer.p99, res.consumer.max)
	return nil
}

func sleepUntil(ctx context.Context, t time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(t)):
		return nil
	}
}

// httpClient calls the API as a user does.
type httpClient struct {
	base, token string
	c           *http.Client
}

func (h *httpClient) post(ctx context.Context, path string, body any, want ...int) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+h.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	for _, w := range want {
		if resp.StatusCode == w {
			return nil
		}
	}
	return fmt.Errorf("POST %s: %d %s", path, resp.StatusCode, truncate(string(out), 300))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

var event = map[string]any{"kind": "event", "topic": "scale", "type": "tick"}

// bulkCreate creates schedules from to n-1 (named prefix-i, spec(i)) through POST
// /schedules/bulk, -parallel requests at once.
func bulkCreate(ctx context.Context, h *httpClient, prefix string, spec func(i int) map[string]any, from0, n int) (time.Duration, error) {
	var next atomic.Int64
	next.Store(int64(from0))
	start := time.Now()
	err := parallel(*flagParallel, func() error {
		for {
			from := int(next.Add(int64(*flagBulk))) - *flagBulk
			if from >= n {
				return nil
			}
			items := make([]any, 0, *flagBulk)
			for i := from; i < min(from+*flagBulk, n); i++ {
				items = append(items, map[string]any{"name": fmt.Sprintf("%s-%07d", prefix, i), "spec": spec(i), "action": event})
			}
			if err := h.post(ctx, "/api/v1/schedules/bulk", map[string]any{"items": items}, http.StatusCreated, http.StatusOK); err != nil {
				return err
			}
		}
	})
	return time.Since(start), err
}

// alternateRounds is how many slices of each kind the cron and one-time creations
// alternate in.
const alternateRounds = 4

// singleCreate creates schedules from to n-1 (named prefix-i, spec(i)) through POST
// /schedules, one a request.
func singleCreate(ctx context.Context, h *httpClient, prefix string, spec func(i int) map[string]any, from0, n int) (time.Duration, error) {
	var next atomic.Int64
	next.Store(int64(from0))
	start := time.Now()
	err := parallel(*flagParallel, func() error {
		for {
			i := int(next.Add(1)) - 1
			if i >= n {
				return nil
			}
			body := map[string]any{"name": fmt.Sprintf("%s-%06d", prefix, i), "spec": spec(i), "action": event}
			if err := h.post(ctx, "/api/v1/schedules", body, http.StatusCreated); err != nil {
				return err
			}
		}
	})
	return time.Since(start), err
}

// parallel runs k copies of f and returns the first error.
func parallel(k int, f func() error) error {
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil {
				once.Do(func() { first = err })
			}
		}()
	}
	wg.Wait()
	return first
}

// openScheduleWorkflows counts the schedule workflows open (at rest, a schedule has none).
func openScheduleWorkflows(ctx context.Context, tc client.Client) (int64, error) {
	resp, err := tc.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{
		Query: `WorkflowType = 'ScheduleWorkflow' AND ExecutionStatus = 'Running'`,
	})
	if err != nil {
		return 0, fmt.Errorf("count schedule workflows: %w", err)
	}
	return resp.GetCount(), nil
}

// waitOpen waits until want schedule workflows are open (resident) and every schedule is
// at rest again — its workflow took it over and rested it in place, leaving the planner's
// plan (a workflow counts as open in Temporal from its start, before its first workflow
// task) — and records how long that took from the first create.
func waitOpen(ctx context.Context, tc client.Client, st *store.Store, want int64, res *result, since time.Time) error {
	deadline := time.Now().Add(30 * time.Minute)
	started := false
	for {
		open, err := openScheduleWorkflows(ctx, tc)
		if err != nil {
			return err
		}
		var rested int64
		if err := st.Pool.QueryRow(ctx, `SELECT count(*) FROM schedules WHERE owner IS NULL AND plan_action IS DISTINCT FROM 'wake'`).Scan(&rested); err != nil {
			return err
		}
		if open >= want && !started {
			started = true
			log.Printf("resident: %d workflows started %s after the first create; %d rested in place", open, time.Since(since).Round(time.Millisecond), rested)
		}
		if open >= want && rested >= want {
			res.opened, res.openTook = open, time.Since(since)
			log.Printf("resident: %d workflows open and at rest %s after the first create (%.0f/s)", open, res.openTook.Round(time.Millisecond),
				float64(open)/res.openTook.Seconds())
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("resident: %d of %d workflows open, %d at rest, after 30 minutes", open, want, rested)
		}
		if err := sleepUntil(ctx, time.Now().Add(500*time.Millisecond)); err != nil {
			return err
		}
	}
}

// nativeCreate creates native Temporal Schedules of the same spec (paused, so that they do
// not load the server) for -native-budget, -parallel at once.
func nativeCreate(ctx context.Context, tc client.Client, res *result) error {
	sc := tc.ScheduleClient()
	var next, created atomic.Int64
	deadline := time.Now().Add(*flagNativeBudget)
	start := time.Now()
	err := parallel(*flagParallel, func() error {
		for time.Now().Before(deadline) {
			i := next.Add(1)
			if int(i) > res.schedules {
				return nil
			}
			_, err := sc.Create(ctx, client.ScheduleOptions{
				ID:     fmt.Sprintf("native-%07d", i),
				Spec:   client.ScheduleSpec{CronExpressions: []string{fmt.Sprintf("%d %d * * *", res.tick.Minute(), res.tick.Hour())}},
				Action: &client.ScheduleWorkflowAction{ID: fmt.Sprintf("native-run-%07d", i), Workflow: "Noop", TaskQueue: "bench-scale-native"},
				Paused: true, Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
			})
			if err != nil {
				return fmt.Errorf("create native schedule %d: %w", i, err)
			}
			created.Add(1)
		}
		return nil
	})
	res.nativeTook, res.nativeCreated = time.Since(start), int(created.Load())
	log.Printf("native: %d created in %s (%.0f/s)", res.nativeCreated, res.nativeTook.Round(time.Millisecond), float64(res.nativeCreated)/res.nativeTook.Seconds())
	return err
}

func report(r result) string {
	var b strings.Builder
	perS := func(n int, d time.Duration) float64 {
		if n == 0 {
			return 0
		}
		return float64(n) / d.Seconds()
	}
	bulk := r.schedules - r.single
	mode := "schedules at rest (no workflow open between fires)"
	if r.resident {
		mode = "resident schedules (TICKGATE_SCHEDULES_RESIDENT=true: every schedule's workflow open)"
	}
	fmt.Fprintf(&b, "\n## bench-scale — %s — %s\n\n", r.temporal, mode)
	fmt.Fprintf(&b, "| what | figure |\n| --- | --- |\n")
	fmt.Fprintf(&b, "| schedules created through the bulk API (%d a request, %d at once) | %d in %s: **%.0f/s** |\n", *flagBulk, *flagParallel, bulk, r.created.Round(time.Millisecond), perS(bulk, r.created))
	fmt.Fprintf(&b, "| schedules created through POST /schedules (%d at once) | %d in %s: **%.0f/s** |\n", *flagParallel, r.single, r.singleTook.Round(time.Millisecond), perS(r.single, r.singleTook))
	if r.oneTime > 0 {
		fmt.Fprintf(&b, "| one-time schedules (spec.at) created through the bulk API, beside the cron ones | %d in %s: **%.0f/s** |\n", r.oneTime, r.oneTimeTook.Round(time.Millisecond), perS(r.oneTime, r.oneTimeTook))
	}
	if r.oneSingle > 0 {
		fmt.Fprintf(&b, "| one-time schedules created through POST /schedules | %d in %s: **%.0f/s** |\n", r.oneSingle, r.oneSingleTook.Round(time.Millisecond), perS(r.oneSingle, r.oneSingleTook))
	}
	if r.resident {
		fmt.Fprintf(&b, "| resident workflows open and at rest (taken over, rested in place), from the first create | %d in %s: **%.0f/s** |\n", r.opened, r.openTook.Round(time.Millisecond),
			perS(int(r.opened), r.openTook))
		n := float64(max(r.opened, 1))
		fmt.Fprintf(&b, "| CPU per resident workflow opened, creation included (tickgate / PostgreSQL / Temporal) | %.2f / %.2f / %.2f ms |\n",
			r.openCPU.Worker.Ms()/n, r.openCPU.Postgres.Ms()/n, r.openCPU.Temporal.Ms()/n)
	}
	fmt.Fprintf(&b, "| idle CPU over %s (tickgate / PostgreSQL / Temporal) | %.2f%% / %.2f%% / %.2f%% |\n", r.idleWindow,
		pct(r.idle.Worker, r.idleWindow), pct(r.idle.Postgres, r.idleWindow), pct(r.idle.Temporal, r.idleWindow))
	fmt.Fprintf(&b, "| bytes per schedule, PostgreSQL (row + indexes) / Temporal | %.0f / %.0f |\n", r.bytesPG, r.bytesTemp)
	if r.resident {
		fmt.Fprintf(&b, "| bytes per schedule in Temporal after the burst (each run looked once after its fire) | %.0f (%d workflows open) |\n",
			r.bytesTempAfterBurst, r.openAfterBurst)
	}
	fmt.Fprintf(&b, "| burst: schedules sharing the tick %s | %d (%d armed by the tick) |\n", r.tick.Format(time.TimeOnly), r.schedules, r.armedByTick)
	fmt.Fprintf(&b, "| burst: lateness from the tick to visible in /events, p50 / p99 / max | %.0f / **%.0f** / %.0f ms |\n", r.p50, r.p99, r.max)
	fmt.Fprintf(&b, "| burst: visible / MISSED / before the tick | %d / %d / %d |\n", r.visible, r.missed, r.early)
	fmt.Fprintf(&b, "| burst: a consumer of /events long-polling at the tick (pages of 5,000): events read, pages | %d, %d |\n", r.consumer.events, r.consumer.pages)
	fmt.Fprintf(&b, "| burst: consumer's lateness from the tick to the event read, p50 / p99 / max | %.0f / **%.0f** / %.0f ms |\n", r.consumer.p50, r.consumer.p99, r.consumer.max)
	if r.visible > 0 {
		fmt.Fprintf(&b, "| burst: CPU per fire, arming to release (tickgate / PostgreSQL / Temporal) | %.3f / %.3f / %.3f ms |\n",
			r.burstCPU.Worker.Ms()/float64(r.visible), r.burstCPU.Postgres.Ms()/float64(r.visible), r.burstCPU.Temporal.Ms()/float64(r.visible))
	}
	native := 0.0
	if r.nativeCreated > 0 {
		native = perS(r.nativeCreated, r.nativeTook)
		fmt.Fprintf(&b, "| native Temporal Schedules created (%d at once, for %s) | %d: **%.0f/s** |\n", *flagParallel, *flagNativeBudget, r.nativeCreated, native)
	}
	oneTime, oneSingle := 0.0, 0.0
	if r.oneTime > 0 {
		oneTime = perS(r.oneTime, r.oneTimeTook)
	}
	if r.oneSingle > 0 {
		oneSingle = perS(r.oneSingle, r.oneSingleTook)
	}
	resident := 0
	if r.resident {
		resident = 1
	}
	fmt.Fprintf(&b, "\nRESULT resident=%d resident_open_per_s=%.0f bytes_per_schedule_temporal_after_burst=%.0f create_per_s=%.0f single_create_per_s=%.0f one_time_create_per_s=%.0f one_time_single_create_per_s=%.0f idle_cpu_pct=%.2f idle_cpu_pct_pg=%.2f idle_cpu_pct_temporal=%.2f bytes_per_schedule_pg=%.0f bytes_per_schedule_temporal=%.0f burst_schedules=%d p50_lateness_ms=%.0f p99_lateness_ms=%.0f max_lateness_ms=%.0f missed=%d early=%d consumer_events=%d consumer_p99_lateness_ms=%.0f native_create_per_s=%.0f\n",
		resident, perS(int(r.opened), r.openTook), r.bytesTempAfterBurst, perS(bulk, r.created), perS(r.single, r.singleTook), oneTime, oneSingle, pct(r.idle.Worker, r.idleWindow), pct(r.idle.Postgres, r.idleWindow), pct(r.idle.Temporal, r.idleWindow),
		r.bytesPG, r.bytesTemp, r.schedules, r.p50, r.p99, r.max, r.missed, r.early, r.consumer.events, r.consumer.p99, native)
	return b.String()
}
