//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package uring_test

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/uring"
)

// Operation kinds the echo loop packs into UserData.
const (
	kindAccept uint8 = iota + 1
	kindRecv
	kindSend
	kindClose
	kindWake
	kindCancel
	kindTimeout
	kindMsg
)

// maxQueued bounds the sends waiting behind the one in flight on a
// connection; more received buffers than this would mean the peer sends far
// ahead of its reads, which the echo tests never do.
const maxQueued = 64

// pending is a received buffer still to be echoed: bytes [off, n) of buffer
// bid.
type pending struct {
	bid    uint16
	off, n int
}

// echoConn is one connection slot of the echo loop.
type echoConn struct {
	fd       int
	gen      uint32
	open     bool
	recvEnd  bool // the multishot recv ended for good (EOF, error, cancel)
	starved  bool // the multishot recv ended with -ENOBUFS: re-arm after a recycle
	closing  bool // a close was submitted
	q        [maxQueued]pending
	qh, qlen int // q[qh] is in flight when qlen > 0
}

// echoLoop is a minimal io_uring echo server in the shape an engine would
// take (multishot accept, multishot recv into a provided buffer ring, one
// send in flight per connection from the received buffer, the buffer
// recycled when its send completes), used by the tests and the benchmark.
// It runs on the goroutine that created its ring.
type echoLoop struct {
	t     testing.TB
	r     *uring.Ring
	br    *uring.BufRing
	lfd   int
	conns []echoConn
	cqes  [64]uring.CQE

	accepted, closed, echoed, nobufs, shortSends, stale int
	turns                                               int // io_uring_enter calls
}

func newEchoLoop(t testing.TB, r *uring.Ring, lfd int, buffers, size int) *echoLoop {
	t.Helper()
	br, err := r.NewBufRing(1, buffers, size)
	if err != nil {
		t.Fatalf("NewBufRing: %v", err)
	}
	e := &echoLoop{t: t, r: r, br: br, lfd: lfd, conns: make([]echoConn, 0, 64)}
	e.armAccept()
	return e
}

func (e *echoLoop) must(_ *uring.SQE, err error) {
	if err != nil {
		e.t.Fatalf("prep: %v", err)
	}
}

func (e *echoLoop) armAccept() {
	e.must(e.r.PrepAcceptMultishot(e.lfd, unix.SOCK_CLOEXEC, uring.Pack(kindAccept, 0, 0)))
}

func (e *echoLoop) armRecv(i int) {
	c := &e.conns[i]
	c.starved = false
	e.must(e.r.PrepRecvMultishot(c.fd, e.br.Group(), 0, uring.Pack(kindRecv, uint32(i), c.gen)))
}

// turn runs one loop iteration: submit, wait up to timeout for a
// completion, handle every ready completion.
func (e *echoLoop) turn(timeout time.Duration) {
	e.turns++
	if _, err := e.r.SubmitAndWait(1, timeout); err != nil {
		e.t.Fatalf("SubmitAndWait: %v", err)
	}
	for {
		n := e.r.PeekBatch(e.cqes[:])
		if n == 0 {
			return
		}
		for _, c := range e.cqes[:n] {
			e.handle(c)
		}
		e.r.Advance(n)
	}
}

// handle dispatches one completion by kind, after dropping those whose
// generation no longer matches their slot (completions for a closed
// connection whose slot was reused).
func (e *echoLoop) handle(c uring.CQE) {
	u := c.UserData
	if u.Kind() == kindAccept {
		e.onAccept(c)
		return
	}
	i := int(u.Index())
	if i >= len(e.conns) || !e.conns[i].open || e.conns[i].gen != u.Gen() {
		e.stale++
		if c.HasBuffer() { // a buffer goes back even when its connection is gone
			if id, _, err := e.br.Take(c); err == nil {
				_ = e.br.Recycle(id)
			}
		}
		return
	}
	switch u.Kind() {
	case kindRecv:
		e.onRecv(i, c)
	case kindSend:
		e.onSend(i, c)
	case kindClose:
		e.conns[i].open = false
		e.closed++
	case kindCancel:
	default:
		e.t.Fatalf("unexpected completion %+v", c)
	}
}

