package server

import (
	"math"
	"os"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/ioflush"
)

// The write path in recv mode (the io_uring backend with its buffer ring):
// a connection's out-queue is written by a sendmsg submitted through the
// ring, its iovecs the out-queue's segments up to FlushBudgetBytes, with
// the turn's one io_uring_enter; no writev. One send per connection is in
// flight at a time, marked by fOutArmed (as epoll marks a connection
// waiting for EPOLLOUT: the kernel has its output in hand). The segments
// it covers stay in the out-queue, untouched, until its completion
// (sendDone) pops what was sent; replies queued meanwhile are appended
// behind them (chunks never move). A short send leaves the rest for the
// next send, which the dirty list makes in the same turn. The kernel waits
// for room in the socket itself, so there is no EPOLLOUT to arm. A
// connection closed under a send hands its out-queue to the poller, which
// cancels the send and releases the bytes at its completion (orphanOut).

// roomForSend is the EPOLLOUT event of a connection whose send came back
// with EAGAIN (fOutArmed set, nothing sending): the poll is disarmed and
// the send made again.
func (l *loop) roomForSend(c *Conn) {
	if c.flags&fOutArmed == 0 || c.sending != 0 {
		return // a send is in flight (a late edge) or none waits
	}
	c.flags &^= fOutArmed
	if err := l.p.Mod(int(c.fd), connEvents, uint32(c.gen)); err != nil {
		l.closeNow(c, err)
		return
	}
	l.flushSend(c)
}

// flushSend submits one send of c's out-queue, unless one is in flight.
func (l *loop) flushSend(c *Conn) {
	q := c.out
	if q == nil || c.flags&fOutArmed != 0 {
		return
	}
	c.flags &^= fRejOnly | fRejDue
	limit := l.cfg.FlushBudgetBytes
	if limit <= 0 {
		limit = math.MaxInt
	}
	iovs, err := l.p.SendIovecs(min(q.segs.Len(), ioflush.MaxIovecs))
	if err != nil {
		l.closeNow(c, err)
		return
	}
	iovs, bytes := ioflush.Gather(&q.segs, limit, iovs)
	if len(iovs) == 0 {
		c.releaseOut()
		l.finishClose(c)
		return
	}
	if bytes == limit && bytes < c.outBytes {
		l.st[cFlushBudgetSpent]++ // the rest goes with the next send
	}
	l.hists.observeOutQueue(c.outBytes)
	if err := l.p.Send(int(c.fd), iovs); err != nil {
		l.closeNow(c, err)
		return
	}
	c.flags |= fOutArmed
	c.sending = int32(bytes)
	l.st[cFlushes]++
}

// sendDone handles the completion of c's send: res bytes left the out-queue
// (or the send failed with -res), then what flushConn does after a writev:
// the queue freed when empty (else c is dirty for the next send), the
// admission stage's afterFlush, a paused read resumed, a graceful close
// finished.
func (l *loop) sendDone(c *Conn, res int32) {
	q := c.out
	if res == -int32(unix.EAGAIN) {
		// the socket is nonblocking and was full: the kernel gives the send
		// back rather than waiting, so wait for room as epoll does (an
		// EPOLLOUT poll; fOutArmed stays set, sending zero says so)
		c.sending = 0
		l.st[cOutArms]++
		if err := l.p.Mod(int(c.fd), connEventsOut, uint32(c.gen)); err != nil {
			l.closeNow(c, err)
		}
		return
	}
	c.flags &^= fOutArmed
	if res < 0 {
		l.closeNow(c, os.NewSyscallError("sendmsg", unix.Errno(-res)))
		return
	}
	if q == nil {
		return
	}
	n := int(res)
	if n < int(c.sending) {
		l.st[cOutArms]++ // the socket was full: the rest waits for room
	}
	c.sending = 0
	if n > 0 {
		l.st[cBytesOut] += uint64(n)
		c.outBytes -= n
		l.bp.outBytes -= n
		c.progressAt, c.lastActive = l.now, l.now
	}
	before := q.segs.Len()
	ioflush.Consume(&q.segs, n)
	for popped := before - q.segs.Len(); popped > 0; popped-- {
		m, _ := q.msgs.Pop()
		c.outMsgs -= int(m)
	}
	c.publishOut()
	if q.segs.Empty() {
		c.tailChunk = nil
		c.releaseOut()
	} else {
		l.markDirty(c)
	}
	if l.shed.afterFlush(c) {
		return // closed: it broke its own budget
	}
	if c.flags&fPaused != 0 && c.mayResume() {
		c.resumeRead()
	}
	if c.out == nil {
		l.finishClose(c)
	}
}

// orphanOut is closeNow's part for a connection with a send in flight: its
// out-queue goes to the poller, which keeps it until the send completes
// (the kernel may still be reading it), and c lets go of it. It reports
// whether it did.
func (l *loop) orphanOut(c *Conn) bool {
	if c.flags&fOutArmed == 0 || c.out == nil || !l.p.RecvMode() {
		return false
	}
	if !l.p.OrphanSend(int(c.fd), &c.out.segs) {
		return false
	}
	c.out, c.tailChunk = nil, nil
	return true
}
