package server

import (
	"time"

	"github.com/sluicenet/sluice/admission"
)

// The worker pool's shedding: its CoDel's derived target, the long cap,
// and what it refuses without serving (a frame past the threshold or the
// long cap, the oldest first under adaptive LIFO, and in ordered mode a
// connection's older frame when a newer one follows), with the count of
// connections whose input waits behind their frame in the pool, which
// decides when the pool's queue is empty.
//
// With a derived target the frame's priority (AdmissionPolicy.Classify)
// sets its cap as on the loop (stage.capFor): a critical frame is refused
// only past the long cap, a best-effort one past C/2, a normal one past C.
// Workers take the most urgent class first, so a frame's predicted wait
// counts only the frames of its class and the more urgent ones. Without
// them the pool refused every class alike: at 200 µs of work, 5x, critical
// frames at 0.3x capacity were served 25-28%, at 2 ms 19%.

// deriveLocked sets the pool CoDel's target from the average service time
// S, as the loop derives its caps: C = 2·S in [0.5 ms, 1 s], target C/2, so
// while the queue is overloaded a frame that waited more than C is shed.
func (p *pool) deriveLocked() {
	p.codel.SetTarget(time.Duration(min(max(autoCapPerService*p.svcNanos, autoPoolMinCapNanos), autoMaxCapNanos) / 2))
	p.capC.Store(int64(p.shedAfter()))
}

// shedAfter returns the pool's C, twice CoDel's target: the wait past which a
// frame is shed under a standing queue, predicted too long, or held too
// long, and the retry-after of the pool's codel refusals. p.mu is held
// (capC holds it for readers without p.mu when the target is derived).
func (p *pool) shedAfter() time.Duration { return 2 * p.codel.Target() }