func (e *echoLoop) onAccept(c uring.CQE) {
	if !c.More() {
		e.armAccept()
	}
	if c.Res < 0 {
		return
	}
	i := len(e.conns)
	for j := range e.conns {
		if !e.conns[j].open {
			i = j
			break
		}
	}
	if i == len(e.conns) {
		if i == cap(e.conns) {
			unix.Close(int(c.Res))
			return
		}
		e.conns = e.conns[:i+1]
	}
	gen := e.conns[i].gen + 1
	e.conns[i] = echoConn{fd: int(c.Res), gen: gen & uring.GenMask, open: true}
	_ = unix.SetsockoptInt(int(c.Res), unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	e.accepted++
	e.armRecv(i)
}

func (e *echoLoop) onRecv(i int, c uring.CQE) {
	conn := &e.conns[i]
	if c.HasBuffer() {
		id, data, err := e.br.Take(c)
		if err != nil {
			e.t.Fatalf("Take(%+v): %v", c, err)
		}
		if len(data) == 0 || conn.recvEnd || conn.closing {
			e.recycle(id)
		} else {
			if conn.qlen == maxQueued {
				e.t.Fatalf("conn %d: more than %d sends queued", i, maxQueued)
			}
			conn.q[(conn.qh+conn.qlen)%maxQueued] = pending{bid: id, n: len(data)}
			conn.qlen++
			if conn.qlen == 1 {
				e.send(i)
			}
		}
	}
	if c.More() {
		return
	}
	switch {
	case c.Res == -int32(unix.ENOBUFS):
		e.nobufs++
		conn.starved = true
		if e.br.Lent() < e.br.Entries() {
			e.armRecv(i)
		}
	case c.Res > 0: // the kernel ended the multishot (e.g. a full completion queue)
		e.armRecv(i)
	default: // end of file, error or cancellation
		conn.recvEnd = true
		e.maybeClose(i)
	}
}

func (e *echoLoop) send(i int) {
	conn := &e.conns[i]
	p := conn.q[conn.qh]
	e.must(e.r.PrepSend(conn.fd, e.br.Buf(p.bid)[p.off:p.n], unix.MSG_NOSIGNAL, uring.Pack(kindSend, uint32(i), conn.gen)))
}

func (e *echoLoop) onSend(i int, c uring.CQE) {
	conn := &e.conns[i]
	p := &conn.q[conn.qh]
	if c.Res < 0 { // the peer is gone: drop the queue, stop reading
		for conn.qlen > 0 {
			e.recycle(conn.q[conn.qh].bid)
			conn.qh, conn.qlen = (conn.qh+1)%maxQueued, conn.qlen-1
		}
		if !conn.recvEnd {
			e.must(e.r.PrepCancel(uring.Pack(kindRecv, uint32(i), conn.gen), false, uring.Pack(kindCancel, uint32(i), conn.gen)))
		}
		e.maybeClose(i)
		return
	}
	p.off += int(c.Res)
	if p.off < p.n { // short send: the rest goes next, from the same buffer
		e.shortSends++
		e.send(i)
		return
	}
	e.echoed += p.n
	e.recycle(p.bid)
	conn.qh, conn.qlen = (conn.qh+1)%maxQueued, conn.qlen-1
	if conn.qlen > 0 {
		e.send(i)
	}
	e.maybeClose(i)
}

// recycle gives a buffer back and re-arms the recvs that ran dry.
func (e *echoLoop) recycle(id uint16) {
	if err := e.br.Recycle(id); err != nil {
		e.t.Fatalf("Recycle(%d): %v", id, err)
	}
	for j := range e.conns {
		if c := &e.conns[j]; c.open && c.starved && !c.recvEnd && !c.closing {
			e.armRecv(j)
		}
	}
}

// maybeClose closes a connection whose recv has ended once no send is in
// flight, so no buffer is recycled while the kernel may still read it.
func (e *echoLoop) maybeClose(i int) {
	conn := &e.conns[i]
	if !conn.recvEnd || conn.qlen > 0 || conn.closing {
		return
	}
	conn.closing = true
	e.must(e.r.PrepClose(conn.fd, uring.Pack(kindClose, uint32(i), conn.gen)))
}

// until turns the loop until cond holds, failing after testDeadline.
func (e *echoLoop) until(cond func() bool) {
	end := time.Now().Add(testDeadline)
	for !cond() {
		if time.Now().After(end) {
			e.t.Fatalf("echo loop: condition not reached within %v (accepted %d closed %d echoed %d)", testDeadline, e.accepted, e.closed, e.echoed)
		}
		e.turn(20 * time.Millisecond)
	}
}
