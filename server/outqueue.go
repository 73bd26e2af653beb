package server

import (
	"unsafe"

	"github.com/sluicenet/sluice/ioflush"
	"github.com/valyala/bytebufferpool"
)

// A connection's out-queue on its loop: the budgets a write must fit,
// the segments and chunks it goes into, and the accounting that marks the
// connection dirty and pauses its reads above the high watermark. The
// Conn write methods call these on the loop; the flush side is write.go.

// canQueue checks c's out-queue budgets for one more message of n bytes,
// counting what writes from other goroutines booked and the loop has not
// queued yet.
func (c *Conn) canQueue(n int) error {
	l := c.loop
	if c.closing != nil || c.flags&fClosed != 0 {
		return ErrClosed
	}
	if c.outMsgs+int(c.resMsgs.Load())+1 > l.cfg.OutQueueMsgs || c.outBytes+int(c.resBytes.Load())+n > l.cfg.OutQueueBytes {
		l.st[cQueueFull]++
		return ErrQueueFull
	}
	return nil
}

// outq returns c's out-queue, taking a small one from the loop's free list
// if c has none.
func (c *Conn) outq() *outQueue {
	l := c.loop
	if q := c.out; q != nil {
		return q
	}
	c.out = l.pools.outqs.get(0)
	return c.out
}

// segRoom reports how many more segments c's out-queue may take.
func (c *Conn) segRoom() int {
	l := c.loop
	if c.out == nil {
		return l.pools.maxSegs
	}
	return l.pools.maxSegs - c.out.segs.Len()
}

