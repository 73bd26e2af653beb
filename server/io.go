package server

import (
	"os"
	"unsafe"

	"github.com/sluicenet/sluice/ioflush"
	"github.com/valyala/bytebufferpool"
	"golang.org/x/sys/unix"
)

// connEvents is a connection's epoll interest without and with EPOLLOUT.
const (
	connEvents    = evIn | evRdHup | evEdge
	connEventsOut = connEvents | evOut
)

// readConn reads c until the socket is drained, its read budget for this
// turn is spent (then c goes on the ready list: under EPOLLET no new edge
// would come for bytes already there), or reading stops (backpressure,
// close, end of file). Each read's frames are dispatched before the next
// read.
//
// A read that returns fewer bytes than asked means the socket was drained:
// for stream sockets under EPOLLET, data that arrives after such a read
// raises a new edge (epoll(7); TestEdgeShortRead pins it), so the loop does
// not spend a second read(2) to collect EAGAIN. The exception is a peer that
// has shut down writing (EPOLLRDHUP seen): its FIN may already be queued
// behind the data, and no edge will come for it, so the loop reads on until
// end of file or EAGAIN (TestEdgeShortReadFIN).
func (l *loop) readConn(c *Conn) {
	if c.flags&fSlow != 0 {
		return // parked on the slow list (deferSlow, or its tenant's quota)
	}
	if c.readTurn != l.turn {
		c.readTurn, c.readBytes, c.turnFrames = l.turn, 0, 0
		c.flags &^= fHeld
	}
	if len(c.in) > 0 && c.flags&fPartial == 0 { // frames held back by backpressure or MaxFramesPerTurn
		if l.pol.shedDelay {
			l.pol.since = l.arrivalBound(c, false)
		}
		l.consume(c, c.in, true)
		if !c.readable() || c.flags&fHeld != 0 {
			return
		}
	}
	for {
		budget := l.cfg.ReadBudgetBytes - c.readBytes
		if l.overQueued() && !l.readWhileOver(c, &budget) {
			return
		}
		if cp := l.pol.readCap; cp > 0 && budget > cp {
			budget = cp
		}
		if budget <= 0 {
			l.st[cReadBudgetSpent]++
			l.ready(c, fNeedRead)
			return
		}
		n, want, en := l.readOnce(c, budget)
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
			l.peerEOF(c)
			return
		}
		if !c.readable() || c.flags&(fHeld|fSlow) != 0 || n < want && c.flags&fRdHup == 0 {
			return
		}
	}
}

// smallTailBytes: an unparsed tail up to this size is copied to the front of
// the loop buffer and the next read appends to it there; a larger one (a big
// frame in progress) is read into directly.
func (l *loop) smallTailBytes() int { return min(16<<10, len(l.buf)/2) }

// readOnce does one read(2) of at most budget bytes for c and dispatches it.
// want is what the read asked for.
func (l *loop) readOnce(c *Conn, budget int) (n, want int, en errno) {
	var t0 int64
	if l.pol.shedDelay {
		t0 = l.e.clock()
		l.pol.since = l.arrivalBound(c, true)
	}
	if len(c.in) <= l.smallTailBytes() {
		k := copy(l.buf, c.in)
		dst := l.buf[k:]
		if len(dst) > budget {
			dst = dst[:budget]
		}
		n, en = sysRead(int(c.fd), dst)
		if n <= 0 {
			l.noteDrain(c, t0, en == unix.EAGAIN)
			return n, len(dst), en
		}
		l.account(c, n)
		if l.pol.chargeRds {
			l.chargeRead(c, n)
		}
		l.releaseIn(c) // the tail lives in l.buf now
		l.consume(c, l.buf[:k+n], false)
		l.noteDrain(c, t0, n < len(dst))
		l.afterRead(c)
		return n, len(dst), 0
	}
	if !l.growIn(c, budget) {
		l.closeNow(c, errInBufferFull)
		return 0, 0, 0
	}
	dst := c.in[len(c.in):cap(c.in)]
	if len(dst) > budget {
		dst = dst[:budget]
	}
	n, en = sysRead(int(c.fd), dst)
	if n <= 0 {
		l.noteDrain(c, t0, en == unix.EAGAIN)
		return n, len(dst), en
	}
	l.account(c, n)
	if l.pol.chargeRds {
		l.chargeRead(c, n)
	}
	c.in = c.in[:len(c.in)+n]
	l.inBytes += n
	l.consume(c, c.in, true)
	l.noteDrain(c, t0, n < len(dst))
	l.afterRead(c)
	return n, len(dst), 0
}

