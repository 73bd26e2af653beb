package server

import (
	"math"
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
// lifts the limit. Tenants (AdmissionPolicy.TenantKey, the peer's IP by
// default) are hashed into fairSlots slots; tenants that share a slot
// share a share. The worker pool keeps its own shares of the frames it
// serves, paced over the window (overPaced), when its CoDel target is
// derived and the loops keep none (pool.submit).
//
// The share is work-conserving. With every tenant over the share a
// window admits at most the tenants times the share, so a share taken from
// a window's admissions alone could only stay or shrink: each window that
// admitted a little less (a stall, a long turn) lowered it, and the loop
// then slept with every tenant at its share until the window ended (200 µs
// of work, 5x, ten tenants: 71-78% of capacity served, the server's core
// 70-83% busy). So what the loop could have admitted in a window is its
// admissions scaled by the part of the window it was not asleep with every
// limited tenant at its share (fairShare.capacity, at most fairGrowMax
// times them). Only such sleep counts: a loop that sleeps between two
// tenants' frames while one of them is short of its share may have no room
// for more, and a larger share would go to whichever tenant sends most.
// A share of fewer than fairMinShare frames per window is coarse: rounded
// up, its remainder goes to whichever tenant sends most (2 ms of work, ten
// tenants: 43 frames in 100 ms, a share of 5, the heavy tenant's share
// 1.14-1.16). Such a window is stretched to a whole number of 100 ms
// (at most fairMaxWindowNanos) that gives about fairMinShare. A window
// that admitted fewer than fairMinShare frames in all is too thin to
// judge: it goes on with no limit until it has (at most
// fairMaxWindowNanos), so that a stall does not set a share of a frame or
// two for a stretched window.
const (
	fairSlots          = 256 // power of two
	fairWindowNanos    = int64(100 * time.Millisecond)
	fairMaxWindowNanos = int64(2 * time.Second)
	fairMinShare       = 16
	fairGrowMax        = 2
)

// fairShare is one loop's per-tenant accounting for the current window
// and the share the previous window left.
type fairShare struct {
	offered  [fairSlots]uint32 // frames seen per slot this window
	admitted [fairSlots]uint32 // frames admitted per slot this window
	total    uint32            // frames admitted this window
	level    uint32            // the previous window's max-min share per slot; 0: no limit
	start    int64             // start of the window (loop clock)
	until    int64             // its end by time; 0: not started
	idleNs   int64             // time the loop slept in it with every limited slot at its share (stage.noteIdle)
	limited  uint32            // slots the share limits (their demand in the last window was above it)
	full     uint32            // slots at the share in this window
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
// the share from the window that ended, or, when that window admitted
// fewer than fairMinShare frames, lets it go on for another
// fairWindowNanos with no limit.
func (f *fairShare) roll(now int64) {
	if now < f.until {
		return
	}
	f.level, f.limited = 0, 0
	win := fairWindowNanos
	if f.until != 0 {
		span := now - f.start
		if f.total < fairMinShare && span < fairMaxWindowNanos {
			// too thin to judge: the window goes on, with no limit,
			// until it has admitted fairMinShare frames (at most
			// fairMaxWindowNanos). A share taken from a few admissions
			// (a stall, a core taken by another process) is coarse and
			// stretched the next window up to 2 s, and a light tenant
			// refused in it was told to come back at its end: with six
			// CPU hogs beside TestHammerCannotStarve, each client was
			// refused once with a retry-after of 1.3-2.0 s and served
			// 1-2 frames in the 1.5 s run.
			f.full, f.until = 0, now+fairWindowNanos
			return
		}
		c := f.capacity(span)
		f.level = waterLevel(f.offered[:], c, f.sorted[:0])
		if f.level > 0 && int64(f.level)*fairWindowNanos < fairMinShare*span {
			// coarse: the next window is k·100 ms, its demands and
			// capacity those of this one scaled from span to it
			k := min((fairMinShare*span+int64(f.level)*fairWindowNanos-1)/(int64(f.level)*fairWindowNanos), fairMaxWindowNanos/fairWindowNanos)
			win = k * fairWindowNanos
			for i, d := range f.offered {
				f.offered[i] = uint32(min(uint64(d)*uint64(win)/uint64(span), math.MaxUint32))
			}
			f.level = waterLevel(f.offered[:], uint32(min(uint64(c)*uint64(win)/uint64(span), math.MaxUint32)), f.sorted[:0])
		}
	}
	if f.level > 0 {
		for _, d := range f.offered {
			if d > f.level {
				f.limited++
			}
		}
	}
	clear(f.offered[:])
	clear(f.admitted[:])
	f.total, f.full, f.idleNs, f.start, f.until = 0, 0, 0, now, now+win
}

// allFull reports whether every slot the share limits has had it in this
// window: the loop can admit nothing but the frames of tenants that asked
// for less, so a sleep now is room the share left unused.
func (f *fairShare) allFull() bool { return f.level > 0 && f.full >= f.limited }

// capacity is what the loop could have admitted in the window that ends
// after span: its admissions scaled by span over the time it was not
// asleep with every limited slot at its share (allFull), at most
// fairGrowMax times them.
func (f *fairShare) capacity(span int64) uint32 {
	if f.idleNs <= 0 {
		return f.total
	}
	awake := span - f.idleNs
	if awake*fairGrowMax <= span {
		return f.total * fairGrowMax
	}
	return uint32(uint64(f.total) * uint64(span) / uint64(awake))
}

// over counts a frame of slot as offered and reports whether the slot
// already had its share of this window.
func (f *fairShare) over(slot int) bool {
	f.offered[slot]++
	return f.level > 0 && f.admitted[slot] >= f.level
}

// overPaced is over with each share paced over its window: at now a slot
// may have had its share's part for the time gone by, plus an eighth of it
// (at least 2), so that a tenant that always has a frame waiting does not
// spend its share at the start of the window.
func (f *fairShare) overPaced(slot int, now int64) bool {
	f.offered[slot]++
	if f.level == 0 {
		return false
	}
	win := f.until - f.start
	part := uint64(f.level) * uint64(max(0, min(now-f.start, win))) / uint64(max(1, win))
	return uint64(f.admitted[slot]) >= min(uint64(f.level), part+uint64(max(2, f.level/8)))
}

// admit counts a frame of slot as admitted.
func (f *fairShare) admit(slot int) {
	f.admitted[slot]++
	f.total++
	if f.admitted[slot] == f.level {
		f.full++
	}
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
