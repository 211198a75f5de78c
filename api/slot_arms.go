package api

import (
	"sync"
	"time"
)

// armMargin is how far ahead a deadline a slot was told must still be for a claim to rely
// on it instead of signalling: room for the time from this check to the claim's commit
// being seen (already committed here) and for clock skew between this process and the
// Temporal server's timers.
const armMargin = 2 * time.Second

// slotKey names one numbered slot.
type slotKey struct {
	pc   string
	slot int32
}

// slotArms remembers, per numbered slot, the latest deadline this process told the slot's
// workflow (or is telling it: a signal in flight counts, so claims of a slot arriving while
// Temporal is slow do not each signal; a signal that fails is forgotten, and the claims
// that relied on it fall to the dispatcher's overdue sweep, as after an API crash). The
// workflow wakes at every deadline it was told, and when it wakes it reads the slot in SQL
// and sleeps until the deadline in flight there. So a claim whose deadline is not earlier
// than a told one still ahead needs no signal: the workflow wakes by then, after the claim
// committed, and finds it. Another process's signals only add wake-ups, so several API
// processes stay correct; a restarted one has forgotten and signals again.
//
// It also remembers the newest attempt sent in each slot. Claims are told after their
// answers, concurrently, so an older claim of a slot can be looked at after a newer one. A
// slot holds one attempt at a time: once a later attempt was sent in it, the older one has
// left it (a result, a timeout or a cancel), and its deadline needs no timer.
type slotArms struct {
	mu    sync.Mutex
	slots map[slotKey]slotArm
}

type slotArm struct {
	told   time.Time // the latest deadline told; zero when none or when telling it failed
	newest time.Time // sent_at of the newest attempt sent in the slot that a claim here saw
}

// needsSignal reports whether a claim in slot k of the attempt sent at sentAt with
// deadline d must tell the slot's workflow (now: this process's clock after the claim
// committed). It also records sentAt as the slot's newest attempt when it is.
func (a *slotArms) needsSignal(k slotKey, sentAt, d, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.slots == nil {
		a.slots = map[slotKey]slotArm{}
	}
	arm := a.slots[k]
	if sentAt.Before(arm.newest) {
		return false // a later attempt was sent in the slot: this one has left it
	}
	arm.newest = sentAt
	a.slots[k] = arm
	return arm.told.IsZero() || !arm.told.After(now.Add(armMargin)) || arm.told.After(d)
}

// toldAt records that slot k's workflow was told deadline d (now: this process's clock).
func (a *slotArms) toldAt(k slotKey, d, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.slots == nil {
		a.slots = map[slotKey]slotArm{}
	}
	arm := a.slots[k]
	if arm.told.IsZero() || d.After(arm.told) || !arm.told.After(now) {
		arm.told = d
		a.slots[k] = arm
	}
}

// forget drops what toldAt recorded for slot k if it is still deadline d: telling the slot
// failed.
func (a *slotArms) forget(k slotKey, d time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if arm, ok := a.slots[k]; ok && arm.told.Equal(d) {
		arm.told = time.Time{}
		a.slots[k] = arm
	}
}
