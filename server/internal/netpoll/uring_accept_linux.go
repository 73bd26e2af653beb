//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package netpoll

import (
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/uring"
)

// The io_uring backend's accepts. The listener's registration (the one
// registration without Edge and with tag 0) is a multishot
// IORING_OP_ACCEPT rather than a poll: the kernel accepts each connection
// as it arrives and posts its fd with a completion, which the poller
// queues (accepted). Accept hands the queue over to the owner one fd at a
// time (the engine's accept phase, under its accept budget), and Wait
// reports the listener readable while the queue holds fds (the
// level-triggered contract: a budget's leftovers are reported again). Del
// (the engine's listen gate closing) cancels the multishot accept and Add
// arms a new one; fds posted meanwhile stay queued and are handed over
// after the Add (or closed by Close). A multishot accept that ends with an
// error is not re-armed until the owner has seen the error through Accept:
// after EMFILE, ENFILE, ENOBUFS or ENOMEM the owner is expected to take
// the listener out (Del) and put it back (Add) once it may retry; after
// any other the poller arms it again. The peer's address, which a
// multishot accept cannot return per connection, is read with
// getpeername(2): one system call per connection, as accept4 was.
// pollAccept keeps the listener on a one-shot poll and accept4 (tests and
// comparisons).

// kindAccept is the user_data kind of the listener's multishot accept.
const kindAccept = 7

// Accept returns the next accepted connection for lfd's registration: a
// queued fd and its peer, the error that ended the multishot accept, or
// EAGAIN when neither is there. A listener not accepting by completion
// (pollAccept, or not registered) is accepted with accept4.
func (p *URing) Accept(lfd int) (int, netip.AddrPort, Errno) {
	if p.accHead < len(p.accepted) {
		fd := int(p.accepted[p.accHead])
		if p.accHead++; p.accHead == len(p.accepted) {
			p.accepted, p.accHead = p.accepted[:0], 0
		}
		peer, en := peerAddr(fd)
		if en != 0 { // the peer is already gone (ENOTCONN): as accept4's ECONNABORTED
			Close(fd)
			return -1, netip.AddrPort{}, unix.ECONNABORTED
		}
		return fd, peer, 0
	}
	i, ok := p.lookup(lfd)
	if !ok || !p.regs[i].acc {
		return Accept(lfd)
	}
	if en := p.acceptErr; en != 0 {
		p.acceptErr = 0
		switch en {
		case unix.EMFILE, unix.ENFILE, unix.ENOBUFS, unix.ENOMEM:
			// the owner pauses the listener: Del, and Add once it may retry
		default:
			p.settle(i) // arm it again
		}
		return -1, netip.AddrPort{}, en
	}
	return -1, netip.AddrPort{}, unix.EAGAIN
}

// completeAccept handles a completion of registration i's multishot
// accept: the fd goes on the queue; a last completion (no MORE) re-arms
// the accept while the listener is registered, unless it ended with an
// error the loop must see first (acceptErr). An error that says the
// listener itself is unusable (EBADF, ENOTSOCK, EINVAL, EOPNOTSUPP) is the
// loop's error, as a failed poll of the listener is.
func (p *URing) completeAccept(i uint32, c uring.CQE) error {
	r := &p.regs[i]
	if c.Res >= 0 {
		p.accepted = append(p.accepted, c.Res)
	}
	if c.More() {
		return nil
	}
	r.armed = false
	if c.Res < 0 && c.Res != -int32(unix.ECANCELED) && r.live {
		switch en := unix.Errno(-c.Res); en {
		case unix.EBADF, unix.ENOTSOCK, unix.EINVAL, unix.EOPNOTSUPP:
			return fmt.Errorf("sluice: io_uring accept on fd %d: %w", r.fd, en)
		default:
			p.acceptErr = en
			return nil
		}
	}
	p.settle(i) // re-arm a live one, free a removed one
	return nil
}

// acceptPending reports whether the registered listener has fds or an
// error waiting for accept: its readiness, which no completion may bring
// again (the fds are out of the kernel's queue), so Wait and Park must not
// sleep on it.
func (p *URing) acceptPending() bool {
	return p.accFd >= 0 && (p.accHead < len(p.accepted) || p.acceptErr != 0)
}

// listenerReady appends a readable event for the accepting listener when
// fds or an error wait for accept (acceptPending); it reports the new count.
func (p *URing) listenerReady(out int) int {
	if !p.acceptPending() {
		return out
	}
	p.events[out] = uringEvent{fd: p.accFd, ev: In}
	return out + 1
}

// AcceptQueued returns how many accepted fds wait for Accept.
func (p *URing) AcceptQueued() int { return len(p.accepted) - p.accHead }

// closeAccepted closes the fds accepted and never handed over.
func (p *URing) closeAccepted() {
	for _, fd := range p.accepted[p.accHead:] {
		Close(int(fd))
	}
	p.accepted, p.accHead = p.accepted[:0], 0
}
