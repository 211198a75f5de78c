package main

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// report is everything the run measured.
type report struct {
	temporal                    string
	workers                     int
	burst                       burstResult
	native                      *burstResult
	capacity                    *capacityResult
	duplicates, eventDuplicates int64
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
	row("tickgate CPU per fire: Temporal server + worker", "%s ms (server %s + worker %s; /proc utime+stime over the same window; the worker is this process, which then runs only the tickgate workers and a poll of the run count)",
		fmt2(cpuServerWorker), fmt2(perFire(r.burst.cpu.Temporal.Ms())), fmt2(perFire(r.burst.cpu.Worker.Ms())))
	row("tickgate CPU per fire: PostgreSQL (not in cpu_ms_per_fire)", "%s ms", fmt2(perFire(r.burst.cpu.Postgres.Ms())))
	nativeP50, nativeP99 := math.NaN(), math.NaN()
	if r.native != nil {
		n := *r.native
		nativeP50, nativeP99 = n.late.pct(50), n.late.pct(99)
		r.burstRows(row, "native Temporal Schedules", n, "started workflow's start time − its TemporalScheduledStartTime (default policies but overlap ALLOW_ALL, trivial workflow, same server)")
		if n.overlapped {
			row("native CPU per fire", "not attributable: the warm-up burst was still starting at the first measured tick")
		} else if nf := n.fires(); nf > 0 {
			row("native CPU per fire: Temporal server + worker", "%.2f ms (server %.2f + worker %.2f, the worker running the trivial workflow)",
				(n.cpu.Temporal.Ms()+n.cpu.Worker.Ms())/float64(nf), n.cpu.Temporal.Ms()/float64(nf), n.cpu.Worker.Ms()/float64(nf))
		}
		row("p99: native ÷ tickgate", "%s", ratio(nativeP99, r.burst.late.pct(99)))
	} else {
		row("native Temporal Schedules", "not run (-native=false)")
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
	fmt.Fprintf(&b, "\nRESULT burst_schedules=%d p50_lateness_ms=%s p99_lateness_ms=%s native_p50_lateness_ms=%s native_p99_lateness_ms=%s fires_per_s_capacity=%s history_events_per_fire=%s cpu_ms_per_fire=%s duplicates=%d\n",
		r.burst.schedules, fmtMs(r.burst.late.pct(50)), fmtMs(r.burst.late.pct(99)), fmtMs(nativeP50), fmtMs(nativeP99),
		fmtMs(capacity), fmt2(eventsPerFire), fmt2(cpuServerWorker), r.duplicates)
	return b.String()
}

func (r *report) burstRows(row func(string, string, ...any), who string, br burstResult, how string) {
	row(who+": schedules created", "%d in %s", br.schedules, br.created.Round(time.Millisecond))
	row(who+": lateness p50 / p95 / p99 / max", "%s / %s / %s / %s ms over %d expected fires, %d fired (%s)",
		fmtMs(br.late.pct(50)), fmtMs(br.late.pct(95)), fmtMs(br.late.pct(99)), fmtMs(br.late.pct(100)), len(br.late), br.fires(), how)
	for _, p := range br.perBurst {
		row(who+": burst at "+p.tick.Format(time.TimeOnly), "%d/%d fired; the last %s ms after the tick", p.fired, p.expected, fmtMs(p.lastMs))
	}
}

func ratio(a, b float64) string {
	if math.IsInf(a, 1) {
		return "inf (native fires missing)"
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
