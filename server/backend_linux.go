package server

import (
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/ioflush"
	"github.com/sluicenet/sluice/ringq"
)

// evFail is set, with evErr and evHup, on an event for a descriptor the
// backend can no longer watch (an io_uring poll that failed): the loop closes
// the connection with errPollFailed. Epoll never sets it (bit 27 is no
// EPOLL* flag, and poll masks fit in 16 bits).
const evFail = 1 << 27

// poller is the loop's backend: epoll unless use chose io_uring. Each method
// is one branch and a call, so the epoll path is the epoll code as before.
type poller struct {
	ep epollPoller
	ur *uringPoller // nil: epoll
}

// use chooses the backend; it is called before open.
func (p *poller) use(b Backend) {
	if b == BackendIOURing {
		p.ur = &uringPoller{}
	}
}

func (p *poller) open(maxEvents int) error {
	if p.ur != nil {
		return p.ur.open(maxEvents)
	}
	return p.ep.open(maxEvents)
}

// attach runs on the loop's locked thread before its first wait: io_uring
// sets its ring up there (SINGLE_ISSUER); epoll has nothing to do.
func (p *poller) attach() error {
	if p.ur != nil {
		return p.ur.attach()
	}
	return nil
}

func (p *poller) add(fd int, ev, tag uint32) error {
	if p.ur != nil {
		return p.ur.add(fd, ev, tag)
	}
	return p.ep.add(fd, ev, tag)
}

func (p *poller) mod(fd int, ev, tag uint32) error {
	if p.ur != nil {
		return p.ur.mod(fd, ev, tag)
	}
	return p.ep.mod(fd, ev, tag)
}

func (p *poller) del(fd int) error {
	if p.ur != nil {
		return p.ur.del(fd)
	}
	return p.ep.del(fd)
}

// accept accepts one connection on the listener lfd: accept4 with epoll;
// with io_uring the next fd its multishot accept brought (EAGAIN: none).
func (p *poller) accept(lfd int) (int, netip.AddrPort, errno) {
	if p.ur != nil {
		return p.ur.accept(lfd)
	}
	return sysAccept(lfd)
}

// acceptQueued returns how many connections accept would hand over
// without asking the kernel: io_uring's queue; 0 with epoll.
func (p *poller) acceptQueued() int {
	if p.ur != nil {
		return p.ur.acceptQueued()
	}
	return 0
}

// forget is called just before a registered connection fd is closed.
// Closing removes an fd from an epoll set, so epoll does nothing; an
// io_uring poll holds a reference to the file (the socket would stay open),
// so io_uring removes it.
func (p *poller) forget(fd int) {
	if p.ur != nil {
		p.ur.del(fd)
	}
}

// recvMode reports whether connections are read by completion (io_uring
// with its provided buffer ring): their bytes arrive as evData events, whose
// bytes received returns, and the loop makes no read(2).
func (p *poller) recvMode() bool { return p.ur != nil && p.ur.recvMode() }

// received returns the bytes and result (a byte count, 0 for end of file,
// or a negated errno) of event i, which has evData. The bytes are the
// loop's until its next wait.
func (p *poller) received(i int) ([]byte, int32) { return p.ur.received(i) }

// recvOn and recvOff start and stop the delivery of fd's input in recv
// mode (no-ops otherwise).
func (p *poller) recvOn(fd int) {
	if p.ur != nil {
		p.ur.recvOn(fd)
	}
}

func (p *poller) recvOff(fd int) {
	if p.ur != nil {
		p.ur.recvOff(fd)
	}
}

// sendIovecs, send and orphanSend are the write side of recv mode (the
// loop's sends go through the ring; see sendq.go): iovecs to fill for one
// send, the send itself (its completion is an evSent event whose result
// received returns), and the out-queue of a connection closed under a send,
// released when that send completes.
func (p *poller) sendIovecs(n int) ([]unix.Iovec, error) { return p.ur.sendIovecs(n) }

func (p *poller) send(fd int, iovs []unix.Iovec) error { return p.ur.send(fd, iovs) }

func (p *poller) orphanSend(fd int, q *ringq.Ring[ioflush.Segment]) bool {
	return p.ur.orphanSend(fd, q)
}

// submitNow hands the kernel the submissions prepared so far without
// waiting (io_uring; nothing to do on epoll, whose writes are immediate).
func (p *poller) submitNow() error {
	if p.ur != nil {
		return p.ur.submitNow()
	}
	return nil
}

func (p *poller) wait(block bool) (int, error) {
	if p.ur != nil {
		return p.ur.wait(block)
	}
	return p.ep.wait(block)
}

// park is wait(true) that releases the P while it sleeps (see
// epollPoller.park and uringPoller.park).
func (p *poller) park() (int, error) {
	if p.ur != nil {
		return p.ur.park()
	}
	return p.ep.park()
}

func (p *poller) event(i int) (fd int, tag, ev uint32) {
	if p.ur != nil {
		return p.ur.event(i)
	}
	return p.ep.event(i)
}

func (p *poller) wake() error {
	if p.ur != nil {
		return p.ur.wake()
	}
	return p.ep.wake()
}

func (p *poller) armTimer(afterNanos int64) error {
	if p.ur != nil {
		return p.ur.armTimer(afterNanos)
	}
	return p.ep.armTimer(afterNanos)
}

func (p *poller) close() {
	if p.ur != nil {
		p.ur.close()
		return
	}
	p.ep.close()
}
