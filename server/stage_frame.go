package server

import (
	"bytes"
	"context"
	"math"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/admission/shed"
	"github.com/sluicenet/sluice/protocol"
)

// The admission stage's frame hook and what follows a refusal: the
// decision for every decoded frame, the idempotency claims it hands to the
// handler or the pool, and the lazy list of connections whose out-queue
// holds only refusals (RejectFlushDelay).

// admitFrame is the frame hook: it reports whether the frame may go on to
// the pool or the handler; false means it was refused and answered (or
// replayed from the idempotency store).
func (s *stage) admitFrame(c *Conn, frame []byte) bool {
	var a *connStage
	if s.auto || s.parksLong() {
		if a = s.of(c); a != nil {
			a.pace.Frame()
			s.light.sent(a)
		}
	}
	if s.fn != nil {
		v := s.admit(c, frame, s.at(s.v.now))
		if !v.Reject {
			return c.closing == nil // closing: it panicked, or closed c
		}
		s.st.refused(reasonOf(v.Reason))
		s.act.answerReject(c, frame, v.Reason, v.RetryAfter)
		return false
	}
	if s.rations && !s.shedDelay && s.classify == nil && s.staleRelease(c) {
		// the worker pool's law times a frame from its submission: what
		// waited out a ration's hold in the kernel would be served that
		// much late (docs/OVERLOAD.md#rationed-reads)
		s.frame.Priority = admission.PriorityNormal // not classified (no Classify)
		s.refuse(c, frame, admission.ReasonQueue, time.Duration(s.rejDelay))
		return false
	}
	if !s.admitPolicy(c, frame) {
		return false
	}
	if a != nil {
		a.refusedRun, a.barren, a.refusedSince = 0, false, 0
	}
	return true
}

// admitPolicy runs the Admitter's order for one frame, then its idempotency
// outcome, then (with the Admitter's CoDel) CoDel on the frame's queueing
// delay and MaxQueueDelay.
func (s *stage) admitPolicy(c *Conn, frame []byte) bool {
	if s.readOver { // ChargeReadBytes: the read that brought this frame was over quota
		s.frame.Priority = admission.PriorityNormal // not classified: counted as normal, not as the last frame's class
		s.refuse(c, frame, admission.ReasonTenant, s.readRetry)
		return false
	}
	f := &s.frame
	f.Tenant = s.key(s.keyBuf[:0], c.remote, nil)
	f.Cost = 1
	if s.costBytes {
		f.Cost = int64(len(frame))
	}
	if s.chargeRds {
		f.Tenant = nil // charged as read
	}
	f.Priority = admission.PriorityNormal
	f.ConnPending = int(c.pending)
	f.IdempotencyKey, f.Op, f.Payload = nil, nil, nil
	if s.classify != nil {
		s.classifyFrame(c, frame, f)
		if c.closing != nil {
			return false // it panicked, or closed c: the frame goes nowhere
		}
		if f.Priority == admission.PriorityCritical {
			if a := s.of(c); a != nil {
				a.critical = true
			}
		}
	}
	v := s.lp.Admit(context.Background(), s.at(s.v.now), f)
	if !v.Admit {
		s.refuse(c, frame, v.Reason, v.RetryAfter)
		return false
	}
	if f.Claimed {
		switch f.Claim.State {
		case admission.ClaimDone:
			// replay the stored reply without running the handler
			if err := c.writeCopy(f.Claim.Response); err != nil {
				s.act.requestClose(c, err)
			}
			return false
		case admission.ClaimInProgress:
			s.refuseOther(c, frame, protocol.ReasonInProgress, f.Claim.RetryAfter)
			return false
		case admission.ClaimMismatch:
			s.refuseOther(c, frame, protocol.ReasonMismatch, 0)
			return false
		}
		s.claim = c // ClaimNew: the handler finishes it (Conn.FrameClaim)
	}
	if s.shedDelay {
		t := s.now()
		slot := -1
		if fs := s.fair; fs != nil {
			fs.Roll(t)
			slot = shed.Slot(f.Tenant)
			// a tenant over its share loses its lower classes first: its
			// critical frames answer only to the delay caps
			// (docs/OVERLOAD.md#fair-shares)
			if fs.Over(slot) && f.Priority != admission.PriorityCritical {
				s.refuse(c, frame, admission.ReasonFair, time.Duration(max(fs.Until()-t, s.rejDelay)))
				return false
			}
		}
		if s.auto {
			s.lp.ObserveDelay(s.at(t), s.at(s.since)) // CoDel only judges: the caps decide
		} else if v := s.lp.Dequeue(s.at(t), s.at(s.since)); !v.Admit {
			s.refuse(c, frame, v.Reason, v.RetryAfter)
			return false
		}
		if limit, r := s.delayCap(c, f.Priority); limit > 0 && t-s.since > limit {
			if slot >= 0 && s.heldBacklog(c) {
				// it waited in the kernel because the loop held its
				// connection: not demand the share divides (shed.Fair.Unoffer)
				s.fair.Unoffer(slot)
			}
			// come back no sooner than this reject may have been held
			s.refuse(c, frame, r, time.Duration(max(limit, s.rejDelay)))
			return false
		}
		s.admitAt = t
		stageAdmit(c.fd, s.since, t)
		if slot >= 0 {
			s.fair.Admit(slot)
		}
	}
	return true
}