// noteDrain records, for queueing delay (ShedOnQueueDelay; t0 != 0), what
// a read that started at t0 tells about the arrival of c's next bytes: if
// it left the socket empty and nothing is held back, they all come after
// t0 and will raise an edge (fFresh); otherwise the old bound stands and
// the next edge proves nothing about bytes still waiting.
func (l *loop) noteDrain(c *Conn, t0 int64, drained bool) {
	if t0 == 0 {
		return
	}
	if drained && c.flags&(fHeld|fClosed) == 0 && (len(c.in) == 0 || c.flags&fPartial != 0) {
		c.drainedAt = t0
		c.flags |= fFresh
		return
	}
	c.flags &^= fFresh
}

// arrivalBound is the earliest moment the bytes c is about to dispatch
// can have arrived (see AdmissionPolicy.ShedOnQueueDelay): the start of
// c's last draining read and, when c was reported by this turn's events
// (byEvent) with nothing unread since that read, the previous wait; the
// turn's readySince for a connection never drained.
func (l *loop) arrivalBound(c *Conn, byEvent bool) int64 {
	p := &l.pol
	since := c.drainedAt
	if byEvent && c.flags&fFresh != 0 && p.evSince > since {
		since = p.evSince
	}
	if since == 0 {
		since = p.readySince
	}
	return since
}

func (l *loop) account(c *Conn, n int) {
	l.st[cReads]++
	l.st[cBytesIn] += uint64(n)
	c.readBytes += n
	c.lastActive = l.now
}

// consume dispatches data (which is c.in itself when inPlace, else the loop
// buffer) and keeps the unparsed rest in c.in.
func (l *loop) consume(c *Conn, data []byte, inPlace bool) {
	wasPartial := c.flags&fPartial != 0
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
			l.releaseIn(c)
		}
		c.flags &^= fPartial
		return
	case len(rest) > l.cfg.MaxInBufferBytes:
		l.closeNow(c, errInBufferFull)
		return
	}
	if inPlace {
		if len(rest) != len(c.in) {
			l.inBytes -= len(c.in) - len(rest)
			c.in = c.in[:copy(c.in, rest)]
		}
	} else {
		c.in = append(l.ins.get(len(rest)), rest...)
		l.inBytes += len(rest)
	}
	if c.flags&(fPaused|fHeld) != 0 {
		// stopped by backpressure or MaxFramesPerTurn at a frame boundary:
		// decode rest again on resume or next turn (readConn does that
		// before reading)
		c.flags &^= fPartial
		return
	}
	if frames > 0 || !wasPartial {
		c.frameStart = l.now // a new frame began in this read
	}
	c.flags |= fPartial
}

// dispatch decodes frames from data and hands them to admission and the
// handler until data runs out, a frame is incomplete, reading is paused by
// backpressure, or c is closing. It returns the unparsed rest and how many
// frames it consumed.
func (l *loop) dispatch(c *Conn, data []byte) (rest []byte, frames int, err error) {
	for len(data) > 0 {
		if c.closing != nil || c.flags&fClosed != 0 {
			return nil, frames, nil
		}
		if c.flags&fPaused != 0 {
			return data, frames, nil
		}
		frame, n, err := l.codec.Decode(data)
		if err != nil {
			return nil, frames, err
		}
		if n == 0 {
			return data, frames, nil
		}
		if n > len(data) {
			return nil, frames, errCodecOverrun
		}
		if c.turnFrames >= l.cfg.MaxFramesPerTurn {
			// this turn's frame budget is spent: the rest waits in c.in
			// and c is served again next turn from the ready list
			c.flags |= fHeld
			l.pol.framesHeld++
			l.ready(c, fNeedRead)
			return data, frames, nil
		}
		c.turnFrames++
		data = data[n:]
		frames++
		l.st[cFrames]++
		if !l.frameIn(c, frame) {
			continue
		}
		l.act(c, l.h.OnFrame(c, frame))
	}
	return nil, frames, nil
}

// act carries out a handler's Action.
func (l *loop) act(c *Conn, a Action) {
	switch a {
	case Close:
		l.requestClose(c, ErrLocalClose)
	case Shutdown:
		l.e.beginShutdown(l.now + int64(l.cfg.DrainTimeout))
	}
}

