package server

import (
	"os"

	"golang.org/x/sys/unix"
)

// readConn reads c until the socket is drained, its read budget for this
// turn is spent (then c goes on the ready list: under EPOLLET no new edge
// would come for bytes already there), or reading stops (backpressure,
// close, end of file, the admission stage). Each read's frames are
// dispatched before the next read. edge reports that this turn's events
// reported c (rather than the ready list), which the admission stage needs
// to bound when the bytes arrived.
//
// A read that returns fewer bytes than asked means the socket was drained:
// for stream sockets under EPOLLET, data that arrives after such a read
// raises a new edge (epoll(7); TestEdgeShortRead pins it), so the loop does
// not spend a second read(2) to collect EAGAIN. The exception is a peer that
// has shut down writing (EPOLLRDHUP seen): its FIN may already be queued
// behind the data, and no edge will come for it, so the loop reads on until
// end of file or EAGAIN (TestEdgeShortReadFIN).
func (l *loop) readConn(c *Conn, edge bool) {
	if l.p.RecvMode() {
		l.recvResume(c, edge) // bytes come with completions (recv.go), not read(2)
		return
	}
	if !l.shed.beforeRead(c, edge) {
		return
	}
	if !c.readable() {
		return
	}
	c.newReadTurn()
	if len(c.in) > 0 && c.flags&fPartial == 0 { // frames held back by backpressure or MaxFramesPerTurn
		l.consume(c, c.in, true)
		if !c.readable() || c.flags&fHeld != 0 {
			l.shed.readEnd(c, 0, false) // what these frames cost, as a read's
			return
		}
	}
	for {
		budget := l.readAllowance(c)
		if budget <= 0 {
			return
		}
		n, want, en := l.readOnce(c, budget, edge)
		switch {
		case en == unix.EINTR:
			continue
		case en == unix.EAGAIN:
			return
		case en != 0:
			l.closeNow(c, os.NewSyscallError("read", en))
			return
		case c.flags&fClosed != 0:
			return
		case n == 0:
			c.peerEOF()
			return
		}
		if !c.readable() || c.flags&(fHeld|fDeferred) != 0 || n < want && c.flags&fRdHup == 0 {
			return
		}
	}
}

// newReadTurn starts c's read budget and frame count afresh in a turn it
// has not read in yet (frames held by MaxFramesPerTurn may go again).
func (c *Conn) newReadTurn() {
	l := c.loop
	if c.readTurn != l.turn {
		c.readTurn, c.readBytes, c.turnFrames = l.turn, 0, 0
		c.flags &^= fHeld
	}
}

// readAllowance returns how many bytes c may read now: what is left of
// this turn's read budget, lowered at MaxQueuedBytes (readWhileOver) and
// by the admission stage (a tenant's byte quota). It returns 0 when c may
// read nothing more this turn; a spent budget puts c on the ready list.
func (l *loop) readAllowance(c *Conn) int {
	budget := l.cfg.ReadBudgetBytes - c.readBytes
	if l.bp.overQueued(l.cfg.MaxQueuedBytes) && !c.readWhileOver(&budget) {
		return 0
	}
	if rc := l.shed.readCap(); rc > 0 && budget > rc {
		budget = rc
	}
	if budget <= 0 {
		l.st[cReadBudgetSpent]++
		l.ready(c, fNeedRead)
		return 0
	}
	return budget
}

// smallTailBytes: an unparsed tail up to this size is copied to the front of
// the loop buffer and the next read appends to it there; a larger one (a big
// frame in progress) is read into directly.
func smallTailBytes(buf []byte) int { return min(16<<10, len(buf)/2) }

// readOnce does one read(2) of at most budget bytes for c and dispatches it.
// want is what the read asked for. The admission stage's read hooks run
// around it: readStart before the syscall, readBytes before the bytes are
// decoded, readEnd after their frames were dispatched.
func (l *loop) readOnce(c *Conn, budget int, edge bool) (n, want int, en errno) {
	t0 := l.shed.readStart(c, edge)
	small := len(c.in) <= smallTailBytes(l.buf)
	k := 0
	var dst []byte
	if small {
		k = copy(l.buf, c.in)
		dst = l.buf[k:]
	} else {
		if !c.growIn(budget) {
			l.closeNow(c, errInBufferFull)
			return 0, 0, 0
		}
		dst = c.in[len(c.in):cap(c.in)]
	}
	if len(dst) > budget {
		dst = dst[:budget]
	}
	if c.tls != nil {
		n, en = l.tlsRead(c, dst)
		if c.flags&fClosed != 0 {
			return 0, 0, 0
		}
	} else {
		n, en = sysRead(int(c.fd), dst)
	}
	drained := en == unix.EAGAIN
	if n > 0 {
		drained = n < len(dst)
		c.account(n)
		l.shed.readBytes(c, n)
		if small {
			c.releaseIn() // the tail lives in l.buf now
			l.consume(c, l.buf[:k+n], false)
		} else {
			c.in = c.in[:len(c.in)+n]
			l.bp.inBytes += n
			l.consume(c, c.in, true)
		}
		if c.tls != nil && c.tls.eof && c.flags&(fEOF|fClosed|fHeld|fDeferred) == 0 && c.readable() {
			// close_notify came with the last bytes, and no edge will
			// follow; frames still waiting (backpressure, the pool, the
			// frame budget) are served first: the next read finds the end
			c.peerEOF()
		}
	}
	l.shed.readEnd(c, t0, drained)
	return n, len(dst), en
}

