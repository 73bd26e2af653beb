package server

import (
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
)

// Engine histograms. Each loop keeps one hist per kind in plain memory it
// owns; an observation is a shift, a bits.Len64, an add to an array slot and
// a bit set in a dirty mask, with no clock read, lock or atomic. Once per
// turn (publish) the loop stores the slots that changed, and the sum, to
// per-loop atomics; Engine.Histograms sums the atomics over loops.
//
// Bounds are powers of two: with shift s, slot 0 counts v < 2^s and slot i
// (0 < i < n) counts 2^(s+i-1) <= v < 2^(s+i), so its inclusive upper bound
// ("le") is 2^(s+i)-1 in the kind's native unit (nanoseconds, bytes,
// events), exact for these integer values; slot n counts the rest.
const (
	hTurn     = iota // loop turn duration, ns
	hLag             // loop lag, ns
	hEvents          // epoll events per turn
	hOutQueue        // out-queue bytes before a flush
	hRequest         // request latency, ns, one observation per frame
	numHists
)

// histSlots bounds a kind's slots (finite buckets plus the overflow); a
// power of two so that masking the index removes the bounds check.
const histSlots = 32

// Layout of each kind: shift, finite buckets, and the unit of one native
// step in the metric's base unit.
const (
	durShift, durBuckets = 10, 22 // < 1.024 µs ... < 2.147 s, then +Inf
	evShift, evBuckets   = 0, 14  // 0, 1, 2-3, ... 4096-8191, then +Inf
	oqShift, oqBuckets   = 6, 20  // < 64 B ... < 32 MiB, then +Inf
)

type histLayout struct {
	shift   uint
	buckets int
	unit    float64
}

var histLayouts = [numHists]histLayout{
	hTurn:     {durShift, durBuckets, 1e-9},
	hLag:      {durShift, durBuckets, 1e-9},
	hEvents:   {evShift, evBuckets, 1},
	hOutQueue: {oqShift, oqBuckets, 1},
	hRequest:  {durShift, durBuckets, 1e-9},
}

// histIndex is v's slot for a kind with the given shift and finite buckets.
func histIndex(v uint64, shift uint, buckets int) int {
	return min(bits.Len64(v>>shift), buckets)
}

// hist is one kind's loop-owned counts.
type hist struct {
	counts [histSlots]uint64
	sum    uint64 // sum of observed values, native unit
	dirty  uint32 // slots changed since the last publish
}

// add counts w observations of v in slot i.
func (h *hist) add(i int, v, w uint64) {
	i &= histSlots - 1
	h.counts[i] += w
	h.sum += v * w
	h.dirty |= 1 << i
}

// histPub is one kind's published counts, read by Engine.Histograms.
type histPub struct {
	counts [histSlots]atomic.Uint64
	sum    atomic.Uint64
}

// loopHists are a loop's histograms: its own counts, their published copy,
// and the frame count the last turn's request observation covered.
type loopHists struct {
	own        [numHists]hist
	pub        [numHists]histPub
	framesSeen uint64 // st[cFrames] when the last turn ended
}

// publishHists stores the slots that changed since the last publish.
func (lh *loopHists) publish() {
	for k := range lh.own {
		h, p := &lh.own[k], &lh.pub[k]
		if h.dirty == 0 {
			continue
		}
		for d := h.dirty; d != 0; d &= d - 1 {
			i := bits.TrailingZeros32(d)
			p.counts[i].Store(h.counts[i])
		}
		p.sum.Store(h.sum)
		h.dirty = 0
	}
}

// observeWait records the wait phase of a turn: the events it returned
// and, for a turn with events, the loop lag. prev is the previous turn's
// clock (the return of the previous wait). A wait that slept was woken by
// its events, which therefore waited no longer than the wake-up (lag 0);
// otherwise an event may have become ready just after the previous wait
// returned and waited until this one, so the lag is the time between the
// two.
func (l *loop) observeWait(n int, prev int64) {
	l.hists.own[hEvents].add(histIndex(uint64(n), evShift, evBuckets), uint64(n), 1)
	if n == 0 {
		return
	}
	var lag uint64
	if !l.slept {
		lag = uint64(max(l.now-prev, 0))
	}
	l.hists.own[hLag].add(histIndex(lag, durShift, durBuckets), lag, 1)
}

// observeTurn records the end of a turn's work at end (loop clock): the
// turn's duration since its wait returned, and, for every frame decoded in
// the turn, the same duration as its request latency. A frame is decoded
// after the wait returned and its inline reply is flushed before end, so
// this bounds each one from above at the cost of one clock read per turn
// instead of two per frame.
func (l *loop) observeTurn(end int64) {
	d := uint64(max(end-l.now, 0))
	i := histIndex(d, durShift, durBuckets)
	l.hists.own[hTurn].add(i, d, 1)
	if f := l.st[cFrames] - l.hists.framesSeen; f > 0 {
		l.hists.framesSeen = l.st[cFrames]
		l.hists.own[hRequest].add(i, d, f)
		l.pace.slowFrames = d >= f*slowFrameNanos
	}
}

