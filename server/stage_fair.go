package server

import (
	"slices"
	"time"
)

// Fairness between tenants when no tenant quota is configured and the
// caps are derived: after a window (100 ms) in which the loop was offered
// more than it admitted, a tenant gets at most its max-min fair share of
// what the loop admitted in that window (reason "fair"), so a tenant that
// sends ten times more than the others cannot take more than theirs by
// sending faster, while tenants that ask for less than the share are
// never limited. A window that admitted everything, or saw one tenant,
// lifts the limit. Tenants (AdmissionPolicy.TenantKey, the peer's
// IP by default) are hashed into fairSlots slots; tenants that share a slot
// share a share.
const (
	fairSlots       = 256 // power of two
	fairWindowNanos = int64(100 * time.Millisecond)
)

// fairShare is one loop's per-tenant accounting for the current window
// and the share the previous window left.
type fairShare struct {
	offered  [fairSlots]uint32 // frames seen per slot this window
	admitted [fairSlots]uint32 // frames admitted per slot this window
	total    uint32            // frames admitted this window
	level    uint32            // the previous window's max-min share per slot; 0: no limit
	until    int64             // end of the window (loop clock); 0: not started
	sorted   [fairSlots]uint32 // scratch for waterLevel
}

// slot hashes a tenant key (FNV-1a) to its slot.
func fairSlot(key []byte) int {
	h := uint32(2166136261)
	for _, b := range key {
		h ^= uint32(b)
		h *= 16777619
	}
	return int(h & (fairSlots - 1))
}

// roll starts a new window at now when the current one is over, setting
// the share from the window that ended.
func (f *fairShare) roll(now int64) {
	if now < f.until {
		return
	}
	f.level = 0
	if f.until != 0 {
		f.level = waterLevel(f.offered[:], f.total, f.sorted[:0])
	}
	clear(f.offered[:])
	clear(f.admitted[:])
	f.total, f.until = 0, now+fairWindowNanos
}

// over counts a frame of slot as offered and reports whether the slot
// already had its share of this window.
func (f *fairShare) over(slot int) bool {
	f.offered[slot]++
	return f.level > 0 && f.admitted[slot] >= f.level
}

// admit counts a frame of slot as admitted.
func (f *fairShare) admit(slot int) {
	f.admitted[slot]++
	f.total++
}

// waterLevel returns the max-min fair share of capacity among demands:
// the level L with Σ min(d, L) = capacity, rounded up; 0 when capacity
// covers every demand or there is one tenant (nobody need be limited). scratch (length 0) holds
// the sorted nonzero demands; it does not allocate when its capacity is
// len(demands).
func waterLevel(demands []uint32, capacity uint32, scratch []uint32) uint32 {
	var sum uint64
	for _, d := range demands {
		if d > 0 {
			scratch = append(scratch, d)
			sum += uint64(d)
		}
	}
	if sum <= uint64(capacity) || len(scratch) < 2 {
		return 0 // everyone served, or one tenant: nothing to share
	}
	slices.Sort(scratch)
	left := uint64(capacity)
	for i, d := range scratch {
		n := uint64(len(scratch) - i)
		if uint64(d)*n >= left {
			return uint32(max(1, (left+n-1)/n))
		}
		left -= uint64(d)
	}
	return 1 // not reached: sum > capacity
}
