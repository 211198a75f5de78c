package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tickgate/tickgate/domain"
)

// report is everything the run measured.
type report struct {
	temporal                    string
	workers                     int
	burst                       burstResult
	wf                          *wfBurstResult
	floor                       *burstResult
	native                      *burstResult
	http, nativeHTTP, httpBig   *httpBurstResult
	big                         *bigBurstResult
	capacity                    *capacityResult
	duplicates, eventDuplicates int64
	traces                      *traceSink // nil: tracing off
}

func (r *report) String() string {
	var b strings.Builder
	row := func(name, format string, args ...any) {
		fmt.Fprintf(&b, "| %s | %s |\n", name, fmt.Sprintf(format, args...))
	}
	fmt.Fprintf(&b, "\n## bench-schedules\n\n| figure | value |\n| --- | --- |\n")
	row("Temporal", "%s", r.temporal)
	row("workload", "%d schedules on `%s` (every tick shared by all), %d measured bursts after %d warm-up; event action; %d tickgate worker(s)",
		r.burst.schedules, *flagCron, len(r.burst.ticks), *flagWarmup, r.workers)
	r.burstRows(row, "tickgate", r.burst, "commit of the transaction that made the fire visible in the feed (its own, or an armed fire's release) − nominal tick")
	fires := r.burst.fires()
	perFire := func(v float64) float64 {
		if fires == 0 || r.burst.overlapped {
			return math.NaN()
		}
		return v / float64(fires)
	}
	if r.burst.overlapped {
		row("tickgate per-fire costs", "not attributable (na): the warm-up burst was still firing at the first measured tick, so the window misses part of the measured bursts' work")
	}
	cpuServerWorker := perFire(r.burst.cpu.Temporal.Ms() + r.burst.cpu.Worker.Ms())
	eventsPerFire := perFire(float64(r.burst.events))
	row("tickgate history events per fire", "%s (%d events of the schedule workflows written in the %s window of the measured bursts ÷ %d fires)",
		fmt2(eventsPerFire), r.burst.events, r.burst.window.Round(time.Millisecond), fires)
	cpuRow(row, "tickgate", &r.burst, "this process then runs only the tickgate workers and a poll of the run count; cpu_ms_per_fire is Temporal + this process")
	wfP50, wfP99, wfMissed := math.NaN(), math.NaN(), "na"
	floorP50, floorP99 := math.NaN(), math.NaN()
	if w := r.wf; w != nil {
		wfP50, wfP99, wfMissed = w.late.pct(50), w.late.pct(99), fmt.Sprint(w.missed())
		row("tickgate workflow burst", "%d schedules on `%s`, workflow action (trivial workflow on the bench's target worker), overlap allow_all, catch-up window %s; %d measured bursts after %d warm-up",
			w.schedules, *flagCron, *flagCatchup, len(w.ticks), *flagWfWarmup)
		r.burstRows(row, "tickgate wf", w.burstResult, "target's first WorkflowTaskStarted in Temporal's history − nominal tick")
		row("tickgate wf: measured runs by status", "%s; MISSED: %d (warm-up: %d more)", statusCounts(w.statuses, len(w.late)), w.missed(), w.warmupMissed)
		cpuRow(row, "tickgate wf", &w.burstResult, "÷ targets whose code began; this process runs the tickgate workers and the target worker")
		if f := r.floor; f != nil {
			floorP50, floorP99 = f.late.pct(50), f.late.pct(99)
			r.burstRows(row, "floor: Temporal alone", *f, "as many target workflows started ahead with start delays ending at one instant, no scheduler: first WorkflowTaskStarted − that instant, same server and worker; no engine starts its targets' code sooner here")
			cpuRow(row, "floor", f, "from before the starts to the last workflow closed, ÷ workflows whose code began; this process starts them and runs the target worker (and the idle tickgate workers)")
		}
	} else {
		row("tickgate workflow burst", "not run (-wf=false)")
	}
	nativeP50, nativeP99 := math.NaN(), math.NaN()
	nativeWfP50, nativeWfP99 := math.NaN(), math.NaN()
	if r.native != nil {
		n := *r.native
		nativeP50, nativeP99 = n.late.pct(50), n.late.pct(99)
		nativeWfP50, nativeWfP99 = n.taskStarted.pct(50), n.taskStarted.pct(99)
		r.burstRows(row, "native Temporal Schedules", n, "started workflow's start time − its TemporalScheduledStartTime (default policies but overlap ALLOW_ALL, trivial workflow, same server and worker)")
		row("native: user code began, p50 / p95 / p99 / max", "%s / %s / %s / %s ms over %d expected runs, %d began (first WorkflowTaskStarted − TemporalScheduledStartTime: the workflow burst's measure)",
			fmtMs(nativeWfP50), fmtMs(n.taskStarted.pct(95)), fmtMs(nativeWfP99), fmtMs(n.taskStarted.pct(100)), len(n.taskStarted), n.taskStarted.fired())
		cpuRow(row, "native", &n, "÷ runs started; this process runs the target worker (and the idle tickgate workers)")
		row("p99: native ÷ tickgate (event burst, start time)", "%s", ratio(nativeP99, r.burst.late.pct(99)))
		if r.wf != nil {
			row("p99: native ÷ tickgate (workflow burst, user code began)", "%s", ratio(nativeWfP99, wfP99))
		}
	} else {
		row("native Temporal Schedules", "not run (-native=false)")
	}
	httpP50, httpP99, httpMax, httpMissed, httpDuplicates, httpSchedules := math.NaN(), math.NaN(), math.NaN(), "na", "na", 0
	nativeHTTPP50, nativeHTTPP99, nativeHTTPMissed, nativeHTTPDuplicates := math.NaN(), math.NaN(), "na", "na"
	if h := r.http; h != nil {
		httpP50, httpP99, httpMax, httpSchedules = h.late.pct(50), h.late.pct(99), h.late.pct(100), h.schedules
		httpMissed, httpDuplicates = fmt.Sprint(h.missed()), fmt.Sprint(h.duplicates)
		row("tickgate http burst", "%d schedules on `%s`, http action POST to a receiver in the bench's process (127.0.0.1, TICKGATE_HTTP_ALLOW), overlap allow_all, catch-up window %s, the retry policy's defaults, created through POST /api/v1/schedules/bulk; %d measured bursts after %d warm-up",
			h.schedules, *flagCron, *flagCatchup, len(h.ticks), *flagHTTPWarmup)
		r.burstRows(row, "tickgate http", h.burstResult, "the receiver's handler entered for the tick's Idempotency-Key, its first request − nominal tick")
		r.httpRows(row, "tickgate http", *h)
		row("tickgate http: measured runs by status", "%s", statusCounts(h.statuses, len(h.late)))
		row("tickgate http: fires retried", "%d of %d (their first attempt, sent by the worker that released them, did not succeed: their delivery workflow retried them)", h.retried, len(h.late))
		cpuRow(row, "tickgate http", &h.burstResult, "÷ requests received; this process runs the tickgate workers, which send the requests, and the receiver")
	} else {
		row("tickgate http burst", "not run (-http 0)")
	}
	if h := r.nativeHTTP; h != nil {
		nativeHTTPP50, nativeHTTPP99 = h.late.pct(50), h.late.pct(99)
		nativeHTTPMissed, nativeHTTPDuplicates = fmt.Sprint(h.missed()), fmt.Sprint(h.duplicates)
		r.burstRows(row, "native http", h.burstResult, "native Temporal Schedules (overlap ALLOW_ALL) starting a workflow that runs one HTTP activity posting to the same receiver, same timeout and retry policy, on the bench's target worker: the receiver's handler entered − TemporalScheduledStartTime")
		r.httpRows(row, "native http", *h)
		cpuRow(row, "native http", &h.burstResult, "÷ requests received; this process runs the target worker, which sends the requests, the receiver (and the idle tickgate workers)")
		row("p99: native ÷ tickgate (http burst, request received)", "%s", ratio(nativeHTTPP99, httpP99))
	} else if r.http != nil {
		row("native http burst", "not run (-native=false)")
	}
	httpBigP99, httpBigSchedules, httpBigMissed, httpRetried := math.NaN(), 0, "na", 0
	if h := r.httpBig; h != nil {
		httpBigP99, httpBigSchedules, httpBigMissed = h.late.pct(99), h.schedules, fmt.Sprint(h.missed())
		row("tickgate big http burst", "%d schedules as the http burst's, posting to a path of their own, the last phase (left firing); %d measured bursts after %d warm-up",
			h.schedules, len(h.ticks), *flagHTTPWarmup)
		r.burstRows(row, "tickgate http big", h.burstResult, "the receiver's handler entered for the tick's Idempotency-Key, its first request − nominal tick")
		r.httpRows(row, "tickgate http big", *h)
		row("tickgate http big: measured runs by status", "%s", statusCounts(h.statuses, len(h.late)))
		row("tickgate http big: fires retried", "%d of %d", h.retried, len(h.late))
		cpuRow(row, "tickgate http big", &h.burstResult, "÷ requests received; this process runs the tickgate workers, which send the requests, and the receiver")
	} else {
		row("tickgate big http burst", "not run (-http-big 0)")
	}
	httpDuplicatesAll := "na"
	if r.http != nil || r.httpBig != nil {
		n := 0
		for _, h := range []*httpBurstResult{r.http, r.httpBig} {
			if h != nil {
				n += h.duplicates
				httpRetried += h.retried
			}
		}
		httpDuplicatesAll = fmt.Sprint(n)
	}
	bigP50, bigP99, bigMissed, bigSchedules := math.NaN(), math.NaN(), "na", 0
	if b := r.big; b != nil {
		bigP50, bigP99, bigMissed, bigSchedules = b.late.pct(50), b.late.pct(99), fmt.Sprint(b.missed()), b.schedules
		row("tickgate big burst", "%d schedules on `%s` from their first tick %s (start_at -big-start-after %s after creation began), event action, catch-up window %s, created %d at a time",
			b.schedules, *flagCron, b.firstTick.Format(time.TimeOnly), *flagBigStartAfter, *flagCatchup, *flagBigParallel)
		r.burstRows(row, "tickgate big", b.burstResult, "commit of the transaction that made the fire visible in the feed − nominal tick, as for the first burst")
		row("tickgate big: measured runs by status", "%s; MISSED: %d", statusCounts(b.statuses, len(b.late)), b.missed())
		cpuRow(row, "tickgate big", &b.burstResult, "from the last warm-up's fires recorded to the last measured tick's; this process runs only the tickgate workers and a poll of the run count")
		for i, w := range b.warmups {
			row("tickgate big: warm-up at "+w.tick.Format(time.TimeOnly), "%d/%d runs recorded (any status), %d fired; the last fire %s ms after the tick (not measured)",
				b.recorded[i], w.expected, w.fired, fmtMs(w.lastMs))
		}
		if !b.settled {
			row("tickgate big: settled", "no: no warm-up tick (at most %d) had a run of every schedule recorded before the next tick; the measured one ran on a stack still catching up", *flagBigWarmupMax)
		}
	} else {
		row("tickgate big burst", "not run (-big=false)")
	}
	capacity := math.NaN()
	if c := r.capacity; c != nil {
		for _, s := range c.steps {
			verdict := "fails"
			if s.pass {
				verdict = "holds"
			}
			row(fmt.Sprintf("capacity step: %d every-second schedules", s.schedules), "%d/%d fired in %s, p50 %s ms, p99 %s ms, %.0f fires/s committed → %s p99 ≤ %s",
				s.fired, s.expected, *flagCapWindow, fmtMs(s.p50), fmtMs(s.p99), s.firesPerS, verdict, *flagCapBound)
		}
		if c.best != nil {
			capacity = c.best.firesPerS
			row("capacity", "%.0f fires/s committed with %d every-second schedules, the most that kept p99 ≤ %s", capacity, c.best.schedules, *flagCapBound)
		} else {
			row("capacity", "no step kept p99 ≤ %s, down to %d schedules (-capacity-min)", *flagCapBound, *flagCapMin)
			capacity = 0
		}
	} else {
		row("capacity", "not measured (run with -capacity)")
	}
	row("duplicate runs (same schedule + tick, S1)", "%d", r.duplicates)
	row("duplicate events (same run)", "%d", r.eventDuplicates)
	row("tracing", "%s", r.traces.describe())
	wfSchedules := 0
	if r.wf != nil {
		wfSchedules = r.wf.schedules
	}
	fmt.Fprintf(&b, "\nRESULT burst_schedules=%d p50_lateness_ms=%s p99_lateness_ms=%s native_p50_lateness_ms=%s native_p99_lateness_ms=%s fires_per_s_capacity=%s history_events_per_fire=%s cpu_ms_per_fire=%s duplicates=%d"+
		" wf_burst_schedules=%d wf_p50_lateness_ms=%s wf_p99_lateness_ms=%s wf_missed=%s native_wf_p50_lateness_ms=%s native_wf_p99_lateness_ms=%s floor_wf_p50_lateness_ms=%s floor_wf_p99_lateness_ms=%s big_burst_schedules=%d big_p50_lateness_ms=%s big_p99_lateness_ms=%s big_missed=%s traces=%s\n",
		r.burst.schedules, fmtMs(r.burst.late.pct(50)), fmtMs(r.burst.late.pct(99)), fmtMs(nativeP50), fmtMs(nativeP99),
		fmtMs(capacity), fmt2(eventsPerFire), fmt2(cpuServerWorker), r.duplicates,
		wfSchedules, fmtMs(wfP50), fmtMs(wfP99), wfMissed, fmtMs(nativeWfP50), fmtMs(nativeWfP99), fmtMs(floorP50), fmtMs(floorP99),
		bigSchedules, fmtMs(bigP50), fmtMs(bigP99), bigMissed, onOff(r.traces != nil))
	// Keys added after the line's first form, at its end so earlier readers still parse it.
	var wf, httpBurst, nativeHTTP, big, httpBigBurst *burstResult
	if r.httpBig != nil {
		httpBigBurst = &r.httpBig.burstResult
	}
	if r.wf != nil {
		wf = &r.wf.burstResult
	}
	if r.http != nil {
		httpBurst = &r.http.burstResult
	}
	if r.nativeHTTP != nil {
		nativeHTTP = &r.nativeHTTP.burstResult
	}
	if r.big != nil {
		big = &r.big.burstResult
	}
	_ = httpDuplicates // the -http phase's alone: in its row
	extra := fmt.Sprintf("http_burst_schedules=%d http_p50_lateness_ms=%s http_p99_lateness_ms=%s http_max_lateness_ms=%s http_missed=%s http_duplicates=%s"+
		" native_http_p50_lateness_ms=%s native_http_p99_lateness_ms=%s native_http_missed=%s native_http_duplicates=%s"+
		" http_p99_ms_%d=%s http_p99_ms_%d=%s http_big_missed=%s http_retried=%d",
		httpSchedules, fmtMs(httpP50), fmtMs(httpP99), fmtMs(httpMax), httpMissed, httpDuplicatesAll,
		fmtMs(nativeHTTPP50), fmtMs(nativeHTTPP99), nativeHTTPMissed, nativeHTTPDuplicates,
		httpSchedules, fmtMs(httpP99), httpBigSchedules, fmtMs(httpBigP99), httpBigMissed, httpRetried)
	for _, k := range []struct {
		prefix string
		b      *burstResult
	}{{"", &r.burst}, {"wf_", wf}, {"floor_", r.floor}, {"native_", r.native}, {"http_", httpBurst}, {"native_http_", nativeHTTP}, {"big_", big}, {"http_big_", httpBigBurst}} {
		extra += " " + cpuKeys(k.prefix, k.b)
	}
	out := b.String()
	return strings.TrimSuffix(out, "\n") + " " + extra + "\n"
}

