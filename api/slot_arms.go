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
// that relied on it fall to the dispatcher's overdue sweep, as after an API crash). The workflow wakes at every deadline it was told, and when it wakes it reads
// the slot in SQL and sleeps until the deadline in flight there. So a claim whose deadline
// is not earlier than a told one still ahead needs no signal: the workflow wakes by then,
// after the claim committed, and finds it. Another process's signals only add wake-ups, so
// several API processes stay correct; a restarted one has forgotten and signals again.
type slotArms struct {
	mu   sync.Mutex
	told map[slotKey]time.Time
}

// needsSignal reports whether a claim in slot k with deadline d must tell the slot's
// workflow (now: this process's clock after the claim committed).
func (a *slotArms) needsSignal(k slotKey, d, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	told, ok := a.told[k]
	return !ok || !told.After(now.Add(armMargin)) || told.After(d)
}

// toldAt records that slot k's workflow was told deadline d (now: this process's clock).
func (a *slotArms) toldAt(k slotKey, d, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.told == nil {
		a.told = map[slotKey]time.Time{}
	}
	if told, ok := a.told[k]; !ok || d.After(told) || !told.After(now) {
		a.told[k] = d
	}
}

// forget drops what toldAt recorded for slot k if it is still deadline d: telling the slot
// failed.
func (a *slotArms) forget(k slotKey, d time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if told, ok := a.told[k]; ok && told.Equal(d) {
		delete(a.told, k)
	}
}