// pushSeg appends seg to c's out-queue (with a zero message count), moving a
// full queue to one of the next class; false if the queue holds maxSegs.
func (c *Conn) pushSeg(seg ioflush.Segment) bool {
	l := c.loop
	q := c.outq()
	if q.segs.Full() {
		if q.segs.Len() >= l.pools.maxSegs {
			return false
		}
		next := q.class + 1
		for int(next) < len(l.pools.outqs.caps)-1 && l.pools.outqs.caps[next] <= q.segs.Len() {
			next++
		}
		big := l.pools.outqs.get(next)
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
func (c *Conn) releaseOut() {
	l := c.loop
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
func (c *Conn) queued(n int) {
	l := c.loop
	q := c.out
	*q.msgs.At(q.msgs.Len() - 1) += 1
	if c.outBytes == 0 {
		c.progressAt = l.now // the write-stall clock starts with the first queued byte
	}
	c.outBytes += n
	c.outMsgs++
	l.bp.outBytes += n
	c.flags &^= fRejOnly | fRejDue // a reply goes out now, and the rejects before it with it (answerReject marks its own)
	l.markDirty(c)
	if c.flags&fPaused == 0 && (c.outBytes >= l.cfg.OutQueueHighBytes || c.outMsgs >= l.bp.msgsHigh) {
		c.pauseRead()
	}
	c.publishOut()
}

// writeCopy is Conn.Write on the loop: it copies p into the tail chunk and
// fresh chunks as needed.
func (c *Conn) writeCopy(p []byte) error {
	l := c.loop
	n := len(p)
	if n == 0 {
		if c.closing != nil || c.flags&fClosed != 0 {
			return ErrClosed
		}
		return nil
	}
	if err := c.canQueue(n); err != nil {
		return err
	}
	if c.writeInPlace(p) {
		return nil
	}
	if n > bigWriteBytes {
		bb := bytebufferpool.Get()
		bb.B = append(bb.B[:0], p...)
		if err := c.writeSegment(ioflush.Segment{Buf: bb.B, Pooled: bb}); err != nil {
			bytebufferpool.Put(bb)
			return err
		}
		return nil
	}
	room := 0
	if c.tailChunk != nil {
		room = c.tailChunk.room()
	}
	if n > room && (n-room+outChunkBytes-1)/outChunkBytes > c.segRoom() {
		l.st[cQueueFull]++
		return ErrQueueFull
	}
	c.appendCopy(p)
	return nil
}

// appendCopy copies p (not empty) into c's tail chunk and fresh chunks as
// one message, with no budget check: the caller made it. A queue whose
// segments are all taken (which the budgets leave no room for:
// maxSegments) gets the rest in its last chunk's place: the chunk is
// grown rather than a message lost.
func (c *Conn) appendCopy(p []byte) {
	l := c.loop
	n := len(p)
	for len(p) > 0 {
		ch := c.tailChunk
		if ch == nil || ch.room() == 0 {
			ch = l.pools.chunks.get()
			if !c.pushSeg(ioflush.Segment{Buf: ch.b, Free: ch.free}) {
				ch.release()
				c.appendLast(p)
				break
			}
			c.tailChunk = ch
		}
		k := min(len(p), ch.room())
		appendTail(c.out, ch, p[:k])
		p = p[k:]
	}
	c.queued(n)
}

// appendLast appends p to the last segment of c's full out-queue as a
// pooled copy of that segment's bytes and p (appendCopy's last resort).
func (c *Conn) appendLast(p []byte) {
	q := c.out
	s := q.segs.At(q.segs.Len() - 1)
	bb := bytebufferpool.Get()
	bb.B = append(append(bb.B[:0], s.Buf...), p...)
	s.Release()
	*s = ioflush.Segment{Buf: bb.B, Pooled: bb}
	c.tailChunk = nil
}

// minAvailableBytes is the least room Conn.AvailableBuffer offers: a tail
// chunk with less lends the loop's spare chunk instead.
const minAvailableBytes = 2 << 10

// availableBuffer is Conn.AvailableBuffer on the loop: the tail chunk's free
// room, or the loop's spare chunk when the tail has less than
// minAvailableBytes.
func (c *Conn) availableBuffer() []byte {
	l := c.loop
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
func (c *Conn) writeInPlace(p []byte) bool {
	l := c.loop
	at := unsafe.SliceData(p)
	if ch := c.tailChunk; ch != nil && len(p) <= ch.room() && at == unsafe.SliceData(ch.b[len(ch.b):cap(ch.b)]) {
		s := c.out.segs.At(c.out.segs.Len() - 1)
		start := len(ch.b) - len(s.Buf)
		ch.b = ch.b[:len(ch.b)+len(p)]
		s.Buf = ch.b[start:]
		c.queued(len(p))
		return true
	}
	sp := l.pools.spare
	if sp == nil || len(p) > cap(sp.b) || at != unsafe.SliceData(sp.b[:cap(sp.b)]) || c.segRoom() == 0 {
		return false
	}
	sp.b = sp.b[:len(p)]
	c.pushSeg(ioflush.Segment{Buf: sp.b, Free: sp.free})
	l.pools.spare = nil
	c.tailChunk = sp
	c.queued(len(p))
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
func (c *Conn) writeFrame(frame []byte) error {
	l := c.loop
	if c.closing != nil || c.flags&fClosed != 0 {
		return ErrClosed
	}
	est := len(frame) + encodeSlackBytes
	if est > outChunkBytes {
		bb := bytebufferpool.Get()
		bb.B = l.codec.AppendEncode(bb.B[:0], frame)
		if err := c.writeSegment(ioflush.Segment{Buf: bb.B, Pooled: bb}); err != nil {
			bytebufferpool.Put(bb)
			return err
		}
		return nil
	}
	if ch := c.tailChunk; ch != nil && ch.room() < est && ch.room() >= minSplitRoomBytes {
		l.pools.scratch = l.codec.AppendEncode(l.pools.scratch[:0], frame)
		return c.writeCopy(l.pools.scratch) // fills the tail's room, then a fresh chunk
	}
	if ch := c.tailChunk; ch != nil && ch.room() >= est {
		before := len(ch.b)
		enc := l.codec.AppendEncode(ch.b, frame)
		if unsafe.SliceData(enc) != unsafe.SliceData(ch.b) { // the codec outgrew the slack: slow path
			return c.writeCopy(enc[before:])
		}
		n := len(enc) - before
		if err := c.canQueue(n); err != nil {
			return err
		}
		appendTail(c.out, ch, enc[before:])
		c.queued(n)
		return nil
	}
	ch := l.pools.chunks.get()
	enc := l.codec.AppendEncode(ch.b, frame)
	if unsafe.SliceData(enc) != unsafe.SliceData(ch.b) {
		ch.release()
		return c.writeCopy(enc)
	}
	err := c.canQueue(len(enc))
	if err == nil && !c.pushSeg(ioflush.Segment{Buf: enc, Free: ch.free}) {
		l.st[cQueueFull]++
		err = ErrQueueFull
	}
	if err != nil {
		ch.release()
		if c.out != nil && c.out.segs.Empty() {
			c.releaseOut()
		}
		return err
	}
	ch.b = enc
	c.tailChunk = ch
	c.queued(len(enc))
	return nil
}

// writeSegment queues seg as one message (WriteOwned, off-loop writes,
// large writes). On error the caller keeps seg.
func (c *Conn) writeSegment(seg ioflush.Segment) error {
	l := c.loop
	if err := c.canQueue(len(seg.Buf)); err != nil {
		return err
	}
	if !c.pushSeg(seg) {
		l.st[cQueueFull]++
		return ErrQueueFull
	}
	c.tailChunk = nil
	c.queued(len(seg.Buf))
	return nil
}