// refuse answers a frame refused for an admission reason and counts it. A
// refusal for global pressure (queued bytes, in-flight, memory) also stops
// reading a connection that has output queued: it is not reading what we
// send, and every further frame would only queue another reject.
func (s *stage) refuse(c *Conn, frame []byte, r admission.Reason, retryAfter time.Duration) {
	s.st.refused(r)
	s.st[cRefusedPrioBase+int(s.frame.Priority)]++
	if s.auto {
		if a := s.of(c); a != nil && a.refusedRun < math.MaxUint8 {
			if a.refusedRun == 0 {
				a.refusedSince = s.v.now
			}
			a.refusedRun++
		}
	}
	if s.frame.Priority == admission.PriorityCritical {
		s.rd.crit = true // a read that refuses a critical frame is not held: it would age the next
	}
	s.act.answerReject(c, frame, r.String(), retryAfter)
	if (r == admission.ReasonGlobal || r == admission.ReasonMemory) && c.outBytes > 0 && c.flags&fClosed == 0 {
		c.pauseRead()
	}
}

// refuseOther answers a frame refused for a reason that is not an
// admission reason (the idempotency conflicts) and counts it under
// ReasonNone ("other").
func (s *stage) refuseOther(c *Conn, frame []byte, reason string, retryAfter time.Duration) {
	s.st.refused(admission.ReasonNone)
	s.act.answerReject(c, frame, reason, retryAfter)
}

// admitted returns what the worker pool needs of the frame of c the
// policy just admitted: the priority it gave it (normal without a policy
// or a Classify), which the pool's caps and order follow; its new
// idempotency claim, if any, taken with a copy of its key
// (FrameClaimFrom); and its tenant's fair-share slot (shed.Slot), or -1
// when the pool is not to share by tenant (an AdmitFunc, a tenant quota,
// or the loop's own fair shares).
func (s *stage) admitted(c *Conn) (admission.Priority, *poolClaim, int) {
	if s.fn != nil || s.adm == nil {
		return admission.PriorityNormal, nil, -1
	}
	var claim *poolClaim
	if s.claim == c && s.frame.Claimed && s.frame.Claim.State == admission.ClaimNew {
		s.claim = nil
		claim = &poolClaim{claim: s.frame.Claim, key: bytes.Clone(s.frame.IdempotencyKey), store: s.adm.Idempotency()}
	}
	slot := -1
	if s.poolShares && s.frame.Tenant != nil {
		slot = shed.Slot(s.frame.Tenant)
	}
	return s.frame.Priority, claim, slot
}

// frameClaim returns the idempotency claim the policy made for the frame
// c is handling (Conn.FrameClaim).
func (s *stage) frameClaim(c *Conn) (admission.Claim, bool) {
	if s.claim != c || !s.frame.Claimed {
		return admission.Claim{}, false
	}
	return s.frame.Claim, true
}

// handled is the hook after an inline handler returned: a timed stage
// times it (afterFrame).
func (s *stage) handled(c *Conn) bool {
	if s.timed {
		s.afterFrame()
		stageHandled(c.fd, s.doneAt)
		// with classes, an edge reported while this turn runs is dated
		// from its start: past L/3 of inline work the rest waits, so that
		// the next turn polls it in time for a critical frame's cap L
		// (docs/OVERLOAD.md#priorities)
		return s.auto && s.classify != nil && s.doneAt-s.v.now > s.caps.Long()/3
	}
	return false
}

// rejectQueued runs when answerReject left c's out-queue holding only
// refusals; held reports that it already did before. With
// RejectFlushDelay, such an out-queue is flagged fRejOnly so that the
// flushes hold it back (holdRejects), dated by its first reject. When the
// hold is derived, a new batch of refusals gets the long hold (sLong)
// unless the peer was found to wait for its refusals in the last
// shed.ProbeTime (releaseLazy). A
// new batch of a connection still on a lazy list (its last refusals left
// with a reply) leaves the list: it is held from now.
func (s *stage) rejectQueued(c *Conn, held bool) {
	if s.rejDelay == 0 || c.flags&fOutArmed != 0 {
		return
	}
	a := s.of(c)
	if a == nil {
		return
	}
	now := s.v.now
	c.flags |= fRejOnly
	if !held {
		if a.flags&sLazy != 0 {
			s.unlinkLazy(a)
		}
		a.rejAt, a.rejHeld = now, 0
		if s.lazy[1].hold > s.lazy[0].hold && now >= a.waitsUntil {
			a.flags |= sLong
		} else {
			a.flags &^= sLong
		}
	}
	a.rejHeld++
}

