package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// Network fault kinds, as the report names them.
const (
	faultLatency           = "latency with jitter, every link"
	faultBandwidth         = "bandwidth limit, every link"
	faultBlackholePG       = "blackhole partition from PostgreSQL (every link to it)"
	faultBlackholeTemporal = "blackhole partition from Temporal (every link to it)"
	faultReset             = "reset connections (RST), every link"
	faultSplitPG           = "asymmetric split: a worker cut from PostgreSQL, not Temporal"
	faultSplitTemporal     = "asymmetric split: a worker cut from Temporal, not PostgreSQL"
)

// faultKinds lists every fault kind in the report's order.
var faultKinds = []string{faultWorkerKill, faultPostgresRestart, faultTemporalRestart, faultAPIKill,
	faultLatency, faultBandwidth, faultBlackholePG, faultBlackholeTemporal, faultReset, faultSplitPG, faultSplitTemporal}

// Steady state, which a network fault's recovery is measured to: every worker and API
// ready, and the every-second event schedules' ticks of a window of steadyWindow ending
// steadyLag ago all fired as scheduled ticks (none late enough to be a catch-up), their
// lateness p99 at most steadyLateness.
const (
	steadyWindow   = 3 * time.Second
	steadyLag      = 3 * time.Second
	steadyLateness = time.Second
)

// planWire puts the profile's network faults one after another on a track of their own,
// from wireStart into the fault phase: each starts once the one before it was lifted and
// the system was steady again, and no sooner than its planned offset. The worker kills go
// on meanwhile; the server restarts come after (planFaults).
func planWire(p Profile, rng *rand.Rand) []plannedFault {
	if p.WireFrom <= 0 {
		return nil
	}
	blackhole := func() time.Duration {
		span := p.BlackholeMax - p.BlackholeMin
		if span <= 0 {
			return p.BlackholeMin
		}
		return p.BlackholeMin + time.Duration(rng.Int64N(int64(span)))
	}
	var plan []plannedFault
	at := p.WireFrom
	add := func(kind string, hold time.Duration) {
		if hold <= 0 && kind != faultReset {
			return
		}
		plan = append(plan, plannedFault{at: at, kind: kind, hold: hold})
		at += hold + p.WireGap
	}
	add(faultLatency, p.LatencyFor)
	add(faultBandwidth, p.BandwidthFor)
	add(faultBlackholePG, blackhole())
	add(faultSplitPG, p.SplitFor)
	if p.ConnectionResets > 0 {
		for i := 0; i < p.ConnectionResets; i++ {
			add(faultReset, resetHold)
		}
	}
	add(faultSplitTemporal, p.SplitFor)
	add(faultBlackholeTemporal, blackhole())
	return plan
}

// resetHold is how long the reset toxic stays: every connection that carries a byte in that
// time is reset, which takes in the pools' and the long polls' connections.
const resetHold = 10 * time.Second

// runWire injects the network plan in order; each fault is lifted after its hold and the
// next waits for the system to be steady again.
func (in *injector) runWire(ctx context.Context, start time.Time, plan []plannedFault) []Injected {
	var done []Injected
	for _, f := range plan {
		sleepCtx(ctx, time.Until(start.Add(f.at)))
		if ctx.Err() != nil {
			break
		}
		r := in.injectWire(ctx, f)
		if r.Err != nil {
			in.logf("chaos: %s (%s): %v", r.Kind, r.Target, r.Err)
		} else {
			in.logf("chaos: %s (%s): held %s, steady again %s after it was lifted", r.Kind, r.Target, r.Down.Round(time.Millisecond), r.Recovery.Round(time.Millisecond))
		}
		done = append(done, r)
	}
	return done
}

