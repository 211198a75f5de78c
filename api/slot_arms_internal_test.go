package api

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sendTimes hands out the sent_at of successive attempts of a slot, in the order they were
// sent (PostgreSQL's clock: compared only with each other).
func sendTimes() func() time.Time {
	t := time.Date(2026, 11, 23, 11, 0, 0, 0, time.UTC)
	return func() time.Time {
		t = t.Add(time.Millisecond)
		return t
	}
}

// A claim skips telling its slot only when this process told the slot a deadline that is
// still comfortably ahead and not later than the claim's own.
func TestSlotArmsSignalOnlyWhenTheSlotIsNotDueToWakeInTime(t *testing.T) {
	var a slotArms
	sent := sendTimes()
	k := slotKey{pc: "pc1", slot: 3}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	d1 := now.Add(20 * time.Minute)
	require.True(t, a.needsSignal(k, sent(), d1, now), "never told")
	a.toldAt(k, d1, now)

	later := now.Add(5 * time.Minute)
	require.False(t, a.needsSignal(k, sent(), later.Add(20*time.Minute), later), "told 20m, still ahead: the slot wakes then and finds the claim")
	require.True(t, a.needsSignal(k, sent(), d1.Add(-time.Minute), later), "a deadline before the told one (a task with a shorter timeout)")
	require.True(t, a.needsSignal(k, sent(), d1.Add(time.Hour), d1.Add(-time.Second)), "the told deadline is less than the margin ahead")
	require.True(t, a.needsSignal(k, sent(), d1.Add(time.Hour), d1.Add(time.Minute)), "the told deadline passed")
	require.True(t, a.needsSignal(slotKey{pc: "pc1", slot: 4}, sent(), d1, later), "another slot was never told")

	// Telling a later deadline moves what is remembered forward; an earlier one does not
	// move it back while the later one is ahead.
	a.toldAt(k, d1.Add(10*time.Minute), later)
	a.toldAt(k, d1.Add(5*time.Minute), later)
	require.False(t, a.needsSignal(k, sent(), d1.Add(10*time.Minute), later))
	require.True(t, a.needsSignal(k, sent(), d1.Add(9*time.Minute), later))
}

// A signal that failed is forgotten, so the next claim of the slot signals again; a later
// deadline told meanwhile is kept.
func TestSlotArmsForgetAFailedSignal(t *testing.T) {
	var a slotArms
	sent := sendTimes()
	k := slotKey{pc: "pc1", slot: 1}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	d := now.Add(20 * time.Minute)
	a.toldAt(k, d, now)
	require.False(t, a.needsSignal(k, sent(), d.Add(time.Second), now.Add(time.Second)), "in flight: a claim relies on it")
	a.forget(k, d)
	require.True(t, a.needsSignal(k, sent(), d.Add(time.Second), now.Add(time.Second)), "it failed: signal again")

	a.toldAt(k, d, now)
	a.toldAt(k, d.Add(time.Minute), now)
	a.forget(k, d) // the earlier signal failed after a later one was told
	require.False(t, a.needsSignal(k, sent(), d.Add(2*time.Minute), now.Add(time.Second)))
}

// A claim looked at after a newer claim of the same slot (answers are told concurrently)
// needs no signal, even with an earlier deadline: the newer attempt could only be sent once
// the older one had left the slot. A newer claim with an earlier deadline still signals.
func TestSlotArmsAnOlderClaimOfTheSlotNeedsNoSignal(t *testing.T) {
	var a slotArms
	sent := sendTimes()
	k := slotKey{pc: "pc1", slot: 2}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	older, newer := sent(), sent()
	require.True(t, a.needsSignal(k, newer, now.Add(20*time.Minute), now))
	a.toldAt(k, now.Add(20*time.Minute), now)
	require.False(t, a.needsSignal(k, older, now.Add(20*time.Minute-time.Millisecond), now),
		"its deadline is before the told one, but its attempt has left the slot")
	require.True(t, a.needsSignal(k, sent(), now.Add(time.Minute), now),
		"a newer attempt with an earlier deadline (a shorter timeout)")
	require.True(t, a.needsSignal(slotKey{pc: "pc1", slot: 3}, older, now.Add(20*time.Minute), now), "another slot is its own")
}
