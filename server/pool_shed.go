package server

import (
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/admission/shed"
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
// counts only the frames of its class and the more urgent ones
// (docs/OVERLOAD.md#the-worker-pools-law).

// deriveLocked sets the pool CoDel's target from the average service time
// S by the law the loops follow (shed.Caps, with the pool's floor
// shed.PoolMinCap): C = 2·S, target C/2, so while the queue is overloaded
// a frame that waited more than C is shed.
func (p *pool) deriveLocked() {
	p.codel.SetTarget(p.caps.Target())
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
	return p.shedAfter(), time.Duration(p.caps.Service())
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
// refusals held on the loop. 0 means none: without a derived target, and before the pool has served a
// frame (its service time is unknown, and a first frame that waited
// through a start-up stall is not a standing queue). p.mu is held.
func (p *pool) capLong() int64 {
	if !p.auto || p.caps.Service() == 0 {
		return 0
	}
	return shed.LongCapFactor * int64(p.shedAfter())
}

// overloaded reports whether the pool's CoDel sees a standing queue.
func (p *pool) overloaded() bool { return p.codel != nil && p.codel.Overloaded() }

// offer hands a frame of c that the loop l admitted to the pool; rest is
// the input after it. In ordered mode it applies adaptive LIFO within the
// connection, whose order the pool keeps: under a standing queue, or when
// this frame already waited on the loop past C, and a newer frame of c's
// is already here, the newer one is served and this one refused for CoDel
// without queueing it (not a critical frame: its bound is the long cap).
func (p *pool) offer(l *loop, c *Conn, frame, rest []byte) {
	prio, claim, slot := l.shed.admitted(c)
	ordered := !p.cfg.Unordered
	if ordered && prio != admission.PriorityCritical && (p.overloaded() || p.heldLong(l.now-l.arrived)) && l.frameFollows(c, rest) {
		t := poolTask{claim: claim, prio: prio}
		p.mu.Lock()
		p.refuseLocked(l, c, frame, &t, admission.Reject(admission.ReasonCoDel, p.shedAfter()))
		return
	}
	p.submit(l, c, frame, claim, prio, slot)
	if c.pending > 0 && ordered {
		c.flags |= fPoolWait // the next frame waits for this one (poolDone)
	}
}

// predictedLong reports whether a frame of priority prio queued now would
// spend more than its cap (capOf) in the pool (shed.PredictedLong): the
// frames ahead of it are those of its class and the more urgent ones.
// CoDel alone judges a frame only as it leaves the queue, so such a frame
// is refused at once, on the loop, instead of waiting its way to a refusal
// or a late answer. Only with a derived target, once the service time is
// known. p.mu is held.
func (p *pool) predictedLong(prio admission.Priority) bool {
	if !p.auto || p.caps.Service() == 0 || p.codel == nil {
		return false
	}
	ahead := 0
	for i := admission.PriorityCritical; i <= prio; i++ {
		ahead += p.rings[i].n
	}
	return shed.PredictedLong(ahead, p.cfg.Workers, p.caps.Service(), p.capOf(prio))
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
