package server

import (
	"errors"
	"net/netip"

	"golang.org/x/sys/unix"
)

// Gate reasons: the listen gate is open only while no reason holds it
// closed. Each is a bit in Engine.gate.
const (
	gateMaxConns  uint32 = 1 << iota // MaxConns reached, until MaxConnsLow
	gateShutdown                     // Shutdown started
	gateAdmission                    // reserved for admission policy (issue 5)
)

// acceptPhase accepts up to MaxAcceptPerTurn connections when the listener
// was reported readable. The listener is level-triggered, so a backlog left
// by the budget is reported again next turn.
func (l *loop) acceptPhase() {
	if !l.listenReady || !l.listening || !l.wantListen() {
		return
	}
	for i := 0; i < l.cfg.MaxAcceptPerTurn; i++ {
		if l.pol.rejecting {
			if !l.acceptReject() {
				return
			}
			continue
		}
		if !l.e.reserveConn() {
			return // at MaxConns; the loop that reached it closes the gate
		}
		fd, peer, en := sysAccept(l.lfd)
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
	l.fdPausedUntil = l.now + max(int64(l.cfg.AcceptRetryDelay), 1)
	l.policyAcceptError(en)
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
	if en := setNoDelay(fd); en != 0 {
		l.acceptError(en) // the peer may already be gone; carry on without TCP_NODELAY
	}
	l.gen++
	if uint32(l.gen) == 0 { // tag 0 marks the loop's own fds
		l.gen++
	}
	c := &Conn{loop: l, fd: int32(fd), gen: l.gen, remote: peer}
	c.tm.idx, c.tm.c = -1, c
	if err := l.p.add(fd, connEvents, uint32(c.gen)); err != nil {
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
	l.armConn(c)
	l.act(c, l.h.OnOpen(c))
}

// wantListen reports whether this loop's listener should be in epoll.
func (l *loop) wantListen() bool {
	if l.lfd < 0 || l.draining || l.fdPausedUntil != 0 {
		return false
	}
	g := l.e.gate.Load()
	// A policy gate in GateRejecting keeps accepting (to reject) even at
	// MaxConns: refusing explicitly is the point of that state.
	return g == 0 || l.pol.rejecting && g&^(gateMaxConns|gateAdmission) == 0
}

// setListening adds the listener to epoll or takes it out (the gate
// mechanism; policy decides through Engine.pauseAccept/resumeAccept).
// EPOLLEXCLUSIVE can only be given with EPOLL_CTL_ADD, hence add/del rather
// than mod.
func (l *loop) setListening(on bool) {
	var err error
	if on {
		ev := uint32(evIn)
		if l.lfdShared {
			ev |= evExclusive
		}
		err = l.p.add(l.lfd, ev, 0)
	} else {
		err = l.p.del(l.lfd)
	}
	if err != nil {
		l.e.fail(err)
		return
	}
	l.listening = on
}

// releaseListener takes the listener out for good (shutdown, exit). A shared
// listener is closed by the last loop to let go of it, so no loop can
// accept on an fd number that was closed and reused.
func (l *loop) releaseListener() {
	if l.lfd < 0 {
		return
	}
	if l.listening {
		l.p.del(l.lfd)
		l.listening = false
	}
	if !l.lfdShared || l.e.sharedRefs.Add(-1) == 0 {
		sysClose(l.lfd)
	}
	l.lfd = -1
}
