package server

import "github.com/sluicenet/sluice/server/internal/netpoll"

// requestClose starts a graceful close: c reads nothing more, its queued
// output is flushed (bounded by the write-stall timeout), then closeNow.
func (l *loop) requestClose(c *Conn, cause error) {
	if c.closing != nil || c.flags&fClosed != 0 {
		return
	}
	c.closing = cause
	c.state.Store(stateClosing)
	c.flags &^= fRejOnly | fRejDue
	l.markDirty(c)
}

// finishClose completes a graceful close once nothing is queued.
func (l *loop) finishClose(c *Conn) {
	if c.closing != nil && c.flags&fClosed == 0 && c.outBytes == 0 {
		if c.tls != nil {
			l.tlsCloseNotify(c)
		}
		l.closeNow(c, c.closing)
	}
}

// closeNow closes c at once: fd closed (which also removes it from epoll;
// other backends forget it first),
// queued output dropped, buffers recycled, counters and the gate updated,
// then OnClose. Nothing touches the fd afterwards; c stays in whatever lists
// it is on and is skipped there.
func (l *loop) closeNow(c *Conn, cause error) {
	if c.flags&fClosed != 0 {
		return
	}
	if c.flags&fPaused != 0 {
		l.bp.nPaused--
	}
	if c.flags&fPoolBacklog != 0 {
		l.e.pool.unblock(c)
	}
	c.cancelHandshake()
	c.flags |= fClosed
	if c.closing == nil {
		c.closing = cause
	}
	c.state.Store(stateClosed)
	c.full.Store(false)
	l.timers.remove(&c.tm)
	if l.orphanOut(c) { // the kernel may still read the out-queue: the poller keeps it
		l.bp.outBytes -= c.outBytes
		c.outBytes, c.outMsgs = 0, 0
	}
	l.p.Forget(int(c.fd))
	sysClose(int(c.fd))
	l.conns[c.fd] = nil
	l.nconns--
	if c.out != nil {
		l.bp.outBytes -= c.outBytes
		c.outBytes, c.outMsgs = 0, 0
		c.releaseOut()
	}
	c.releaseIn()
	c.releaseHeld()
	c.releaseTLS()
	l.st[cClosedBase+int(CauseOf(cause))]++
	l.e.connClosed()
	if c.flags&fHandshake != 0 {
		return // a TLS connection whose handshake did not finish: the handler never saw it
	}
	l.onClose(c, c.closing) // the cause asked for (CloseWithError), though a write stall or an error ended the flush: the counters count that
}

// abort closes c at once (Conn.Abort): SO_LINGER 0 makes the close send a
// reset and drop what the kernel still holds; queued output is dropped.
func (l *loop) abort(c *Conn) {
	if c.flags&fClosed != 0 {
		return
	}
	setLingerZero(int(c.fd))
	c.closing = nil // an abort ends a graceful close too
	l.closeNow(c, ErrAborted)
}

// hangupCause is the close cause for EPOLLHUP/EPOLLERR on a connection that
// is not reading, or whose poll failed (netpoll.Fail: the backend can no
// longer watch it).
func (c *Conn) hangupCause(ev netpoll.Events) error {
	if ev&netpoll.Fail != 0 {
		return errPollFailed
	}
	if err := netpoll.SockError(int(c.fd)); err != nil {
		return err
	}
	return ErrPeerClosed
}

// drainPhase carries out a shutdown: the first time, release the listener
// and ask every connection to close after its output drains; once the drain
// deadline passes (or Shutdown's context ends), close what is left.
func (l *loop) drainPhase() {
	e := l.e
	if !e.draining.Load() {
		return
	}
	if !l.draining {
		l.draining = true
		l.releaseListener()
		for _, c := range l.conns {
			if c != nil && c.flags&fClosed == 0 {
				l.requestClose(c, ErrShutdown)
			}
		}
	}
	if d := e.drainDeadline.Load(); e.force.Load() || d != 0 && l.now >= d {
		for _, c := range l.conns {
			if c != nil && c.flags&fClosed == 0 {
				l.closeNow(c, ErrShutdown)
			}
		}
	}
}