// observeOutQueue records a connection's queued output before a flush.
func (lh *loopHists) observeOutQueue(bytes int) {
	v := uint64(bytes)
	lh.own[hOutQueue].add(histIndex(v, oqShift, oqBuckets), v, 1)
}

// Histogram is a distribution read at one moment, summed over loops.
// Buckets are the inclusive upper bounds ("le") of the finite buckets, in
// the metric's base unit (seconds, bytes, events), strictly increasing;
// Counts[i] counts the observations in (Buckets[i-1], Buckets[i]] and
// Counts[len(Buckets)] those above the last bound (per bucket, not
// cumulative), so len(Counts) == len(Buckets)+1 and every observation
// increments exactly one slot; Sum is the sum of the observed values. Each
// loop's Counts and Sum are at most one turn old and may disagree by the
// observations of one turn. A histogram summed over sources is the
// element-wise sum of their Counts and Sums (they must share Buckets). The
// zero value means "not measured". It is the one histogram type of the
// engine and its metrics (package metrics exports it as is).
type Histogram struct {
	Buckets []float64
	Counts  []uint64
	Sum     float64
}

// Count returns the number of observations.
func (h Histogram) Count() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// Validate reports a malformed histogram (ErrBadHistogram): bounds that are
// not finite and strictly increasing, or Counts without exactly one more
// element than Buckets.
func (h Histogram) Validate() error {
	if len(h.Counts) != len(h.Buckets)+1 {
		return fmt.Errorf("%w: %d bounds need %d counts, have %d",
			ErrBadHistogram, len(h.Buckets), len(h.Buckets)+1, len(h.Counts))
	}
	for i, b := range h.Buckets {
		if math.IsNaN(b) || math.IsInf(b, 0) {
			return fmt.Errorf("%w: bound %d is %v", ErrBadHistogram, i, b)
		}
		if i > 0 && b <= h.Buckets[i-1] {
			return fmt.Errorf("%w: bound %d (%v) not above bound %d (%v)", ErrBadHistogram, i, b, i-1, h.Buckets[i-1])
		}
	}
	return nil
}

// EngineHistograms are the engine's distributions, summed over loops.
// Bounds are powers of two (see Histogram for the bucket semantics).
type EngineHistograms struct {
	// LoopTurnSeconds: one observation per turn, from the return of
	// epoll_wait to the end of the flush phase (the sleep excluded).
	LoopTurnSeconds Histogram
	// LoopLagSeconds: one observation per turn with events, the longest
	// an event can have waited between becoming ready and the loop seeing
	// it: the time since the previous wait returned, or 0 when this wait
	// slept (the events woke the loop).
	LoopLagSeconds Histogram
	// EventsPerTurn: one observation per turn, the events epoll_wait
	// returned (0 for turns run for the ready list, inbox or timers).
	EventsPerTurn Histogram
	// OutQueueBytes: one observation per flush, the connection's queued
	// output bytes before its writev.
	OutQueueBytes Histogram
	// RequestSeconds: one observation per decoded frame, the duration of
	// the turn that decoded it (wait return to end of flush), which bounds
	// decode-to-reply-flushed from above for replies written inline and
	// flushed in that turn. Replies flushed in a later turn (EAGAIN, flush
	// budget, replies from other goroutines) are not followed.
	RequestSeconds Histogram
}

// Histograms returns the engine's histograms summed over its loops. It
// takes no lock, allocates the returned slices, and is safe from any
// goroutine.
func (e *Engine) Histograms() EngineHistograms {
	var h [numHists]Histogram
	for k := range h {
		lay := histLayouts[k]
		b := make([]float64, lay.buckets)
		for i := range b {
			b[i] = float64(uint64(1)<<(lay.shift+uint(i))-1) * lay.unit
		}
		counts := make([]uint64, lay.buckets+1)
		var sum uint64
		for _, l := range e.loops {
			p := &l.hists.pub[k]
			for i := range counts {
				counts[i] += p.counts[i].Load()
			}
			sum += p.sum.Load()
		}
		h[k] = Histogram{Buckets: b, Counts: counts, Sum: float64(sum) * lay.unit}
	}
	return EngineHistograms{
		LoopTurnSeconds: h[hTurn],
		LoopLagSeconds:  h[hLag],
		EventsPerTurn:   h[hEvents],
		OutQueueBytes:   h[hOutQueue],
		RequestSeconds:  h[hRequest],
	}
}
