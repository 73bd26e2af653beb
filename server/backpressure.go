package server

// Backpressure: what stops reading a connection and what resumes it. A
// connection whose out-queue passes its high watermark (OutQueueHighBytes,
// or half of OutQueueMsgs) is paused: the loop stops reading and decoding
// it, its TCP window closes, and a peer that does not read cannot grow our
// memory or slow its neighbours. It resumes at the low watermark. Over the
// whole engine, MaxQueuedBytes keeps the loops from reading connections
// that have output queued while the engine's queued bytes are at the
// budget.

// backpressure is a loop's part of the byte budgets and its paused reads.
type backpressure struct {
	msgsHigh, msgsLow int // out-queue message watermarks (OutQueueMsgs/2, /4)
	outBytes          int // bytes queued for output, all connections of the loop
	inBytes           int // bytes held in connection input buffers
	nPaused           int // connections whose reading is paused
	othersQueued      int // the other loops' queued bytes at this turn's start (MaxQueuedBytes)
}

// sumOthers reads the other loops' queued bytes as they published them
// (once per turn, for MaxQueuedBytes).
func (b *backpressure) sumOthers(l *loop) {
	b.othersQueued = 0
	for _, o := range l.e.loops {
		if o != l {
			b.othersQueued += int(o.pub[gOutBytes].Load() + o.pub[gInBytes].Load())
		}
	}
}

// pauseRead stops reading c until flushConn resumes it (mayResume).
func (c *Conn) pauseRead() {
	l := c.loop
	if c.flags&fPaused != 0 {
		return
	}
	c.flags |= fPaused
	l.bp.nPaused++
	c.full.Store(true)
	l.st[cPauses]++
	l.writabilityChanged(c)
}

// mayResume reports whether a paused connection may read again: its
// out-queue is at or below both low watermarks, the engine is not at
// MaxQueuedBytes unless c has nothing queued, and the admission stage
// agrees (its per-connection budgets, its gate).
func (c *Conn) mayResume() bool {
	l := c.loop
	if c.outBytes > l.cfg.OutQueueLowBytes || c.outMsgs > l.bp.msgsLow {
		return false
	}
	if c.outBytes > 0 && l.bp.overQueued(l.cfg.MaxQueuedBytes) {
		return false // global pressure: only a connection that read everything reads more
	}
	return l.shed.mayResume(c)
}

// resumeRead lifts c's pause; c goes on the ready list, because bytes may
// wait in its socket with no new edge to come.
func (c *Conn) resumeRead() {
	l := c.loop
	c.flags &^= fPaused
	l.bp.nPaused--
	c.full.Store(false)
	l.ready(c, fNeedRead)
	l.writabilityChanged(c)
}

// writabilityChanged lists c for writabilityPhase, once, when the handler
// hears of writability.
func (l *loop) writabilityChanged(c *Conn) {
	if l.wh != nil && c.flags&fWListed == 0 {
		c.flags |= fWListed
		l.wlist = append(l.wlist, c)
	}
}

// writabilityPhase tells the handler of each listed connection whose
// writability differs from what it was last told. A callback's writes may
// list more connections; they are told in the same phase.
func (l *loop) writabilityPhase() {
	for i := 0; i < len(l.wlist); i++ {
		c := l.wlist[i]
		l.wlist[i] = nil
		c.flags &^= fWListed
		if c.flags&fClosed != 0 {
			continue
		}
		writable := c.flags&fPaused == 0
		if writable == (c.flags&fUnwritable == 0) {
			continue
		}
		c.flags ^= fUnwritable
		l.onWritable(c, writable)
	}
	l.wlist = l.wlist[:0]
}

// overQueuedReadBytes is what a connection with nothing queued may read
// per turn while the engine is at MaxQueuedBytes: enough to keep a
// well-behaved client moving, little enough that many of them cannot take
// the engine far past its budget in one turn.
const overQueuedReadBytes = 4 << 10

// readWhileOver decides a read while the engine is at MaxQueuedBytes: a
// connection with output queued stops being read until that output is gone
// (false); one with nothing queued reads at most overQueuedReadBytes this
// turn (budget is lowered; false once spent, with c on the ready list).
func (c *Conn) readWhileOver(budget *int) bool {
	l := c.loop
	if c.outBytes > 0 {
		c.pauseRead() // flushConn resumes it once its output is gone
		return false
	}
	if c.readBytes >= overQueuedReadBytes {
		l.ready(c, fNeedRead)
		return false
	}
	*budget = min(*budget, overQueuedReadBytes-c.readBytes)
	return true
}

// overQueued reports whether the engine's queued bytes are at
// Config.MaxQueuedBytes: this loop's exactly, the others' as of their last
// publish (summed once per turn in startPhase).
func (bp *backpressure) overQueued(max int) bool {
	return max > 0 && bp.outBytes+bp.inBytes+bp.othersQueued >= max
}