// shortHold ends a connection's long hold at now: its peer waits for its
// refusals; its refusals get the short hold for shed.ProbeTime, and
// then the long one is tried again.
func shortHold(a *connStage, now int64) {
	a.flags &^= sLong
	a.waitsUntil = now + shed.ProbeTime
}

// holdRejects is asked by the flush phase about a connection whose
// out-queue holds only refusals (fRejOnly): while they are younger than
// its hold (the long one with sLong, else RejectFlushDelay) and the engine
// is not draining, c goes on a lazy list and is not written this turn
// (true). A long hold that has gathered shed.RejectBatch refusals ends at
// once, and the next batch is held long again: a peer refused densely gets
// its refusals in batches of that size, and one that pipelines through a
// window of its own is not kept waiting for a whole hold.
func (s *stage) holdRejects(c *Conn) bool {
	a := s.of(c)
	if a == nil {
		return false
	}
	hold := shed.Hold(s.lazy[0].hold, s.lazy[1].hold, a.flags&sLong != 0, a.rejHeld)
	if s.v.draining || s.v.now-a.rejAt >= hold {
		return false
	}
	s.deferRejects(a)
	return true
}

// lazyList is a queue of connections whose refusals are held for the same
// time, in the order of the turns that held them, so its front is its
// first due.
type lazyList struct {
	head, tail *connStage
	hold       int64
}

// deferRejects puts a's connection at the back of its lazy list (once):
// lazy[1] for the long hold, lazy[0] for RejectFlushDelay.
func (s *stage) deferRejects(a *connStage) {
	if a.flags&sLazy != 0 {
		return
	}
	a.flags |= sLazy
	s.st[cLazyFlushes]++
	a.lazyAt, a.lazyQ = s.v.now, 0
	if a.flags&sLong != 0 {
		a.lazyQ = 1
	}
	q := &s.lazy[a.lazyQ]
	a.prevLazy = q.tail
	if q.tail == nil {
		q.head = a
		noteDue(&s.lazyDue, a.lazyAt+q.hold)
	} else {
		q.tail.nextLazy = a
	}
	q.tail = a
}

// unlinkLazy takes a's connection off its lazy list.
func (s *stage) unlinkLazy(a *connStage) {
	q := &s.lazy[a.lazyQ]
	if a.prevLazy == nil {
		q.head = a.nextLazy
	} else {
		a.prevLazy.nextLazy = a.nextLazy
	}
	if a.nextLazy == nil {
		q.tail = a.prevLazy
	} else {
		a.nextLazy.prevLazy = a.prevLazy
	}
	a.prevLazy, a.nextLazy = nil, nil
	a.flags &^= sLazy | sLongPark // a long park's read is due with its refusals' write
}

// releaseLazy moves the lazy connections whose rejects are due (all of
// them once the engine drains) from the fronts of the lazy lists to the
// dirty list; it stops at the first one held less than its list's hold, so
// a turn costs only the connections it releases. A connection whose
// refusals left meanwhile (with a reply, or once due) is dropped. A long
// hold that ends holding a single refusal found a peer that waits for its
// refusals (or one refused too rarely for any hold to batch): its
// refusals get the short hold for shed.ProbeTime.
func (s *stage) releaseLazy() {
	if s.v.now < s.lazyDue && !s.v.draining {
		return
	}
	s.lazyDue = 0
	for i := range s.lazy {
		q := &s.lazy[i]
		for a := q.head; a != nil; a = q.head {
			c := a.c
			if !s.v.draining && s.v.now-a.lazyAt < q.hold {
				noteDue(&s.lazyDue, a.lazyAt+q.hold)
				break
			}
			parked := a.flags&sLongPark != 0
			s.unlinkLazy(a)
			if c.flags&(fClosed|fRejOnly) != fRejOnly || c.out == nil {
				continue
			}
			if a.flags&sLong != 0 && !parked && shed.PeerWaits(a.rejHeld, s.v.now-c.lastActive, q.hold) {
				// the peer waits for its refusals: it sent nothing for
				// the second half of the hold (a long park's read, this
				// turn, adds what it sent meanwhile)
				shortHold(a, s.v.now)
			}
			c.refusalsDue() // the flush phase writes it
			s.act.markDirty(c)
		}
	}
}