// injectWire adds the fault's toxic to its links, holds it, lifts it and waits for the
// steady state; Recovery is from the lift.
func (in *injector) injectWire(ctx context.Context, f plannedFault) Injected {
	p, w := in.p, in.s.wire
	r := Injected{Kind: f.kind, At: time.Now(), Down: f.hold}
	var links []*wireLink
	var t toxic
	switch f.kind {
	case faultLatency:
		links = w.all()
		t = toxic{name: "latency", kind: "latency", downstreamOnly: true,
			attributes: map[string]any{"latency": p.Latency.Milliseconds(), "jitter": p.Jitter.Milliseconds()}}
		r.Target = fmt.Sprintf("%s ± %s on %d links", p.Latency, p.Jitter, len(links))
	case faultBandwidth:
		links = w.all()
		t = toxic{name: "bandwidth", kind: "bandwidth", attributes: map[string]any{"rate": p.BandwidthKBps}}
		r.Target = fmt.Sprintf("%d KB/s per connection on %d links", p.BandwidthKBps, len(links))
	case faultBlackholePG, faultBlackholeTemporal:
		to := endPostgres
		if f.kind == faultBlackholeTemporal {
			to = endTemporal
		}
		links = w.to(to)
		t = toxic{name: "blackhole", kind: "timeout", attributes: map[string]any{"timeout": 0}}
		r.Target = linkNames(links)
	case faultReset:
		links = w.all()
		t = toxic{name: "reset", kind: "reset_peer", attributes: map[string]any{"timeout": 0}}
		r.Target = fmt.Sprintf("%d links", len(links))
	case faultSplitPG, faultSplitTemporal:
		to := endPostgres
		if f.kind == faultSplitTemporal {
			to = endTemporal
		}
		worker := in.s.workers[in.rng.IntN(len(in.s.workers))]
		links = w.between(worker.name, to)
		t = toxic{name: "split", kind: "timeout", attributes: map[string]any{"timeout": 0}}
		r.Target = linkNames(links)
	}
	if r.Err = apply(links, t); r.Err != nil {
		_ = lift(context.Background(), links, t)
		return r
	}
	sleepCtx(ctx, f.hold)
	// Lifted whatever happens to the run's context: the proxies outlive it until the stack
	// closes.
	if r.Err = lift(context.Background(), links, t); r.Err != nil {
		return r
	}
	lifted := time.Now()
	var steadyFrom time.Time
	steadyFrom, r.Err = in.waitSteady(ctx, lifted)
	r.Recovery = steadyFrom.Sub(lifted)
	if r.Err != nil {
		r.Recovery = time.Since(lifted)
	}
	return r
}

// waitSteady waits, up to recoveryTimeout, for the steady state after since, and answers
// when it began: when the last process was ready again or, if later, the start of the
// first window of ticks all fired on time (so the figure does not include the window's own
// length and lag).
func (in *injector) waitSteady(ctx context.Context, since time.Time) (time.Time, error) {
	for _, p := range in.s.services() {
		if err := p.waitReady(ctx, recoveryTimeout); err != nil {
			return time.Time{}, err
		}
	}
	ready := time.Now()
	deadline := time.Now().Add(recoveryTimeout)
	last := ""
	// Windows are tried from the lift on, one second at a time, as their ticks come due.
	for begin := since.Truncate(time.Second).Add(time.Second); time.Now().Before(deadline) && ctx.Err() == nil; {
		if wait := time.Until(begin.Add(steadyWindow + steadyLag)); wait > 0 {
			sleepCtx(ctx, wait)
		}
		ok, why, err := in.onTime(ctx, begin)
		if err == nil && ok {
			if begin.After(ready) {
				return begin, nil
			}
			return ready, nil
		}
		if err == nil {
			begin = begin.Add(time.Second)
		}
		if err != nil {
			why = err.Error()
		}
		last = why
		if err != nil {
			sleepCtx(ctx, 250*time.Millisecond)
		}
	}
	return time.Time{}, fmt.Errorf("not steady within %s of the lift: %s", recoveryTimeout, last)
}

// onTime reports whether the every-second event schedules' ticks of the window
// [begin, begin + steadyWindow) all fired as scheduled ticks with lateness p99 at most
// steadyLateness, read steadyLag after the window (an armed fire's row is settled just after
// its release).
func (in *injector) onTime(ctx context.Context, begin time.Time) (bool, string, error) {
	end := begin.Add(steadyWindow)
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var schedules, fired int64
	var p99 float64
	err := in.pool.QueryRow(qctx, `
		WITH every_second AS (
			SELECT id FROM schedules
			WHERE action->>'kind' = 'event' AND (spec->'interval'->>'every')::bigint = 1)
		SELECT (SELECT count(*) FROM every_second),
		       count(r.id),
		       coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM r.fired_at - r.scheduled_at)), 0)
		FROM schedule_runs r JOIN every_second s ON s.id = r.schedule_id
		WHERE r.trigger = 'scheduled' AND r.fired_at IS NOT NULL AND r.retracted_at IS NULL
		  AND r.scheduled_at >= $1 AND r.scheduled_at < $2`, begin, end).Scan(&schedules, &fired, &p99)
	if err != nil {
		return false, "", fmt.Errorf("steady: %w", err)
	}
	want := schedules * int64(steadyWindow/time.Second)
	lateness := time.Duration(p99 * float64(time.Second))
	why := fmt.Sprintf("%d of %d ticks fired on schedule, lateness p99 %s", fired, want, lateness.Round(time.Millisecond))
	return fired >= want && lateness <= steadyLateness, why, nil
}
