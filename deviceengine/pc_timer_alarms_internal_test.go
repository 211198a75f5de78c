package deviceengine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A claim skips telling its PC's timer only when this process set an alarm on it that is
// still comfortably ahead and not after the claim's deadline.
func TestPCAlarmsSignalOnlyWhenTheTimerIsNotDueToRingInTime(t *testing.T) {
	var a pcAlarms
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	d1 := now.Add(20 * time.Minute)
	require.True(t, a.needsSignal("pc1", d1, now), "never told")
	a.toldAt("pc1", d1.Add(-alarmLead), now)

	later := now.Add(5 * time.Minute)
	require.False(t, a.needsSignal("pc1", later.Add(20*time.Minute), later), "told 20m, still ahead: the timer wakes then and finds the claim")
	require.False(t, a.needsSignal("pc1", d1.Add(-alarmLead/2), now), "an older claim told after a newer one, within alarmLead of it")
	require.True(t, a.needsSignal("pc1", d1.Add(-time.Minute), later), "a deadline before the told alarm (a task with a shorter timeout)")
	require.True(t, a.needsSignal("pc1", d1.Add(time.Hour), d1.Add(-time.Second)), "the told alarm is less than the margin ahead")
	require.True(t, a.needsSignal("pc1", d1.Add(time.Hour), d1.Add(time.Minute)), "the told alarm passed")
	require.True(t, a.needsSignal("pc2", d1, later), "another PC was never told")

	// An earlier alarm replaces a later one; a later one does not replace an earlier one
	// still ahead.
	a.toldAt("pc1", d1.Add(-10*time.Minute), later)
	a.toldAt("pc1", d1.Add(-5*time.Minute), later)
	require.False(t, a.needsSignal("pc1", d1.Add(-10*time.Minute), later))
	require.True(t, a.needsSignal("pc1", d1.Add(-11*time.Minute), later))
}

// A signal that failed is forgotten, so the next claim on the PC signals again.
func TestPCAlarmsForgetAFailedSignal(t *testing.T) {
	var a pcAlarms
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	w := now.Add(20 * time.Minute)
	a.toldAt("pc1", w, now)
	require.False(t, a.needsSignal("pc1", w.Add(time.Second), now.Add(time.Second)), "in flight: a claim relies on it")
	a.forget("pc1", w.Add(time.Minute))
	require.False(t, a.needsSignal("pc1", w.Add(time.Second), now.Add(time.Second)), "another alarm's failure forgets nothing")
	a.forget("pc1", w)
	require.True(t, a.needsSignal("pc1", w.Add(time.Second), now.Add(time.Second)), "it failed: signal again")
}