func (r *report) burstRows(row func(string, string, ...any), who string, br burstResult, how string) {
	row(who+": schedules created", "%d in %s", br.schedules, br.created.Round(time.Millisecond))
	row(who+": lateness p50 / p95 / p99 / max", "%s / %s / %s / %s ms over %d expected fires, %d fired (%s)",
		fmtMs(br.late.pct(50)), fmtMs(br.late.pct(95)), fmtMs(br.late.pct(99)), fmtMs(br.late.pct(100)), len(br.late), br.fires(), how)
	for _, p := range br.perBurst {
		row(who+": burst at "+p.tick.Format(time.TimeOnly), "%d/%d fired; the last %s ms after the tick", p.fired, p.expected, fmtMs(p.lastMs))
	}
}

// httpRows says how many requests each engine's http burst sent more than once, and how
// many of the measured ticks' keys never arrived.
func (r *report) httpRows(row func(string, string, ...any), who string, h httpBurstResult) {
	row(who+": keys never received (measured ticks)", "%d of %d by -drain-timeout %s", h.missed(), len(h.late), *flagDrainTimeout)
	row(who+": duplicate requests", "%d (requests beyond the first of their Idempotency-Key, every tick of the phase, warm-up included)", h.duplicates)
	if h.unkeyed > 0 {
		row(who+": requests without a readable key", "%d", h.unkeyed)
	}
}

