package server

import (
	"context"
	"math"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/admission/shed"
)

// The admission stage's read hooks: the arrival bound of the bytes a read
// brings (queueing delay), read charging, and the slow list of connections
// whose reads wait.

// beforeRead decides whether c may be read now; edge reports that this
// turn's events reported it. A connection on the slow list waits there. A
// reported connection that is not readable (paused, closing) leaves its
// edge unread, so its next bytes prove nothing fresh. With slow reads on,
// a reported connection whose waiting bytes cannot be proven younger than
// MaxQueueDelay goes on the slow list: every frame in them would be
// refused, and a batch of refusals read later costs one read and one
// write. Frames already held in c's input keep the bound of its last
// draining read.
func (s *stage) beforeRead(c *Conn, edge bool) bool {
	a := s.of(c)
	if a == nil {
		return true
	}
	if a.flags&(sSlow|sRationed) != 0 {
		return false
	}
	if !c.readable() {
		if edge {
			a.flags &^= sFresh // this edge goes unread: its bytes will be older than the next one's
		}
		return false
	}
	// in recv mode the reads that end a ration's hold go on while they
	// leave bytes behind (rationRead), though each completion comes as
	// an edge
	if edge && s.slowReads && (a.flags&sReleased == 0 || !s.v.recvMode) && s.deferRead(c, a) {
		return false
	}
	if s.shedDelay {
		s.since = s.arrivalBound(a, false)
	}
	s.openRead(c)
	if s.rations && s.rd.t0 == 0 && (s.v.recvMode || !s.shedDelay || len(c.in) > 0 && c.flags&fPartial == 0) {
		// frames held in c.in go before the read, whose readStart dates
		// the rest; recv mode's ready-list path has no readStart
		s.startRead(c, s.e.clock())
	}
	return true
}

// deferRead puts c on the slow list if the bytes it would read cannot be
// proven younger than MaxQueueDelay (see beforeRead), and reports whether
// it did. It reads the clock: the turn may be long.
func (s *stage) deferRead(c *Conn, a *connStage) bool {
	if s.v.draining || c.flags&fRdHup != 0 || len(c.in) > 0 && c.flags&fPartial == 0 {
		return false // see end of file and held frames at once
	}
	// the window's judgement only, not standing: a long busy period alone
	// deferred reads that a paused generator's clients were waiting on
	// (docs/OVERLOAD.md#held-refusals-and-parked-reads)
	limit, _ := s.capFor(admission.PriorityNormal, s.overloaded())
	if s.auto && s.lightConn(a) {
		limit = s.caps.Long() // its frames are admitted up to L
	}
	if s.e.clock()-s.arrivalBound(a, true) <= limit {
		return false
	}
	if s.classify != nil {
		// With classes the bound stays what this edge proved, so that a
		// sparse connection's critical frame is not aged by its whole gap
		// and refused past L. Without classes every frame is normal and
		// the deferral has decided its refusal: the older bound keeps it
		// refused if the judgement flips meanwhile
		// (docs/OVERLOAD.md#priorities).
		a.drainedAt = s.arrivalBound(a, true)
	}
	a.flags &^= sFresh | sLongPark // (left from a park read before its refusals were written)
	longPark := s.parksLong() && a.flags&(sLazy|sLong) == sLazy|sLong && a.pace.Sparse()
	if s.ration.On() && !a.critical && !longPark {
		// refusing takes too much of the loop: not read for the ration's
		// hold rather than RejectFlushDelay (docs/OVERLOAD.md#rationed-reads);
		// a connection that sent a critical frame is not held, a critical
		// frame among its bytes must not wait past L, and a long park
		// batches a sparse connection's refusals already
		s.hold(a, a.drainedAt)
		s.st[cSlowReads]++
		return true
	}
	at := s.v.now + s.rejDelay
	if longPark {
		// A sparse connection whose refusals wait on the long hold: read
		// it once shed.RejectBatch frames are due at its own pace, or when
		// its refusals are written, so that what it sent meanwhile is
		// refused in one read and one write, and not when the loop idles.
		// A dense one is not parked: its window would fill.
		if due := min(a.lazyAt+s.lazy[a.lazyQ].hold, a.pace.BatchDue(s.v.now)); due > at {
			at = due
			a.flags |= sLongPark
		}
	}
	s.park(a, at, false)
	s.st[cSlowReads]++
	return true
}