// derived returns the pool's derived cap and service time (zero unless
// CoDel's target is derived).
func (p *pool) derived() (capNanos, svcNanos time.Duration) {
	if !p.auto {
		return 0, 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.shedAfter(), time.Duration(p.svcNanos)
}

// judge is the pool's verdict on a frame enqueued at enq and leaving the
// queue at now: CoDel's (Dequeue), and with a derived target the long cap
// whatever CoDel says, as the loop's derived law has it: a frame that
// waited more than capLong is refused with reason queue, so latency has a
// bound while CoDel's interval has yet to judge a new standing queue.
// p.mu is held.
func (p *pool) judge(now, enq int64, prio admission.Priority) admission.Verdict {
	v := p.codel.Dequeue(p.e.timeAt(now), p.e.timeAt(enq))
	capLong := p.capLong()
	if capLong > 0 && now-enq > capLong && (v.Admit || prio == admission.PriorityCritical) {
		return admission.Reject(admission.ReasonQueue, time.Duration(capLong))
	}
	if !p.auto {
		return v
	}
	switch prio {
	case admission.PriorityCritical:
		return admission.Admitted() // within the long cap, whatever CoDel says
	case admission.PriorityBestEffort:
		if v.Admit && p.codel.Overloaded() && now-enq > p.capOf(prio) {
			return admission.Reject(admission.ReasonCoDel, p.shedAfter())
		}
	}
	return v
}

// capOf returns the cap C a frame of priority prio waits at most under a
// standing queue, with a derived target: C for normal frames, C/2 for
// best-effort ones, the long cap for critical ones. p.mu is held.
func (p *pool) capOf(prio admission.Priority) int64 {
	c := int64(p.shedAfter())
	if !p.auto {
		return c
	}
	switch prio {
	case admission.PriorityCritical:
		return max(c, p.capLong())
	case admission.PriorityBestEffort:
		return c / 2
	}
	return c
}

// capLong returns the long cap, 8·C for the pool's C (2 × CoDel's
// target): the loop's L without its RejectFlushDelay term, which is for
// refusals held on the loop (measured: 12 ms against 21.5 ms at the
// 1.5 ms floor C then had halved the admitted p99 at 200 µs of work,
// docs/OVERLOAD.md).
// 0 means none: without a derived target, and before the pool has served a
// frame (its service time is unknown, and a first frame that waited
// through a start-up stall is not a standing queue). p.mu is held.
func (p *pool) capLong() int64 {
	if !p.auto || p.svcNanos == 0 {
		return 0
	}
	return autoLongCapFactor * int64(p.shedAfter())
}

// autoPoolMinCapNanos is the floor of the pool's C, lower than the loop's
// (autoMinCapNanos): a frame's wait in the pool is timed from its
// submission, not bounded by the loop's turns and reads, so it does not
// carry their granularity. The admitted p99 of the pool is about C plus a
// frame and the loop's turn for the reply. By hand at 200 µs of work (64
// and 1,000 connections, 2×, 5× and 10×, 2 alternating rounds): p99
// 0.58–0.87 ms against 1.0–1.41 ms at the loop's 0.7 ms floor, frames
// served 0–2% fewer; at 0.9× the same refusals (6–14/s); at 50 µs up to 5%
// fewer (docs/overload/pool-floor-by-hand).
const autoPoolMinCapNanos = int64(500 * time.Microsecond)

// overloaded reports whether the pool's CoDel sees a standing queue.
func (p *pool) overloaded() bool { return p.codel != nil && p.codel.Overloaded() }

// refuseOlder refuses frame of c on loop l, for CoDel, without queueing it:
// the pool is overloaded and a newer frame of c's follows it (see dispatch).
func (p *pool) refuseOlder(l *loop, c *Conn, frame []byte, claim *poolClaim, prio admission.Priority) {
	t := poolTask{claim: claim, prio: prio}
	p.mu.Lock()
	p.refuseLocked(l, c, frame, &t, admission.Reject(admission.ReasonCoDel, p.shedAfter()))
}

// predictedLong reports whether a frame queued now would spend more than
// the pool's cap C (twice CoDel's target) in the pool, by Little's law:
// its wait, the frames queued ahead of it and one in service (whose
// residual the pool does not know, so a whole service) times the service
// time over the workers, plus its own service. Such a frame is refused at
// once, on the loop, instead of waiting its way to a refusal or a late
// answer: CoDel alone judges a frame only as it leaves the queue, so with
// every ordered connection holding one frame in the queue (64
// connections, one worker, 200 µs of work: 13 ms of queue) the admitted
// p99 at 5x was 35 ms. Bounding the wait alone by C (the frames ahead
// times S against C) let a frame queue for up to 3·S behind one in
// service and two ahead: with 20 ms handlers on one worker the admitted
// p99 at 5x was 93 ms against 25 ms at half load, with its wait in the
// queue, the sluice_stages build showed (p99 59 ms); bounding the time in
// the pool brought it to 55-56 ms, and at 2 ms from 9.7-9.9 to 4.9 ms,
// with the same goodput (docs/OVERLOAD.md). Only with a derived target,
// once the service time is known; an empty queue always takes the frame.
// The frames ahead of one of priority prio are those of its class and the
// more urgent ones, and its bound is its cap (capOf). p.mu is held.
func (p *pool) predictedLong(prio admission.Priority) bool {
	if !p.auto || p.svcNanos == 0 || p.codel == nil {
		return false
	}
	ahead := 0
	for i := admission.PriorityCritical; i <= prio; i++ {
		ahead += p.rings[i].n
	}
	if ahead == 0 {
		return false
	}
	w := int64(p.cfg.Workers)
	return int64(ahead+1)*p.svcNanos+p.svcNanos*w > p.capOf(prio)*w
}

// heldLong reports whether a frame held wait nanoseconds on its loop
// (behind its connection's frame in the pool) has waited past C, twice
// CoDel's target: a derived target only. A critical frame is not refused
// for a newer one (see dispatch): its bound is the long cap.
func (p *pool) heldLong(wait int64) bool {
	return p.auto && wait > p.capC.Load() // capC is set with the first target: never 0 when auto
}

// unblock clears c's backlog mark (fPoolBacklog), on its loop.
func (p *pool) unblock(c *Conn) {
	if c.flags&fPoolBacklog != 0 {
		c.flags &^= fPoolBacklog
		p.backlog.Add(-1)
	}
}

// stale reports whether a frame of priority prio that has waited wait
// nanoseconds would be refused at dequeue (judge): past the long cap, or a
// standing queue and wait past its cap (capOf). p.mu is held.
func (p *pool) stale(wait int64, prio admission.Priority) bool {
	if p.codel == nil {
		return false
	}
	if c := p.capLong(); c > 0 && wait > c {
		return true
	}
	return p.codel.Overloaded() && wait > p.capOf(prio)
}