// cpuPerFire is each process's CPU over b's window ÷ its fires, in ms: NaN each when the
// window was not measured, had no fire, or missed part of the bursts' work (overlapped).
func (b *burstResult) cpuPerFire() (temporal, worker, postgres float64) {
	nan := math.NaN()
	if b == nil || b.window <= 0 || b.overlapped || b.fires() == 0 {
		return nan, nan, nan
	}
	f := float64(b.fires())
	return b.cpu.Temporal.Ms() / f, b.cpu.Worker.Ms() / f, b.cpu.Postgres.Ms() / f
}

// cpuRow is a path's CPU per fire of each process (benchstack.CPUSnapshot).
func cpuRow(row func(string, string, ...any), who string, b *burstResult, how string) {
	if b.overlapped {
		row(who+": CPU per fire", "not attributable (na): the warm-up burst was still firing at the first measured tick, so the window misses part of the measured bursts' work")
		return
	}
	t, w, p := b.cpuPerFire()
	row(who+": CPU per fire: Temporal / this process / PostgreSQL", "%s / %s / %s ms (Temporal + this process %s; /proc utime+stime over the %s window ÷ %d fires; %s)",
		fmt2(t), fmt2(w), fmt2(p), fmt2(t+w), b.window.Round(time.Millisecond), b.fires(), how)
}