// readCap returns the most one read may take: what a tenant's byte quota
// can ever admit (ChargeReadBytes with an in-memory quota), or 0.
func (s *stage) readCap() int { return s.maxRead }

// readStart runs before each read(2): with queueing delay on, it reads the
// clock (the start of a read that drains the socket bounds the next bytes'
// arrival) and sets the arrival bound of the frames this read brings. It
// returns the clock reading, or 0.
func (s *stage) readStart(c *Conn, edge bool) int64 {
	s.doneAt = 0 // a read(2) comes between the last handler and the next frame
	if !s.shedDelay {
		return 0
	}
	a := s.of(c)
	if a == nil {
		return 0
	}
	s.openRead(c)
	if s.v.recvMode {
		s.recvStart(a, edge)
		if s.rations {
			s.startRead(c, s.e.clock())
		}
		return 0
	}
	t0 := s.e.clock()
	s.startRead(c, t0)
	s.since = s.arrivalBound(a, edge)
	return t0
}

// recvStart is readStart for a recv completion (recv mode): the bytes were
// in the kernel before this turn's wait returned, so their arrival bound is
// the turn's (readySince). fresh reports that the connection holds no
// earlier bytes; otherwise the bound of those, which go first, stands. The
// bound is kept where a draining read's would be, for the held bytes'
// later dispatch.
func (s *stage) recvStart(a *connStage, fresh bool) {
	if fresh {
		a.drainedAt = s.readySince
		a.flags &^= sFresh
	}
}

// readBytes charges n bytes just read from c to its tenant
// (ChargeReadBytes), before they are decoded; over quota, the frames
// decoded from them are refused (admitPolicy) and readEnd parks c until the
// quota has room.
func (s *stage) readBytes(c *Conn, n int) {
	if !s.chargeRds {
		return
	}
	s.keyBuf = s.key(s.keyBuf[:0], c.remote, nil)
	if v, _ := s.lp.ChargeBytes(context.Background(), s.at(s.v.now), s.keyBuf, int64(n)); !v.Admit {
		s.readOver, s.readRetry = true, max(v.RetryAfter, time.Millisecond)
	}
}

// readEnd runs after a read's frames were dispatched. With queueing delay
// on (t0 != 0) it records what the read tells about the arrival of c's
// next bytes: if it left the socket empty and nothing is held back, they
// all come after t0 and will raise an edge (fresh); otherwise the old bound
// stands and the next edge proves nothing about bytes still waiting. A read
// that took its tenant over the byte quota parks c until the quota has
// room.
func (s *stage) readEnd(c *Conn, t0 int64, drained bool) {
	a := s.of(c)
	if a == nil {
		return
	}
	if s.auto || s.parksLong() {
		a.pace.Read(s.v.now)
	}
	s.rationRead(c, a, !drained || c.flags&fHeld != 0 || len(c.in) > 0 && c.flags&fPartial == 0)
	if t0 != 0 {
		if drained && c.flags&(fHeld|fClosed) == 0 && (len(c.in) == 0 || c.flags&fPartial != 0) {
			a.drainedAt = t0
			a.flags |= sFresh
		} else {
			a.flags &^= sFresh
		}
	}
	if !s.readOver {
		return
	}
	s.readOver = false
	if c.flags&fClosed != 0 || a.flags&(sSlow|sRationed) != 0 {
		return
	}
	a.flags &^= sFresh
	s.park(a, s.v.now+int64(s.readRetry), true)
}

// arrivalBound is the earliest moment the bytes c is about to dispatch
// can have arrived (see AdmissionPolicy.MaxQueueDelay): the start of c's
// last draining read and, when c was reported by this turn's events
// (edge) with nothing unread since that read, the previous wait. A
// connection never read has its accept as that read (opened).
func (s *stage) arrivalBound(a *connStage, edge bool) int64 {
	since := a.drainedAt
	if edge && a.flags&sFresh != 0 && s.evBound > since {
		since = s.evBound
	}
	return since
}

// park puts c on the slow list, to be read at at; quota marks a wait for
// the tenant's byte quota, which only the time ends. Neither a quota park
// nor a long one (sLongPark) is read early by an idle loop.
func (s *stage) park(a *connStage, at int64, quota bool) {
	a.flags |= sSlow
	a.c.flags |= fDeferred
	if quota {
		a.flags |= sQuota
	}
	a.slowAt = at
	s.linkSlow(a)
}

