package shed

import (
	"math"
	"slices"
	"time"
)

// Fair shares between tenants (docs/OVERLOAD.md, "Fair shares"): after a
// window in which a server was offered more than it admitted, a tenant
// gets at most its max-min fair share of what was admitted in that window
// (reason fair), so a tenant that sends ten times more than the others
// cannot take more than theirs by sending faster, while tenants that ask
// for less than the share are never limited. A window that admitted
// everything, or saw one tenant, lifts the limit. Tenants are hashed into
// fairSlots slots; tenants that share a slot share a share.
//
// The share is work-conserving: what could have been admitted in a window
// is its admissions scaled by the part of it not spent asleep with every
// limited tenant at its share (at most fairGrowMax times them), because a
// share taken from admissions alone could only shrink. A share under
// fairMinShare frames is coarse, and its window is stretched (at most
// fairMaxWindowNanos) to give about fairMinShare; a window that admitted
// fewer than fairMinShare frames in all is too thin to judge and goes on
// with no limit.
const (
	fairSlots          = 256 // power of two
	fairWindowNanos    = int64(100 * time.Millisecond)
	fairMaxWindowNanos = int64(2 * time.Second)
	fairMinShare       = 16
	fairGrowMax        = 2
)

// Fair is the per-tenant accounting of one server part (a loop, or the
// worker pool) for the current window, and the share the previous window
// left. Its zero value has no share and starts its first window at the
// first Roll. It is not safe for concurrent use. Times are nanoseconds of
// one monotonic clock.
type Fair struct {
	offered  [fairSlots]uint32 // frames seen per slot this window
	admitted [fairSlots]uint32 // frames admitted per slot this window
	total    uint32            // frames admitted this window
	level    uint32            // the previous window's max-min share per slot; 0: no limit
	start    int64             // start of the window (loop clock)
	until    int64             // its end by time; 0: not started
	idleNs   int64             // time asleep in it with every limited slot at its share (AddIdle)
	limited  uint32            // slots the share limits (their demand in the last window was above it)
	full     uint32            // slots at the share in this window
	sorted   [fairSlots]uint32 // scratch for waterLevel
}

// FairSlots is how many slots Slot hashes tenant keys into.
const FairSlots = fairSlots

// Slot hashes a tenant key (FNV-1a) to its slot, in [0, FairSlots).
func Slot(key []byte) int {
	h := uint32(2166136261)
	for _, b := range key {
		h ^= uint32(b)
		h *= 16777619
	}
	return int(h & (fairSlots - 1))
}

// Roll starts a new window at now when the current one is over, setting
// the share from the window that ended, or, when that window admitted
// fewer than fairMinShare frames, lets it go on for another
// fairWindowNanos with no limit.
func (f *Fair) Roll(now int64) {
	if now < f.until {
		return
	}
	f.level, f.limited = 0, 0
	win := fairWindowNanos
	if f.until != 0 {
		span := now - f.start
		if f.total < fairMinShare && span < fairMaxWindowNanos {
			// too thin to judge (a stall, a core taken by another
			// process): a share of a frame or two would lock light
			// tenants out of a stretched window
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

// AllFull reports whether every slot the share limits has had it in this
// window: the loop can admit nothing but the frames of tenants that asked
// for less, so a sleep now is room the share left unused.
func (f *Fair) AllFull() bool { return f.level > 0 && f.full >= f.limited }

// AddIdle adds d nanoseconds spent asleep while AllFull held: room the
// share left unused, which the next share gives back.
func (f *Fair) AddIdle(d int64) { f.idleNs += d }

// Until returns the end of the current window: a tenant refused for its
// share may come back then.
func (f *Fair) Until() int64 { return f.until }

// capacity is what the loop could have admitted in the window that ends
// after span: its admissions scaled by span over the time it was not
// asleep with every limited slot at its share (allFull), at most
// fairGrowMax times them.
func (f *Fair) capacity(span int64) uint32 {
	if f.idleNs <= 0 {
		return f.total
	}
	awake := span - f.idleNs
	if awake*fairGrowMax <= span {
		return f.total * fairGrowMax
	}
	return uint32(uint64(f.total) * uint64(span) / uint64(awake))
}

// Over counts a frame of slot as offered and reports whether the slot
// already had its share of this window.
func (f *Fair) Over(slot int) bool {
	f.offered[slot]++
	return f.level > 0 && f.admitted[slot] >= f.level
}

// Unoffer takes back a frame of slot that Over counted as offered and the
// server then refused as too old because it kept the frame waiting itself
// (a rationed read's hold): not demand the window could have admitted. A
// tenant whose frames all arrive that way (peers that flood and never
// read) would otherwise seem to ask for everything while the window admits
// next to nothing, and the share left to the others would shrink to a
// frame or two.
func (f *Fair) Unoffer(slot int) {
	if f.offered[slot] > 0 {
		f.offered[slot]--
	}
}

// OverPaced is Over with each share paced over its window: at now a slot
// may have had its share's part for the time gone by, plus an eighth of it
// (at least 2), so that a tenant that always has a frame waiting does not
// spend its share at the start of the window.
func (f *Fair) OverPaced(slot int, now int64) bool {
	f.offered[slot]++
	if f.level == 0 {
		return false
	}
	win := f.until - f.start
	part := uint64(f.level) * uint64(max(0, min(now-f.start, win))) / uint64(max(1, win))
	return uint64(f.admitted[slot]) >= min(uint64(f.level), part+uint64(max(2, f.level/8)))
}

// Admit counts a frame of slot as admitted.
func (f *Fair) Admit(slot int) {
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
