package main

import (
	"slices"
	"time"

	"github.com/tickgate/tickgate/bench/internal/benchstack"
)

// A run alternates between steady state and task switches (bench/README.md, "Steady state
// and task switches"). Per task and PC, the PC is full once its capacity-th execution of
// the task is handed out, and starts to drain at its first freed slot that no execution of
// the task can refill (the (n − capacity + 1)-th of its n results). A task's steady window
// runs from the moment every PC is full to the moment the first PC starts to drain; the
// time between one task's drain and the next one's full slots is a task switch (the first
// one is the start-up).

// window is a span of the run.
type window struct{ from, to time.Time }

func (w window) dur() time.Duration { return w.to.Sub(w.from) }

func (w window) holds(t time.Time) bool { return !t.Before(w.from) && t.Before(w.to) }

// phases are a run's steady windows, one per task that had one, and its switches, the
// start-up first; each switch's handover is the time from the task's last result answered
// to the next task's first execution handed out.
type phases struct {
	steady    []window
	switches  []window
	handovers []time.Duration
}

// phases splits the run [start, end] as the agents saw it.
func (o *observer) phases(start, end time.Time, capacity int) phases {
	o.mu.Lock()
	defer o.mu.Unlock()
	type taskPC struct {
		task int64
		pc   string
	}
	type group struct{ claims, freed []time.Time }
	groups := map[taskPC]*group{}
	type span struct{ first, last time.Time } // a task's first hand-out, last answer
	tasks := map[int64]*span{}
	for _, t := range o.commands {
		k := taskPC{t.task, t.pc}
		g := groups[k]
		if g == nil {
			g = &group{}
			groups[k] = g
		}
		s := tasks[t.task]
		if s == nil {
			s = &span{}
			tasks[t.task] = s
		}
		if !t.claimed.IsZero() {
			g.claims = append(g.claims, t.claimed)
			if s.first.IsZero() || t.claimed.Before(s.first) {
				s.first = t.claimed
			}
		}
		if t.freed {
			g.freed = append(g.freed, t.sent)
			if t.answered.After(s.last) {
				s.last = t.answered
			}
		}
	}
	full := map[int64]time.Time{}  // every PC full with the task
	drain := map[int64]time.Time{} // the first PC draining
	for k, g := range groups {
		if len(g.claims) == 0 {
			continue
		}
		slices.SortFunc(g.claims, time.Time.Compare)
		slices.SortFunc(g.freed, time.Time.Compare)
		f := g.claims[min(capacity, len(g.claims))-1]
		if cur, ok := full[k.task]; !ok || f.After(cur) {
			full[k.task] = f
		}
		if i := max(len(g.claims)-capacity, 0); i < len(g.freed) {
			if cur, ok := drain[k.task]; !ok || g.freed[i].Before(cur) {
				drain[k.task] = g.freed[i]
			}
		}
	}
	ids := make([]int64, 0, len(tasks))
	for id := range tasks {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var p phases
	switchFrom := start
	for i, id := range ids {
		f, d := full[id], drain[id]
		if d.IsZero() {
			d = tasks[id].last
		}
		p.switches = append(p.switches, window{switchFrom, f})
		if d.After(f) {
			p.steady = append(p.steady, window{f, d})
			switchFrom = d
		} else {
			switchFrom = f
		}
		if i > 0 {
			p.handovers = append(p.handovers, tasks[id].first.Sub(tasks[ids[i-1]].last))
		}
	}
	p.switches = append(p.switches, window{switchFrom, end})
	return p
}

func total(ws []window) time.Duration {
	var d time.Duration
	for _, w := range ws {
		d += w.dur()
	}
	return d
}

func within(ws []window, t time.Time) bool {
	for _, w := range ws {
		if w.holds(t) {
			return true
		}
	}
	return false
}

// phaseFigures are what the agents saw within some windows: the results answered in them
// (executions), and the latencies of the results sent in them, sorted.
type phaseFigures struct {
	dur        time.Duration
	executions int
	results    []time.Duration
	// refills are the refill end-to-end latencies of the slots freed in the windows.
	refills []time.Duration
}

func (f phaseFigures) perSecond() float64 { return float64(f.executions) / max(f.dur.Seconds(), 1e-9) }

func (o *observer) within(ws []window, capacity int) phaseFigures {
	f := phaseFigures{dur: total(ws)}
	f.refills, _ = o.refillLatenciesWithin(capacity, ws)
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, t := range o.commands {
		if !t.freed {
			continue
		}
		if within(ws, t.answered) {
			f.executions++
		}
		if within(ws, t.sent) {
			f.results = append(f.results, t.answered.Sub(t.sent))
		}
	}
	slices.Sort(f.results)
	return f
}

// cpuSample is the processes' CPU time at one moment of the run.
type cpuSample struct {
	at  time.Time
	cpu benchstack.CPUSnapshot
}

// cpuWithin is the CPU the processes used within the windows: each interval between two
// samples counts by the share of it the windows cover.
func cpuWithin(samples []cpuSample, ws []window) benchstack.CPUSnapshot {
	var c benchstack.CPUSnapshot
	for i := 1; i < len(samples); i++ {
		a, b := samples[i-1], samples[i]
		span := b.at.Sub(a.at)
		if span <= 0 {
			continue
		}
		var covered time.Duration
		for _, w := range ws {
			from, to := maxTime(a.at, w.from), minTime(b.at, w.to)
			if to.After(from) {
				covered += to.Sub(from)
			}
		}
		share := float64(covered) / float64(span)
		d := b.cpu.Sub(a.cpu)
		c.Temporal += benchstack.CPU(float64(d.Temporal) * share)
		c.Worker += benchstack.CPU(float64(d.Worker) * share)
		c.Postgres += benchstack.CPU(float64(d.Postgres) * share)
	}
	return c
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// sampleCPU records the processes' CPU time every interval until the returned function is
// called, which returns the samples (the last one taken then).
func sampleCPU(stack *benchstack.Stack, every time.Duration) func() ([]cpuSample, error) {
	var samples []cpuSample
	var firstErr error
	take := func() {
		c, err := stack.CPU()
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			return
		}
		samples = append(samples, cpuSample{time.Now(), c})
	}
	take()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				take()
				return
			case <-tick.C:
				take()
			}
		}
	}()
	return func() ([]cpuSample, error) {
		close(stop)
		<-done
		return samples, firstErr
	}
}
