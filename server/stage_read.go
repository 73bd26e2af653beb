package server

import (
	"context"
	"time"

	"github.com/sluicenet/sluice/admission"
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
	a := c.adm
	if a == nil {
		return true
	}
	if a.flags&sSlow != 0 {
		return false
	}
	if !c.readable() {
		if edge {
			a.flags &^= sFresh // this edge goes unread: its bytes will be older than the next one's
		}
		return false
	}
	if edge && s.slowReads && s.deferRead(c) {
		return false
	}
	if s.shedDelay {
		s.since = s.arrivalBound(c, false)
	}
	return true
}

// deferRead puts c on the slow list if the bytes it would read cannot be
// proven younger than MaxQueueDelay (see beforeRead), and reports whether
// it did. It reads the clock: the turn may be long.
func (s *stage) deferRead(c *Conn) bool {
	l := s.l
	if l.draining || c.flags&fRdHup != 0 || len(c.in) > 0 && c.flags&fPartial == 0 {
		return false // see end of file and held frames at once
	}
	// the window's judgement only: deferring on a long busy period too
	// (standing) read p99 8.2 and 11 ms in 2 of 9 runs with the
	// generator stopped, against at most 1.3 ms without
	limit, _ := s.capFor(admission.PriorityNormal, s.overloaded())
	if l.e.clock()-s.arrivalBound(c, true) <= limit {
		return false
	}
	c.adm.flags &^= sFresh
	s.park(c, l.now+s.rejDelay, false)
	l.st[cSlowReads]++
	return true
}

// readBudget lowers a read's budget to the most a tenant's byte quota can
// ever admit (ChargeReadBytes with an in-memory quota).
func (s *stage) readBudget(budget int) int {
	if s.readCap > 0 && budget > s.readCap {
		return s.readCap
	}
	return budget
}

// readStart runs before each read(2): with queueing delay on, it reads the
// clock (the start of a read that drains the socket bounds the next bytes'
// arrival) and sets the arrival bound of the frames this read brings. It
// returns the clock reading, or 0.
func (s *stage) readStart(c *Conn, edge bool) int64 {
	s.doneAt = 0 // a read(2) comes between the last handler and the next frame
	if !s.shedDelay || c.adm == nil {
		return 0
	}
	t0 := s.l.e.clock()
	s.since = s.arrivalBound(c, edge)
	return t0
}

// recvStart is readStart for a recv completion (recv mode): the bytes were
// in the kernel before this turn's wait returned, so their arrival bound is
// the turn's (readySince). fresh reports that c holds no earlier bytes;
// otherwise the bound of those, which go first, stands. The bound is kept
// where a draining read's would be, for the held bytes' later dispatch.
func (s *stage) recvStart(c *Conn, fresh bool) {
	s.doneAt = 0
	if a := c.adm; a != nil && s.shedDelay && fresh {
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
	if v, _ := s.lp.ChargeBytes(context.Background(), s.at(s.l.now), s.keyBuf, int64(n)); !v.Admit {
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
	a := c.adm
	if a == nil {
		return
	}
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
	if c.flags&fClosed != 0 || a.flags&sSlow != 0 {
		return
	}
	a.flags &^= sFresh
	s.park(c, s.l.now+int64(s.readRetry), true)
}

// parked reports whether c waits on the slow list (readConn stops).
func (s *stage) parked(c *Conn) bool { return c.adm != nil && c.adm.flags&sSlow != 0 }

// arrivalBound is the earliest moment the bytes c is about to dispatch
// can have arrived (see AdmissionPolicy.MaxQueueDelay): the start of c's
// last draining read and, when c was reported by this turn's events
// (edge) with nothing unread since that read, the previous wait. A
// connection never read has its accept as that read (opened).
func (s *stage) arrivalBound(c *Conn, edge bool) int64 {
	a := c.adm
	since := a.drainedAt
	if edge && a.flags&sFresh != 0 && s.evBound > since {
		since = s.evBound
	}
	return since
}

// park puts c on the slow list, to be read at at; quota marks a wait for
// the tenant's byte quota, which only the time ends.
func (s *stage) park(c *Conn, at int64, quota bool) {
	a := c.adm
	a.flags |= sSlow
	if quota {
		a.flags |= sQuota
	}
	a.slowAt = at
	a.nextSlow = s.slow
	s.slow = c
	if !quota {
		s.slowEarly++
	}
	noteDue(&s.slowDue, at)
}

// noteDue lowers a list's earliest due time (0: empty) to at.
func noteDue(due *int64, at int64) {
	if *due == 0 || at < *due {
		*due = at
	}
}

// releaseSlow moves the slow connections that are due (all but the
// quota-parked ones when the loop had nothing else to do; all once the
// engine drains) to the ready list; the others stay.
func (s *stage) releaseSlow() {
	l := s.l
	all := s.slowNow || l.draining
	s.slowNow = false
	if l.now < s.slowDue && !all {
		return
	}
	c := s.slow
	s.slow, s.slowDue, s.slowEarly = nil, 0, 0
	for c != nil {
		a := c.adm
		next := a.nextSlow
		a.nextSlow = nil
		switch {
		case c.flags&fClosed != 0:
			a.flags &^= sSlow | sQuota
		case l.now >= a.slowAt || all && a.flags&sQuota == 0 || l.draining:
			a.flags &^= sSlow | sQuota
			l.ready(c, fNeedRead)
		default:
			a.nextSlow = s.slow
			s.slow = c
			if a.flags&sQuota == 0 {
				s.slowEarly++
			}
			noteDue(&s.slowDue, a.slowAt)
		}
		c = next
	}
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
		s.l.closeNow(c, ErrShed)
		return true
	case admission.ConnPauseRead:
		s.l.pauseRead(c)
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
	if c.outBytes > 0 && s.l.e.gate.Load()&gateAdmission != 0 {
		return false // global pressure: only a connection that read everything reads more
	}
	return s.lp.CheckConn(int64(c.outBytes+len(c.in)), int64(c.outMsgs), true) == admission.ConnResumeRead
}
