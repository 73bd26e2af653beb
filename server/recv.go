package server

import (
	"os"
	"syscall"
)

// The read path in recv mode (the io_uring backend with its provided buffer
// ring, Dispatcher.RecvMode): the kernel delivers a connection's bytes with
// a recv completion, in a buffer of the loop's shared ring, so the loop
// never calls read(2). A recv stays armed across completions until it has
// brought about its cap, one ring buffer (below 8 KiB in all; one buffer
// when the kernel has no multishot cap and each recv is single), and the
// loop arms the next one (recvMore) only when the connection may read and
// holds nothing: a connection that stops reading (backpressure,
// MaxFramesPerTurn, its read budget, the admission stage's slow list,
// MaxQueuedBytes) leaves the rest in the socket as with epoll, and what
// the recv under way still brings waits in the loop's held table (copied
// out of the ring, so ring buffers go back at the next wait whatever the
// connection does).
//
// Bytes are dispatched from the ring buffer in place, as reads of at most
// the turn's read budget (a Raw frame stays within ReadBudgetBytes); only a
// frame's unparsed head is copied into c.in, as with read(2). The admission
// stage sees each completion as a read whose bytes arrived before this
// turn's wait returned (recvStart).

// recvEvent handles a recv completion for c: data (res bytes), end of file
// (res 0) or the recv's error (a negated errno). The bytes are dispatched
// at once as reads of at most the turn's read budget (so a Raw frame stays
// within ReadBudgetBytes), straight from the provided buffer; what c cannot
// take now is held (heldOf), behind anything held before. more: the recv
// left bytes in the socket (netpoll.More).
func (l *loop) recvEvent(c *Conn, data []byte, res int32, more bool) {
	switch {
	case res < 0:
		l.closeNow(c, os.NewSyscallError("read", syscall.Errno(-res)))
		return
	case res == 0:
		c.flags |= fRdHup | fRecvEOF
		l.readConn(c, true) // what is held first, then the end of file
		return
	case len(data) == 0:
		l.closeNow(c, errPollFailed) // bytes without a buffer: the ring's bookkeeping broke
		return
	}
	if c.flags&(fClosed|fEOF) != 0 || c.closing != nil {
		l.p.RecvOff(int(c.fd)) // closing: input is dropped, as epoll leaves it unread
		return
	}
	c.lastActive = l.now
	l.shed.readStart(c, c.heldLen() == 0)
	if more {
		c.flags |= fRecvMore
	} else {
		c.flags &^= fRecvMore
	}
	l.st[cReads]++
	l.st[cBytesIn] += uint64(len(data)) // after readStart, which opens the read's account of them (rationRead)
	l.shed.readBytes(c, len(data))      // a tenant's byte quota is charged on arrival
	if c.heldLen() > 0 {
		c.holdIn(data)
		l.readConn(c, true)
	} else {
		c.holdIn(l.recvFeed(c, data, true))
		l.recvMore(c)
	}
	l.shed.readEnd(c, 0, !more && c.heldLen() == 0) // a read over the tenant's byte quota parks c
}

// recvFeed dispatches data, bytes c received, as reads of at most the
// turn's remaining read budget each, with readConn's checks (readable,
// frames held, the stage's slow list, MaxQueuedBytes, the budget); it
// returns what c cannot take now. edge is readConn's.
func (l *loop) recvFeed(c *Conn, data []byte, edge bool) []byte {
	c.newReadTurn()
	if !l.shed.beforeRead(c, edge) {
		return data
	}
	for len(data) > 0 {
		if !c.readable() || c.flags&(fHeld|fDeferred) != 0 || len(c.in) > 0 && c.flags&fPartial == 0 {
			return data
		}
		budget := l.readAllowance(c)
		if budget <= 0 {
			return data
		}
		p := data[:min(len(data), budget)]
		data = data[len(p):]
		c.readBytes += len(p)
		if len(c.in) == 0 {
			l.consume(c, p, false) // frames straight from the buffer; a partial rest is copied
		} else if c.appendIn(p) {
			l.consume(c, c.in, true) // the rest of a frame whose head c.in holds
		} else {
			l.closeNow(c, errInBufferFull)
		}
		if c.flags&fClosed != 0 {
			return nil
		}
	}
	return nil
}