// cpuKeys are a path's CPU per fire RESULT keys, na when it did not run.
func cpuKeys(prefix string, b *burstResult) string {
	t, w, p := b.cpuPerFire()
	return fmt.Sprintf("%scpu_ms_per_fire_temporal=%s %scpu_ms_per_fire_tickgate=%s %scpu_ms_per_fire_pg=%s",
		prefix, fmt2(t), prefix, fmt2(w), prefix, fmt2(p))
}

func ratio(a, b float64) string {
	switch {
	case math.IsInf(a, 1) && math.IsInf(b, 1):
		return "na (both have fires missing at p99)"
	case math.IsInf(a, 1):
		return "inf (native fires missing)"
	case math.IsInf(b, 1):
		return "0 (tickgate fires missing)"
	}
	if b <= 0 || math.IsNaN(a) || math.IsNaN(b) || math.IsInf(b, 1) {
		return "na"
	}
	return fmt.Sprintf("%.1f×", a/b)
}

func fmt2(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmtMs(v)
	}
	return fmt.Sprintf("%.2f", v)
}

// statusCounts lists counts by status, the known statuses first, and how many of the
// expected (schedule, tick) pairs have no run recorded at all.
func statusCounts(c map[domain.RunStatus]int, expected int) string {
	order := []domain.RunStatus{domain.RunSucceeded, domain.RunRunning, domain.RunFailed, domain.RunCanceled,
		domain.RunTerminated, domain.RunSkipped, domain.RunMissed}
	var others []domain.RunStatus
	for s := range c {
		if !slices.Contains(order, s) {
			others = append(others, s)
		}
	}
	slices.Sort(others)
	var parts []string
	recorded := 0
	for _, s := range append(order, others...) {
		if c[s] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", s, c[s]))
			recorded += c[s]
		}
	}
	return strings.Join(append(parts, fmt.Sprintf("no run recorded %d", expected-recorded)), ", ")
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}