// peerEOF handles end of file: replies already queued still go out, then
// the connection closes with ErrPeerClosed. An incomplete frame is dropped.
func (l *loop) peerEOF(c *Conn) {
	c.flags |= fEOF
	c.flags &^= fPartial
	l.releaseIn(c)
	if c.pending > 0 {
		return // frames in the worker pool still owe replies: poolDone closes
	}
	l.requestClose(c, ErrPeerClosed)
}

// hangupCause is the close cause for EPOLLHUP/EPOLLERR on a connection that
// is not reading.
func (l *loop) hangupCause(c *Conn) error {
	if err := sockError(int(c.fd)); err != nil {
		return err
	}
	return ErrPeerClosed
}

// growIn makes room in c.in for a read of up to budget bytes, within
// MaxInBufferBytes; false when c.in is already at the limit.
func (l *loop) growIn(c *Conn, budget int) bool {
	limit := l.cfg.MaxInBufferBytes
	if len(c.in) >= limit {
		return false
	}
	if cap(c.in)-len(c.in) >= min(budget, len(l.buf)) {
		return true
	}
	want := min(limit, max(2*cap(c.in), len(c.in)+min(budget, len(l.buf))))
	grown := append(l.ins.get(want), c.in...)
	l.ins.put(c.in)
	c.in = grown
	return true
}

// releaseIn recycles c's input buffer.
func (l *loop) releaseIn(c *Conn) {
	if c.in == nil {
		return
	}
	l.inBytes -= len(c.in)
	l.ins.put(c.in)
	c.in = nil
}

// flushConn writes c's out-queue once with the flush budget and acts on the
// result: flushed disarms EPOLLOUT and frees the queue, would-block arms
// EPOLLOUT, budget-spent puts c on the ready list.
func (l *loop) flushConn(c *Conn) {
	q := c.out
	if q == nil {
		return
	}
	c.flags &^= fRejOnly // whatever is left is the flusher's (EPOLLOUT, ready list)
	before := q.segs.Len()
	l.observeOutQueue(c.outBytes)
	n, res, err := l.flusher.Flush(int(c.fd), &q.segs, l.cfg.FlushBudgetBytes)
	l.st[cFlushes]++
	if n > 0 {
		l.st[cBytesOut] += uint64(n)
		c.outBytes -= n
		l.outBytes -= n
		c.progressAt, c.lastActive = l.now, l.now
	}
	for popped := before - q.segs.Len(); popped > 0; popped-- {
		m, _ := q.msgs.Pop()
		c.outMsgs -= int(m)
	}
	if q.segs.Empty() {
		c.tailChunk = nil
	}
	if err != nil {
		l.closeNow(c, err)
		return
	}
	switch res {
	case ioflush.Flushed:
		l.releaseOut(c)
		if c.flags&fOutArmed != 0 {
			c.flags &^= fOutArmed
			if err := l.p.mod(int(c.fd), connEvents, uint32(c.gen)); err != nil {
				l.closeNow(c, err)
				return
			}
		}
	case ioflush.WouldBlock:
		if c.flags&fOutArmed == 0 {
			c.flags |= fOutArmed
			l.st[cOutArms]++
			if err := l.p.mod(int(c.fd), connEventsOut, uint32(c.gen)); err != nil {
				l.closeNow(c, err)
				return
			}
		}
	case ioflush.BudgetSpent:
		l.st[cFlushBudgetSpent]++
		l.ready(c, fNeedFlush)
	}
	if l.connBudget(c) {
		return // closed: it broke its own budget
	}
	if c.flags&fPaused != 0 && c.outBytes <= l.cfg.OutQueueLowBytes && c.outMsgs <= l.msgsLow && l.policyAllowsResume(c) {
		c.flags &^= fPaused
		l.nPaused--
		c.full.Store(false)
		l.ready(c, fNeedRead) // bytes may wait in the socket with no new edge to come
	}
	if res == ioflush.Flushed {
		l.finishClose(c)
	}
}

// canQueue checks c's out-queue budgets for one more message of n bytes.
func (l *loop) canQueue(c *Conn, n int) error {
	if c.closing != nil || c.flags&fClosed != 0 {
		return ErrClosed
	}
	if c.outMsgs+1 > l.cfg.OutQueueMsgs || c.outBytes+n > l.cfg.OutQueueBytes {
		l.st[cQueueFull]++
		return ErrQueueFull
	}
	return nil
}