// recvResume is readConn in recv mode: frames held in c.in first (as
// readConn does), then the bytes c holds are fed (recvFeed); with
// nothing held any more, the end of file the recv reported is seen, or the
// recv is armed for more.
func (l *loop) recvResume(c *Conn, edge bool) {
	// what the frames fed here cost, as a read's; it drained c if nothing is
	// held and the last recv left the socket empty
	defer func() { l.shed.readEnd(c, 0, c.heldLen() == 0 && c.flags&fRecvMore == 0) }()
	if len(c.in) > 0 && c.flags&(fPartial|fDeferred) == 0 && c.readable() {
		c.newReadTurn()
		l.consume(c, c.in, true)
	}
	if c.heldLen() > 0 && c.flags&fClosed == 0 {
		h := *c.heldOf()
		rest := l.recvFeed(c, h, edge)
		if c.flags&fClosed != 0 {
			return
		}
		k := copy(h, rest)
		l.bp.inBytes -= len(h) - k
		if k > 0 {
			*c.heldOf() = h[:k]
			return
		}
		l.pools.ins.put(h)
		*c.heldOf() = nil
	}
	l.recvMore(c)
}

// recvMore asks for c's next bytes (Dispatcher.RecvOn) once it holds none
// and may read: a recv that ended (at its cap) is armed again only here, and
// RecvOn leaves one still armed alone, so what the loop holds for a
// connection it cannot serve is at most what the recv under way brings
// before its cap (below 8 KiB), and the kernel keeps the rest in the
// socket as with epoll. With nothing held, an end of file the recv
// reported is seen here.
func (l *loop) recvMore(c *Conn) {
	if c.heldLen() > 0 || !c.readable() || c.flags&fHeld != 0 || len(c.in) > 0 && c.flags&fPartial == 0 {
		return
	}
	if c.flags&fRecvEOF != 0 {
		c.peerEOF()
		return
	}
	if c.flags&fDeferred != 0 {
		return
	}
	l.p.RecvOn(int(c.fd))
}

// holdIn appends data to the bytes c received and has not taken yet.
func (c *Conn) holdIn(data []byte) {
	l := c.loop
	if len(data) == 0 || c.flags&fClosed != 0 {
		return
	}
	h := c.heldOf()
	*h = growAppend(&l.pools.ins, *h, data)
	l.bp.inBytes += len(data)
}

// releaseHeld recycles c's held bytes (closing).
func (c *Conn) releaseHeld() {
	l := c.loop
	if c.heldLen() == 0 {
		return
	}
	h := c.heldOf()
	l.bp.inBytes -= len(*h)
	l.pools.ins.put(*h)
	*h = nil
}

// heldOf returns where c's held bytes live: the loop's table by fd, which
// only recv mode uses, so a Conn carries no field for them. The pointer is
// good until the table grows (the next heldOf for a higher fd).
func (c *Conn) heldOf() *[]byte {
	l := c.loop
	if fd := int(c.fd); fd >= len(l.held) {
		grown := make([][]byte, max(64, 2*len(l.held), fd+1))
		copy(grown, l.held)
		l.held = grown
	}
	return &l.held[c.fd]
}

// heldLen returns how many bytes c holds.
func (c *Conn) heldLen() int {
	l := c.loop
	if int(c.fd) < len(l.held) {
		return len(l.held[c.fd])
	}
	return 0
}

// appendIn appends data to c's input (a frame's head, waiting for the
// rest); false, and nothing appended, if that would pass MaxInBufferBytes.
func (c *Conn) appendIn(data []byte) bool {
	l := c.loop
	if len(c.in)+len(data) > l.cfg.MaxInBufferBytes {
		return false
	}
	c.in = growAppend(&l.pools.ins, c.in, data)
	l.bp.inBytes += len(data)
	return true
}

// growAppend appends data to b, moving b to a larger pooled buffer when it
// has no room.
func growAppend(p *inPool, b, data []byte) []byte {
	n := len(b) + len(data)
	if cap(b) < n {
		grown := append(p.get(max(2*cap(b), n)), b...)
		if b != nil {
			p.put(b)
		}
		b = grown
	}
	return append(b, data...)
}