// linkSlow puts c, flagged and dated already, at the head of the slow list
// and counts it: in slowEarly unless a quota or long park, in slowLong if
// a long park.
func (s *stage) linkSlow(a *connStage) {
	a.nextSlow = s.slow
	s.slow = a
	if a.flags&(sQuota|sLongPark) == 0 {
		s.slowEarly++
	}
	if a.flags&sLongPark != 0 {
		s.slowLong++
	}
	noteDue(&s.slowDue, a.slowAt)
}

// noteDue lowers a list's earliest due time (0: empty) to at.
func noteDue(due *int64, at int64) {
	if *due == 0 || at < *due {
		*due = at
	}
}

// releaseSlow moves the slow connections that are due (all but the
// quota and long parks when the loop had nothing else to do; all once the
// engine drains) to the ready list; the others stay.
func (s *stage) releaseSlow() {
	all := s.slowNow || s.v.draining
	firstDue := int64(math.MinInt64) // with slowFirst: release the long parks due by then
	if s.slowFirst {
		firstDue = s.longParksDueFirst()
	}
	s.slowNow, s.slowFirst = false, false
	if s.v.now < s.slowDue && !all && firstDue == math.MinInt64 {
		return
	}
	a := s.slow
	s.slow, s.slowDue, s.slowEarly, s.slowLong = nil, 0, 0, 0
	for a != nil {
		c := a.c
		next := a.nextSlow
		a.nextSlow = nil
		switch {
		case c.flags&fClosed != 0:
			a.flags &^= sSlow | sQuota
			c.flags &^= fDeferred
		case s.v.now >= a.slowAt || all && a.flags&(sQuota|sLongPark) == 0 || s.v.draining:
			a.flags &^= sSlow | sQuota
			c.flags &^= fDeferred
			s.act.ready(c, fNeedRead)
		case a.flags&sLongPark != 0 && a.slowAt <= firstDue:
			// read early, for a loop short of admissible frames: its
			// refusals still wait for their hold
			a.flags &^= sSlow | sLongPark
			c.flags &^= fDeferred
			s.act.ready(c, fNeedRead)
		default:
			s.linkSlow(a)
		}
		a = next
	}
}

// longParksDueFirst returns the due time of the shed.IdleParkReads-th long
// park due first (or of the last one, if there are fewer): releaseSlow
// reads the long parks due by then. It walks the slow list, which an idle
// loop can afford.
func (s *stage) longParksDueFirst() int64 {
	const k = shed.IdleParkReads
	var first [k]int64
	n := 0
	for a := s.slow; a != nil; a = a.nextSlow {
		if a.flags&sLongPark == 0 {
			continue
		}
		if n < k {
			first[n] = a.slowAt
			n++
			continue
		}
		last := 0 // the latest of the first k so far
		for i := 1; i < n; i++ {
			if first[i] > first[last] {
				last = i
			}
		}
		if a.slowAt < first[last] {
			first[last] = a.slowAt
		}
	}
	due := int64(math.MinInt64)
	for _, at := range first[:n] {
		due = max(due, at)
	}
	return due
}

// afterFlush applies the policy's per-connection budgets after c was
// flushed: it reports true when c broke its Max and was closed (ErrShed).
// Pausing above High is applied here; resuming is decided with the
// engine's own watermarks (mayResume).
func (s *stage) afterFlush(c *Conn) bool {
	if s.lp == nil || c.flags&fClosed != 0 {
		return false
	}
	switch s.lp.CheckConn(int64(c.outBytes+len(c.in)), int64(c.outMsgs), c.flags&fPaused != 0) {
	case admission.ConnClose:
		s.act.closeNow(c, ErrShed)
		return true
	case admission.ConnPauseRead:
		c.pauseRead()
	}
	return false
}

// mayResume reports whether the policy lets a paused connection read
// again: not while the policy's gate holds the listener closed (unless c
// read everything it was sent), and only at or below its per-connection
// budgets' Low.
func (s *stage) mayResume(c *Conn) bool {
	if s.lp == nil {
		return true
	}
	if c.outBytes > 0 && s.e.gate.Load()&gateAdmission != 0 {
		return false // global pressure: only a connection that read everything reads more
	}
	return s.lp.CheckConn(int64(c.outBytes+len(c.in)), int64(c.outMsgs), true) == admission.ConnResumeRead
}
