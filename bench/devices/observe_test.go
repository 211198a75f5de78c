package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