// outq returns c's out-queue, taking a small one from the loop's free list
// if c has none.
func (l *loop) outq(c *Conn) *outQueue {
	if q := c.out; q != nil {
		return q
	}
	c.out = l.outqs.get(false, min(smallOutSegments, l.maxSegs))
	return c.out
}

// segRoom reports how many more segments c's out-queue may take.
func (l *loop) segRoom(c *Conn) int {
	if c.out == nil {
		return l.maxSegs
	}
	return l.maxSegs - c.out.segs.Len()
}

// pushSeg appends seg to c's out-queue (with a zero message count), moving a
// full small queue to a large one; false if the queue holds maxSegs.
func (l *loop) pushSeg(c *Conn, seg ioflush.Segment) bool {
	q := l.outq(c)
	if q.segs.Full() {
		if q.large || q.segs.Len() >= l.maxSegs {
			return false
		}
		big := l.outqs.get(true, l.maxSegs)
		for {
			s, ok := q.segs.Pop()
			if !ok {
				break
			}
			m, _ := q.msgs.Pop()
			big.segs.Push(s)
			big.msgs.Push(m)
		}
		l.outqs.put(q)
		c.out, q = big, big
	}
	q.segs.Push(seg)
	q.msgs.Push(0)
	return true
}

// releaseOut returns c's out-queue to the free list, releasing anything
// still in it.
func (l *loop) releaseOut(c *Conn) {
	q := c.out
	if q == nil {
		return
	}
	c.out, c.tailChunk = nil, nil
	ioflush.Drop(&q.segs)
	q.msgs.Reset()
	l.outqs.put(q)
}

// queued accounts one message of n bytes just added to c's out-queue.
func (l *loop) queued(c *Conn, n int) {
	q := c.out
	*q.msgs.At(q.msgs.Len() - 1) += 1
	if c.outBytes == 0 {
		c.progressAt = l.now // the write-stall clock starts with the first queued byte
	}
	c.outBytes += n
	c.outMsgs++
	l.outBytes += n
	if !l.pol.writingRej {
		c.flags &^= fRejOnly // a reply goes out now, and the rejects before it with it
	}
	l.markDirty(c)
	if c.flags&fPaused == 0 && (c.outBytes >= l.cfg.OutQueueHighBytes || c.outMsgs >= l.msgsHigh) {
		c.flags |= fPaused
		l.nPaused++
		c.full.Store(true)
		l.st[cPauses]++
	}
}

// writeCopy is Conn.Write on the loop: it copies p into the tail chunk and
// fresh chunks as needed.
func (l *loop) writeCopy(c *Conn, p []byte) error {
	n := len(p)
	if n == 0 {
		if c.closing != nil || c.flags&fClosed != 0 {
			return ErrClosed
		}
		return nil
	}
	if err := l.canQueue(c, n); err != nil {
		return err
	}
	if n > bigWriteBytes {
		bb := bytebufferpool.Get()
		bb.B = append(bb.B[:0], p...)
		if err := l.writeSegment(c, ioflush.Segment{Buf: bb.B, Pooled: bb}); err != nil {
			bytebufferpool.Put(bb)
			return err
		}
		return nil
	}
	room := 0
	if c.tailChunk != nil {
		room = c.tailChunk.room()
	}
	if n > room && (n-room+outChunkBytes-1)/outChunkBytes > l.segRoom(c) {
		l.st[cQueueFull]++
		return ErrQueueFull
	}
	for len(p) > 0 {
		ch := c.tailChunk
		if ch == nil || ch.room() == 0 {
			ch = l.chunks.get()
			l.pushSeg(c, ioflush.Segment{Buf: ch.b, Free: ch.free})
			c.tailChunk = ch
		}
		k := min(len(p), ch.room())
		appendTail(c.out, ch, p[:k])
		p = p[k:]
	}
	l.queued(c, n)
	return nil
}

// appendTail appends b to ch, whose segment is q's tail, keeping the
// segment's Buf the unwritten suffix of ch.b.
func appendTail(q *outQueue, ch *chunk, b []byte) {
	s := q.segs.At(q.segs.Len() - 1)
	start := len(ch.b) - len(s.Buf)
	ch.b = append(ch.b, b...)
	s.Buf = ch.b[start:]
}