func (c *Conn) account(n int) {
	l := c.loop
	l.st[cReads]++
	l.st[cBytesIn] += uint64(n)
	c.readBytes += n
	c.lastActive = l.now
}

// consume dispatches data (which is c.in itself when inPlace, else the loop
// buffer) and keeps the unparsed rest in c.in.
func (l *loop) consume(c *Conn, data []byte, inPlace bool) {
	wasPartial := c.flags&fPartial != 0
	l.arrived = l.now
	if inPlace && !wasPartial {
		l.arrived = c.frameStart // frames held back since an earlier read (below)
	}
	rest, frames, err := l.dispatch(c, data)
	switch {
	case err != nil:
		l.closeNow(c, err)
		return
	case c.flags&fClosed != 0:
		return
	case c.closing != nil || len(rest) == 0:
		// done, or closing: unparsed input of a closing connection is dropped
		if inPlace {
			c.releaseIn()
		}
		c.flags &^= fPartial
		return
	case len(rest) > l.cfg.MaxInBufferBytes:
		l.closeNow(c, errInBufferFull)
		return
	}
	if inPlace {
		if len(rest) != len(c.in) {
			l.bp.inBytes -= len(c.in) - len(rest)
			c.in = c.in[:copy(c.in, rest)]
		}
	} else {
		c.in = append(l.pools.ins.get(len(rest)), rest...)
		l.bp.inBytes += len(rest)
	}
	if c.flags&(fPaused|fHeld|fPoolWait) != 0 {
		// stopped by backpressure, MaxFramesPerTurn or the ordered pool at a
		// frame boundary: decode rest again on resume or next turn
		// (readConn does that before reading); frameStart, unused while no
		// frame is partial, keeps when these frames arrived
		c.flags &^= fPartial
		c.frameStart = l.arrived
		return
	}
	if frames > 0 || !wasPartial {
		c.frameStart = l.now // a new frame began in this read
	}
	c.flags |= fPartial
}

// dispatch decodes frames from data and hands each to the admission
// stage's frame hook, then the worker pool or the handler, until data runs
// out, a frame is incomplete, reading is paused by backpressure, or c is
// closing. It returns the unparsed rest and how many frames it consumed.
func (l *loop) dispatch(c *Conn, data []byte) (rest []byte, frames int, err error) {
	spent := false
	for len(data) > 0 {
		if c.closing != nil || c.flags&fClosed != 0 {
			return nil, frames, nil
		}
		if c.flags&(fPaused|fPoolWait) != 0 {
			if c.flags&(fPoolWait|fPoolBacklog) == fPoolWait {
				c.flags |= fPoolBacklog
				l.e.pool.backlog.Add(1)
			}
			return data, frames, nil
		}
		frame, n, err := l.decode(c, data)
		if err != nil {
			return nil, frames, err
		}
		if n == 0 {
			return data, frames, nil
		}
		if n > len(data) {
			return nil, frames, errCodecOverrun
		}
		if c.turnFrames >= l.cfg.MaxFramesPerTurn || spent {
			// this turn's frame budget (or the stage's time for inline
			// work) is spent: the rest waits in c.in and c is served
			// again next turn from the ready list
			c.flags |= fHeld
			l.st[cFramesHeld]++
			l.ready(c, fNeedRead)
			return data, frames, nil
		}
		c.turnFrames++
		data = data[n:]
		frames++
		l.st[cFrames]++
		if !l.shed.admitFrame(c, frame) {
			continue // refused and answered
		}
		if pl := l.e.pool; pl != nil {
			pl.offer(l, c, frame, data)
			continue
		}
		c.act(l.onFrame(c, frame))
		spent = l.shed.handled(c)
	}
	return nil, frames, nil
}

// frameFollows reports whether data, c's input, begins with a complete
// frame.
func (l *loop) frameFollows(c *Conn, data []byte) bool {
	if len(data) == 0 {
		return false
	}
	_, n, err := l.decode(c, data)
	return err == nil && n > 0 && n <= len(data)
}

// act carries out a handler's Action.
func (c *Conn) act(a Action) {
	l := c.loop
	switch a {
	case Close:
		l.requestClose(c, ErrLocalClose)
	case Shutdown:
		l.e.beginShutdown(l.now + int64(l.cfg.DrainTimeout))
	}
}

// peerEOF handles end of file: replies already queued still go out, then
// the connection closes with ErrPeerClosed. An incomplete frame is dropped.
func (c *Conn) peerEOF() {
	l := c.loop
	c.flags |= fEOF
	c.flags &^= fPartial
	c.releaseIn()
	if c.pending > 0 {
		return // frames in the worker pool still owe replies: poolDone closes
	}
	l.requestClose(c, ErrPeerClosed)
}

// growIn makes room in c.in for a read of up to budget bytes, within
// MaxInBufferBytes; false when c.in is already at the limit.
func (c *Conn) growIn(budget int) bool {
	l := c.loop
	limit := l.cfg.MaxInBufferBytes
	if len(c.in) >= limit {
		return false
	}
	if cap(c.in)-len(c.in) >= min(budget, len(l.buf)) {
		return true
	}
	want := min(limit, max(2*cap(c.in), len(c.in)+min(budget, len(l.buf))))
	grown := append(l.pools.ins.get(want), c.in...)
	l.pools.ins.put(c.in)
	c.in = grown
	return true
}

// releaseIn recycles c's input buffer.
func (c *Conn) releaseIn() {
	l := c.loop
	if c.in == nil {
		return
	}
	l.bp.inBytes -= len(c.in)
	l.pools.ins.put(c.in)
	c.in = nil
}
