package server

import (
	"github.com/sluicenet/sluice/ioflush"

	"github.com/sluicenet/sluice/server/internal/netpoll"
)

// connEvents is a connection's epoll interest without and with EPOLLOUT.
const (
	connEvents    = netpoll.In | netpoll.RdHup | netpoll.Edge
	connEventsOut = connEvents | netpoll.Out
)

// flushPhase writes each dirty connection once (one budgeted writev) and
// finishes graceful closes whose output is gone. A connection whose
// out-queue holds only refusals asks the admission stage first, which may
// hold them back (AdmissionPolicy.RejectFlushDelay).
func (l *loop) flushPhase() {
	for l.dirtyq.head != nil {
		c := l.dirtyq.head
		l.dirtyq.head = c.nextDirty
		if l.dirtyq.head == nil {
			l.dirtyq.tail = nil
		}
		c.nextDirty = nil
		c.flags &^= fDirty
		if c.flags&fClosed != 0 {
			continue
		}
		if c.flags&fRejOnly != 0 && l.shed.holdRejects(c) {
			continue
		}
		// Skip a connection whose flush budget for this turn is spent (it
		// is on the ready list for the next turn).
		if c.out != nil && c.flags&fNeedFlush == 0 {
			c.refusalsDue()
			l.flushConn(c)
		}
		l.finishClose(c)
	}
}

// flushEarly writes c's replies right after its input was handled rather
// than at the end of the turn, so the peer has them while the loop serves
// the other connections rather than idle until the turn ends. It is still one writev
// per connection per turn in the common case: flushPhase skips a
// connection whose budget this flush spent, one whose queue it emptied has
// no out-queue left, and a connection waiting for EPOLLOUT is left to
// flushPhase as before, as is one holding only refusals.
func (l *loop) flushEarly(c *Conn) {
	if c.flags&(fDirty|fClosed|fOutArmed|fNeedFlush|fRejOnly) != fDirty || c.out == nil {
		return
	}
	l.flushConn(c)
	if l.pace.slowFrames && l.p.RecvMode() {
		l.submitEarly()
	}
}

// slowFrameNanos and earlySubmitNanos decide when the io_uring backend
// submits a turn's sends before the turn ends (submitEarly): when the last
// turn spent at least slowFrameNanos per frame (handlers doing real work;
// an echo costs a few microseconds), every earlySubmitNanos of the turn.
const (
	slowFrameNanos   = 10_000
	earlySubmitNanos = 50_000
)

// submitEarly hands the kernel the sends prepared so far when this turn has
// run earlySubmitNanos since the wait or the last early submission. In recv
// mode a send leaves with the turn's io_uring_enter, at its end; with slow
// handlers that would hold the first replies of a turn for the whole turn,
// where epoll's flushEarly writes at once. A turn of cheap frames never
// gets here, so they keep one enter per turn.
func (l *loop) submitEarly() {
	t := l.e.clock()
	if t-max(l.now, l.pace.submitAt) < earlySubmitNanos {
		return
	}
	l.pace.submitAt = t
	l.st[cEarlySubmits]++
	if err := l.p.SubmitNow(); err != nil {
		l.e.fail(err)
	}
}

// flushConn writes c's out-queue once with the flush budget and acts on the
// result: flushed disarms EPOLLOUT and frees the queue, would-block arms
// EPOLLOUT, budget-spent puts c on the ready list.
func (l *loop) flushConn(c *Conn) {
	q := c.out
	if q == nil {
		return
	}
	if l.p.RecvMode() {
		l.flushSend(c) // through the ring (sendq_linux.go)
		return
	}
	if c.flags&fRejDue != 0 {
		// a write of refusals alone, whether due by its hold or by the
		// end of the connection's ration hold, is part of what refusing
		// costs (docs/OVERLOAD.md#rationed-reads); recv mode's sends are
		// the kernel's part, charged with the turn's wait
		c.flags &^= fRejOnly | fRejDue
		t0 := l.e.clock()
		l.writeOut(c, q)
		l.shed.refusalsWritten(l.e.clock() - t0)
		return
	}
	c.flags &^= fRejOnly // whatever is left is the flusher's (EPOLLOUT, ready list)
	l.writeOut(c, q)
}

// refusalsDue lets an out-queue of refusals alone (fRejOnly) go out at
// the next flush, which charges its write to the ration (fRejDue); any
// other out-queue is left as it is.
func (c *Conn) refusalsDue() {
	if c.flags&fRejOnly != 0 {
		c.flags = c.flags&^fRejOnly | fRejDue
	}
}

// writeOut is flushConn's write of c's out-queue q (epoll).
func (l *loop) writeOut(c *Conn, q *outQueue) {
	before := q.segs.Len()
	l.hists.observeOutQueue(c.outBytes)
	var n int
	var res ioflush.Result
	var err error
	if c.tls != nil {
		n, res, err = l.tlsFlush(c, q, l.cfg.FlushBudgetBytes)
	} else {
		n, res, err = l.flusher.Flush(int(c.fd), &q.segs, l.cfg.FlushBudgetBytes)
	}
	l.st[cFlushes]++
	if n > 0 {
		stageFlushed(l, c.fd)
		l.st[cBytesOut] += uint64(n)
		c.outBytes -= n
		l.bp.outBytes -= n
		c.progressAt, c.lastActive = l.now, l.now
	}
	for popped := before - q.segs.Len(); popped > 0; popped-- {
		m, _ := q.msgs.Pop()
		c.outMsgs -= int(m)
	}
	c.publishOut()
	if q.segs.Empty() {
		c.tailChunk = nil
	}
	if err != nil {
		l.closeNow(c, err)
		return
	}
	switch res {
	case ioflush.Flushed:
		c.releaseOut()
		if c.flags&fOutArmed != 0 {
			c.flags &^= fOutArmed
			if err := l.p.Mod(int(c.fd), connEvents, uint32(c.gen)); err != nil {
				l.closeNow(c, err)
				return
			}
		}
	case ioflush.WouldBlock:
		if c.flags&fOutArmed == 0 {
			c.flags |= fOutArmed
			l.st[cOutArms]++
			if err := l.p.Mod(int(c.fd), connEventsOut, uint32(c.gen)); err != nil {
				l.closeNow(c, err)
				return
			}
		}
	case ioflush.BudgetSpent:
		l.st[cFlushBudgetSpent]++
		l.ready(c, fNeedFlush)
	}
	if l.shed.afterFlush(c) {
		return // closed: it broke its own budget
	}
	if c.flags&fPaused != 0 && c.mayResume() {
		c.resumeRead()
	}
	if res == ioflush.Flushed {
		l.finishClose(c)
	}
}