// writeFrame is Conn.WriteFrame on the loop: the codec appends the encoded
// frame straight into the tail chunk (or a fresh one).
func (l *loop) writeFrame(c *Conn, frame []byte) error {
	if c.closing != nil || c.flags&fClosed != 0 {
		return ErrClosed
	}
	est := len(frame) + encodeSlackBytes
	if est > outChunkBytes {
		bb := bytebufferpool.Get()
		bb.B = l.codec.AppendEncode(bb.B[:0], frame)
		if err := l.writeSegment(c, ioflush.Segment{Buf: bb.B, Pooled: bb}); err != nil {
			bytebufferpool.Put(bb)
			return err
		}
		return nil
	}
	if ch := c.tailChunk; ch != nil && ch.room() < est && ch.room() >= minSplitRoomBytes {
		l.encBuf = l.codec.AppendEncode(l.encBuf[:0], frame)
		return l.writeCopy(c, l.encBuf) // fills the tail's room, then a fresh chunk
	}
	if ch := c.tailChunk; ch != nil && ch.room() >= est {
		before := len(ch.b)
		enc := l.codec.AppendEncode(ch.b, frame)
		if unsafe.SliceData(enc) != unsafe.SliceData(ch.b) { // the codec outgrew the slack: slow path
			return l.writeCopy(c, enc[before:])
		}
		n := len(enc) - before
		if err := l.canQueue(c, n); err != nil {
			return err
		}
		appendTail(c.out, ch, enc[before:])
		l.queued(c, n)
		return nil
	}
	ch := l.chunks.get()
	enc := l.codec.AppendEncode(ch.b, frame)
	if unsafe.SliceData(enc) != unsafe.SliceData(ch.b) {
		ch.release()
		return l.writeCopy(c, enc)
	}
	err := l.canQueue(c, len(enc))
	if err == nil && !l.pushSeg(c, ioflush.Segment{Buf: enc, Free: ch.free}) {
		l.st[cQueueFull]++
		err = ErrQueueFull
	}
	if err != nil {
		ch.release()
		if c.out != nil && c.out.segs.Empty() {
			l.releaseOut(c)
		}
		return err
	}
	ch.b = enc
	c.tailChunk = ch
	l.queued(c, len(enc))
	return nil
}

// writeSegment queues seg as one message (WriteOwned, off-loop writes,
// large writes). On error the caller keeps seg.
func (l *loop) writeSegment(c *Conn, seg ioflush.Segment) error {
	if err := l.canQueue(c, len(seg.Buf)); err != nil {
		return err
	}
	if !l.pushSeg(c, seg) {
		l.st[cQueueFull]++
		return ErrQueueFull
	}
	c.tailChunk = nil
	l.queued(c, len(seg.Buf))
	return nil
}

// requestClose starts a graceful close: c reads nothing more, its queued
// output is flushed (bounded by the write-stall timeout), then closeNow.
func (l *loop) requestClose(c *Conn, cause error) {
	if c.closing != nil || c.flags&fClosed != 0 {
		return
	}
	c.closing = cause
	c.state.Store(stateClosing)
	c.flags &^= fRejOnly
	l.markDirty(c)
}

// finishClose completes a graceful close once nothing is queued.
func (l *loop) finishClose(c *Conn) {
	if c.closing != nil && c.flags&fClosed == 0 && c.outBytes == 0 {
		l.closeNow(c, c.closing)
	}
}

// closeNow closes c at once: fd closed (which also removes it from epoll),
// queued output dropped, buffers recycled, counters and the gate updated,
// then OnClose. Nothing touches the fd afterwards; c stays in whatever lists
// it is on and is skipped there.
func (l *loop) closeNow(c *Conn, cause error) {
	if c.flags&fClosed != 0 {
		return
	}
	if c.flags&fPaused != 0 {
		l.nPaused--
	}
	c.flags |= fClosed
	if c.closing == nil {
		c.closing = cause
	}
	c.state.Store(stateClosed)
	c.full.Store(false)
	l.timers.remove(&c.tm)
	sysClose(int(c.fd))
	l.conns[c.fd] = nil
	l.nconns--
	if c.out != nil {
		l.outBytes -= c.outBytes
		c.outBytes, c.outMsgs = 0, 0
		l.releaseOut(c)
	}
	l.releaseIn(c)
	l.st[cClosedBase+int(CauseOf(cause))]++
	l.e.connClosed()
	l.h.OnClose(c, cause)
}
