package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/bench/internal/benchstack"
	"github.com/tickgate/tickgate/internal/dev/agentsim"
)

// With capacity 2, the third claim of a task on a PC refills the first freed slot and the
// fourth the second; a slot freed with nothing left to run is counted, not paired.
func TestRefillPairsTheKthFreedSlotWithTheClaimBeyondCapacity(t *testing.T) {
	o := newObserver()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	cmd := func(id int64) agentsim.Command { return agentsim.Command{ID: id, TaskID: 7, PC: "pc-1", Attempt: 1} }
	o.claimed(cmd(1), at(0))
	o.claimed(cmd(2), at(0))
	o.answering(cmd(1), agentsim.Succeed, at(100))
	o.answered(cmd(1), agentsim.Succeed, http.StatusOK, at(120))
	o.claimed(cmd(3), at(150)) // refills cmd 1's slot: 50 ms
	o.answering(cmd(2), agentsim.Succeed, at(200))
	o.answered(cmd(2), agentsim.Succeed, http.StatusOK, at(230))
	o.claimed(cmd(4), at(300)) // refills cmd 2's slot: 100 ms
	o.answering(cmd(3), agentsim.Succeed, at(400))
	o.answered(cmd(3), agentsim.Succeed, http.StatusOK, at(410))
	o.answering(cmd(4), agentsim.Succeed, at(500))
	o.answered(cmd(4), agentsim.Succeed, http.StatusConflict, at(510)) // not accepted: frees nothing

	refills, unpaired := o.refillLatencies(2)
	require.Equal(t, []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}, refills)
	require.Equal(t, 1, unpaired) // cmd 3's slot: the task had nothing left on pc-1
	require.Equal(t, []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond}, o.resultLatencies())
	require.Equal(t, (120+230+260+210)*time.Millisecond, o.busySlotTime())
}

// Two tasks on one PC of capacity 2, three devices each: each task is steady from its
// second hand-out (the PC full) to its second result (a freed slot nothing refills), and the
// switch between them runs from task 7's drain to task 8's full slots.
func TestPhasesSplitSteadyStateFromTaskSwitches(t *testing.T) {
	o := newObserver()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	run := func(task, id int64, claimed, sent, answered int) {
		c := agentsim.Command{ID: id, TaskID: task, PC: "pc-1", Attempt: 1}
		o.claimed(c, at(claimed))
		o.answering(c, agentsim.Succeed, at(sent))
		o.answered(c, agentsim.Succeed, http.StatusOK, at(answered))
	}
	run(7, 1, 10, 100, 110)
	run(7, 2, 20, 200, 210)  // full at 20
	run(7, 3, 110, 300, 310) // refills 1; 2's slot (freed at 200) drains
	run(8, 4, 400, 500, 510)
	run(8, 5, 450, 600, 610) // full at 450
	run(8, 6, 510, 700, 720) // drain at 600

	p := o.phases(at(0), at(800), 2)
	require.Equal(t, []window{{at(20), at(200)}, {at(450), at(600)}}, p.steady)
	require.Equal(t, []window{{at(0), at(20)}, {at(200), at(450)}, {at(600), at(800)}}, p.switches)
	require.Equal(t, []time.Duration{90 * time.Millisecond}, p.handovers, "task 7's last answer at 310, task 8's first hand-out at 400")

	steady := o.within(p.steady, 2)
	require.Equal(t, 330*time.Millisecond, steady.dur)
	require.Equal(t, 2, steady.executions, "results 1 (answered at 110) and 4 (at 510) were answered within steady windows")
	require.Equal(t, []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}, steady.results,
		"results 1 and 4 were sent within them; 5 was sent at 600, as task 8 drains")
	require.Equal(t, []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}, steady.refills,
		"the slots results 1 and 4 freed were handed their next executions 10 ms after (3 at 110, 6 at 510)")
}

// CPU between two samples counts by the share of the interval a window covers.
func TestCPUWithinCountsTheCoveredShareOfEachInterval(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	snap := func(n int) benchstack.CPUSnapshot {
		return benchstack.CPUSnapshot{Postgres: benchstack.CPU(ms(n)), Worker: benchstack.CPU(ms(2 * n))}
	}
	samples := []cpuSample{{t0, snap(0)}, {t0.Add(ms(100)), snap(100)}, {t0.Add(ms(200)), snap(300)}}
	c := cpuWithin(samples, []window{{t0.Add(ms(50)), t0.Add(ms(150))}})
	require.Equal(t, benchstack.CPU(ms(50+100)), c.Postgres, "half of the first interval's 100 and half of the second's 200")
	require.Equal(t, benchstack.CPU(ms(300)), c.Worker)
}
