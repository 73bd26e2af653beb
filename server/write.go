package server

import (
	"unsafe"

	"github.com/sluicenet/sluice/ioflush"
	"github.com/valyala/bytebufferpool"

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
			l.flushConn(c)
		}
		l.finishClose(c)
	}
}

// flushEarly writes c's replies right after its input was handled rather
// than at the end of the turn, so the peer has them while the loop serves
// the other connections; batching every reply to the end of the turn left
// peers idle while the loop read the rest (measured: 256 conns x 16 in
// flight, server and client each about half busy). It is still one writev
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
// handlers that held the first replies of a turn for the whole turn (the
// admission bench at 200 µs per frame: a p99 about 2× epoll's, whose
// flushEarly writes at once). A turn of cheap frames never gets here, so
// they keep one enter per turn.
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
	c.flags &^= fRejOnly // whatever is left is the flusher's (EPOLLOUT, ready list)
	before := q.segs.Len()
	l.observeOutQueue(c.outBytes)
	n, res, err := l.flusher.Flush(int(c.fd), &q.segs, l.cfg.FlushBudgetBytes)
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
	if c.flags&fPaused != 0 && l.mayResume(c) {
		l.resumeRead(c)
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
	c.out = l.pools.outqs.get(false, min(smallOutSegments, l.pools.maxSegs))
	return c.out
}

// segRoom reports how many more segments c's out-queue may take.
func (l *loop) segRoom(c *Conn) int {
	if c.out == nil {
		return l.pools.maxSegs
	}
	return l.pools.maxSegs - c.out.segs.Len()
}

// pushSeg appends seg to c's out-queue (with a zero message count), moving a
// full small queue to a large one; false if the queue holds maxSegs.
func (l *loop) pushSeg(c *Conn, seg ioflush.Segment) bool {
	q := l.outq(c)
	if q.segs.Full() {
		if q.large || q.segs.Len() >= l.pools.maxSegs {
			return false
		}
		big := l.pools.outqs.get(true, l.pools.maxSegs)
		for {
			s, ok := q.segs.Pop()
			if !ok {
				break
			}
			m, _ := q.msgs.Pop()
			big.segs.Push(s)
			big.msgs.Push(m)
		}
		l.pools.outqs.put(q)
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
	l.pools.outqs.put(q)
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
	l.bp.outBytes += n
	c.flags &^= fRejOnly // a reply goes out now, and the rejects before it with it (answerReject marks its own)
	l.markDirty(c)
	if c.flags&fPaused == 0 && (c.outBytes >= l.cfg.OutQueueHighBytes || c.outMsgs >= l.bp.msgsHigh) {
		l.pauseRead(c)
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
	if l.writeInPlace(c, p) {
		return nil
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
			ch = l.pools.chunks.get()
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

// minAvailableBytes is the least room Conn.AvailableBuffer offers: a tail
// chunk with less lends the loop's spare chunk instead.
const minAvailableBytes = 2 << 10

// availableBuffer is Conn.AvailableBuffer on the loop: the tail chunk's free
// room, or the loop's spare chunk when the tail has less than
// minAvailableBytes.
func (l *loop) availableBuffer(c *Conn) []byte {
	if ch := c.tailChunk; ch != nil && ch.room() >= minAvailableBytes {
		return ch.b[len(ch.b):len(ch.b)]
	}
	if l.pools.spare == nil {
		l.pools.spare = l.pools.chunks.get()
	}
	return l.pools.spare.b[:0]
}

// writeInPlace queues p without copying when it lies at the start of the
// free room AvailableBuffer lent (c's tail chunk, or the spare chunk, which
// becomes c's new tail); false if p is anywhere else. The caller has checked
// the budgets.
func (l *loop) writeInPlace(c *Conn, p []byte) bool {
	at := unsafe.SliceData(p)
	if ch := c.tailChunk; ch != nil && len(p) <= ch.room() && at == unsafe.SliceData(ch.b[len(ch.b):cap(ch.b)]) {
		s := c.out.segs.At(c.out.segs.Len() - 1)
		start := len(ch.b) - len(s.Buf)
		ch.b = ch.b[:len(ch.b)+len(p)]
		s.Buf = ch.b[start:]
		l.queued(c, len(p))
		return true
	}
	sp := l.pools.spare
	if sp == nil || len(p) > cap(sp.b) || at != unsafe.SliceData(sp.b[:cap(sp.b)]) || l.segRoom(c) == 0 {
		return false
	}
	sp.b = sp.b[:len(p)]
	l.pushSeg(c, ioflush.Segment{Buf: sp.b, Free: sp.free})
	l.pools.spare = nil
	c.tailChunk = sp
	l.queued(c, len(p))
	return true
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
		l.pools.scratch = l.codec.AppendEncode(l.pools.scratch[:0], frame)
		return l.writeCopy(c, l.pools.scratch) // fills the tail's room, then a fresh chunk
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
	ch := l.pools.chunks.get()
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
