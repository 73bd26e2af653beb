package server

import (
	"fmt"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/ioflush"
	"github.com/valyala/bytebufferpool"

	"github.com/sluicenet/sluice/server/internal/netpoll"
)

// Refusals are mechanism: whoever decided (the admission stage, the worker
// pool, a handler through Conn.Reject, the gate in GateRejecting), the
// engine answers a refused frame with the codec's protocol.Rejecter, counts
// it by reason, and keeps the connection open; a codec without a Rejecter
// has the connection closed with ErrRejected instead, so a refusal is
// never silent.

// reasonOf returns reason as an admission.Reason, or ReasonNone ("other")
// for a reason that is not one.
func reasonOf(reason string) admission.Reason {
	r, err := admission.ParseReason(reason)
	if err != nil {
		return admission.ReasonNone
	}
	return r
}

// answerReject writes the codec's reject for frame, refused for reason,
// or closes the connection with ErrRejected when the codec has none. It
// counts the reject (Stats.Rejects), not its reason: callers count that
// (refused). A reject that leaves c's out-queue holding only refusals is
// reported to the admission stage, which may hold them back
// (AdmissionPolicy.RejectFlushDelay).
func (l *loop) answerReject(c *Conn, frame []byte, reason string, retryAfter time.Duration) {
	l.st[cRejects]++
	if l.rejecter == nil {
		l.requestClose(c, fmt.Errorf("%w: %s", ErrRejected, reason))
		return
	}
	held := c.flags&fRejOnly != 0
	rejOnly := c.outBytes == 0 || held
	// copied into the out-queue's chunks like any reply, so a burst of
	// rejects coalesces instead of taking one out-queue slot each
	l.pools.scratch = l.rejecter.AppendReject(l.pools.scratch[:0], frame, reason, retryAfter)
	if err := c.writeCopy(l.pools.scratch); err != nil {
		l.requestClose(c, err)
		return
	}
	if rejOnly {
		l.shed.rejectQueued(c, held)
	}
}

// rejectConn answers a connection refused as soon as it was accepted
// (the gate is GateRejecting, or its tenant cools after a final refusal):
// one write of the codec's reject for reason with its retry hint, and a
// close; the refusal is counted by reason, the caller counts why. The
// write is best effort: a peer that already sent data may see a reset
// instead (closing a socket with unread input sends RST), which is still
// faster than a dropped handshake. On a TLS engine it only closes: the
// reply would not be a TLS record.
func (l *loop) rejectConn(fd int, reason admission.Reason, retryAfter time.Duration) {
	l.st.refused(reason)
	if l.rejecter != nil && l.cfg.TLS == nil { // a TLS client expects a handshake, not a reply: it sees the close
		b := l.rejecter.AppendReject(l.buf[:0], nil, reason.String(), retryAfter)
		netpoll.Write(fd, b)
	}
	sysClose(fd)
}

// backlogRetryAfter is the retry-after hint of a connection refused while
// the gate is rejecting.
const backlogRetryAfter = 100 * time.Millisecond

// Reject answers frame with the codec's reject (a protocol.Rejecter) for
// reason, with a retry-after hint, and counts it by reason in
// Stats.Admission.Rejects: for refusals the handler decides itself (a
// concurrency limit, a dependency's circuit breaker). The connection stays
// open. Off the loop the reject goes through the loop's inbox. Without a
// Rejecter for the codec it returns ErrRejected and sends nothing; the
// caller decides whether to close. Other errors are those of Write.
func (c *Conn) Reject(frame []byte, reason string, retryAfter time.Duration) error {
	l := c.loop
	rj := l.rejecter
	if rj == nil {
		return ErrRejected
	}
	r := reasonOf(reason)
	if l.onLoop() {
		l.st.refused(r)
		l.shed.countDecision(r)
		l.st[cRejects]++
		l.pools.scratch = rj.AppendReject(l.pools.scratch[:0], frame, reason, retryAfter)
		return c.writeCopy(l.pools.scratch)
	}
	l.e.offRejects.Inc(r)
	if a := l.e.adm; a != nil {
		a.Count(r)
	}
	if c.state.Load() != stateOpen {
		return ErrClosed
	}
	bb := bytebufferpool.Get()
	bb.B = rj.AppendReject(bb.B[:0], frame, reason, retryAfter)
	if err := c.reserve(len(bb.B)); err != nil {
		bytebufferpool.Put(bb)
		return err
	}
	err := l.submit(task{kind: taskWrite, fd: c.fd, gen: c.gen, seg: ioflush.Segment{Buf: bb.B, Pooled: bb}})
	if err != nil {
		c.unreserve(len(bb.B))
		bytebufferpool.Put(bb)
	}
	return err
}
