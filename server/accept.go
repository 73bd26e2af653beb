package server

import (
	"errors"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/server/internal/netpoll"
)

// acceptPhase accepts up to MaxAcceptPerTurn connections when the listener
// was reported readable, through the poller (accept4 under epoll; under
// io_uring the fds its multishot accept brought). The listener is
// level-triggered (io_uring's queue is reported the same way), so a backlog
// left by the budget is reported again next turn.
func (l *loop) acceptPhase() {
	if !l.lis.ready || !l.lis.in || !l.wantListen() {
		return
	}
	for i := 0; i < l.cfg.MaxAcceptPerTurn; i++ {
		if l.e.gate.Load()&gateHandshakes != 0 {
			return // MaxHandshakes reached within this batch (tls.go)
		}
		if l.e.rejecting.Load() {
			if !l.acceptReject() {
				return
			}
			continue
		}
		if !l.e.reserveConn() {
			return // at MaxConns; the loop that reached it closes the gate
		}
		fd, peer, en := l.p.Accept(l.lis.fd)
		if en != 0 {
			l.e.unreserveConn()
			switch en {
			case unix.EAGAIN:
				return
			case unix.EINTR:
				continue
			case unix.ECONNABORTED:
				l.acceptError(en)
				continue
			case unix.EMFILE, unix.ENFILE, unix.ENOBUFS, unix.ENOMEM:
				l.pauseForFds(en)
				return
			default:
				l.acceptError(en)
				return
			}
		}
		if left := l.shed.cooling(peer); left > 0 {
			l.e.unreserveConn()
			l.st[cGoAwayConns]++
			l.rejectConn(fd, admission.ReasonGoAway, left)
			continue
		}
		l.open(fd, peer)
	}
}

// pauseForFds takes the listener out of epoll for AcceptRetryDelay after
// the process ran out of fds (or kernel memory): a level-triggered listener
// that cannot be served would otherwise wake the loop in a tight spin. The
// backlog keeps the pending connections meanwhile.
func (l *loop) pauseForFds(en unix.Errno) {
	l.st[cAcceptPauses]++
	l.st[cPauseErrnoBase+int(pauseErrnoOf(en))]++
	l.lis.pausedUntil = l.now + max(int64(l.cfg.AcceptRetryDelay), 1)
	l.shed.acceptError(en)
	if lg := l.cfg.Logger; lg != nil && l.st[cAcceptPauses]&(l.st[cAcceptPauses]-1) == 0 {
		// logged on the 1st, 2nd, 4th, 8th... pause so a long shortage cannot flood the log
		lg.Warn("sluice: accept paused", "loop", l.id, "errno", en.Error(),
			"retry", l.cfg.AcceptRetryDelay.String(), "pauses", l.st[cAcceptPauses])
	}
}

// acceptError counts an accept4 or connection setup failure by errno.
func (l *loop) acceptError(en unix.Errno) {
	l.st[cAcceptErrors]++
	l.st[cAcceptErrnoBase+int(acceptErrnoOf(en))]++
}

// open registers a freshly accepted fd as a connection and calls OnOpen.
func (l *loop) open(fd int, peer netip.AddrPort) {
	if en := netpoll.SetNoDelay(fd); en != 0 {
		l.acceptError(en) // the peer may already be gone; carry on without TCP_NODELAY
	}
	l.gen++
	if uint32(l.gen) == 0 { // tag 0 marks the loop's own fds
		l.gen++
	}
	c := &Conn{loop: l, fd: int32(fd), gen: l.gen, remote: peer}
	c.tm.idx, c.tm.c = -1, c
	l.shed.opened(c)
	// a TLS connection's events wake its handshake goroutine first (tls.go)
	if err := l.p.Add(fd, connEvents, uint32(c.gen)); err != nil {
		sysClose(fd)
		l.e.unreserveConn()
		var en unix.Errno
		errors.As(err, &en)
		l.acceptError(en)
		return
	}
	l.setConn(fd, c)
	l.nconns++
	l.st[cAccepted]++
	l.e.accepted()
	c.lastActive = l.now
	c.armConn()
	if l.cfg.TLS != nil {
		l.startHandshake(c) // OnOpen once it is done (tls.go)
		return
	}
	c.act(l.onOpen(c))
}

// acceptReject accepts one connection while the gate is rejecting and
// refuses it at once (rejectConn). It reports whether to go on accepting.
func (l *loop) acceptReject() bool {
	fd, _, en := l.p.Accept(l.lis.fd)
	switch en {
	case 0:
		l.st[cBacklogRejects]++
		l.rejectConn(fd, admission.ReasonGlobal, backlogRetryAfter)
		return true
	case unix.EINTR, unix.ECONNABORTED:
		return true
	case unix.EMFILE, unix.ENFILE, unix.ENOBUFS, unix.ENOMEM:
		l.pauseForFds(en)
	}
	return false
}
