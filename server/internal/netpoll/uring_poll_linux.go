//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package netpoll

import (
	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/uring"
)

// The io_uring poller's poll registrations: arming, re-arming and
// cancelling the multishot polls that stand for epoll interest.

// settle makes the submission registration i needs now, if any: arm a live
// one that has no poll, update one whose events changed, remove a poll that
// is no longer registered, or free the record once nothing is in flight.
// Before attach, or when the submission queue stays full, i waits on later.
func (p *URing) settle(i uint32) {
	r := &p.regs[i]
	if !r.live && !r.armed && !r.rArmed && !r.sArmed {
		if !r.queued {
			p.free = append(p.free, i)
		}
		return
	}
	if p.ring == nil {
		p.queue(i)
		return
	}
	recv := r.recv && p.bufs != nil
	var err error
	switch {
	case !r.live && r.armed && r.acc:
		var s *uring.SQE
		if s, err = p.ring.PrepCancel(uring.Pack(kindAccept, i, r.gen), false, p.ctlData(i)); err == nil {
			s.SetFlags(uring.FlagSkipSuccess)
		}
	case !r.live && r.armed:
		var s *uring.SQE
		if s, err = p.ring.PrepPollRemove(p.pollData(i), p.ctlData(i)); err == nil {
			s.SetFlags(uring.FlagSkipSuccess)
		}
	case !r.live:
	case !r.armed && r.acc:
		if p.acceptErr == 0 {
			if _, err = p.ring.PrepAcceptMultishot(int(r.fd), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, uring.Pack(kindAccept, i, r.gen)); err == nil {
				r.armed = true
			}
		}
	case !r.armed && recv && r.ev&Out == 0:
		// a recv-mode connection polls only for room to write
	case !r.armed && r.level:
		if _, err = p.ring.PrepPollAdd(int(r.fd), uint32(r.ev), p.pollData(i)); err == nil {
			r.armed, r.updated = true, false
		}
	case !r.armed:
		if _, err = p.ring.PrepPollMultishot(int(r.fd), p.pollMask(r), p.pollData(i)); err == nil {
			r.armed, r.updated = true, false
		}
	case r.updated:
		var s *uring.SQE
		if s, err = p.ring.PrepPollUpdate(p.pollData(i), p.pollMask(r), p.ctlData(i)); err == nil {
			s.SetFlags(uring.FlagSkipSuccess)
			r.updated = false
		}
	}
	if err == nil && recv {
		err = p.settleRecv(i)
	}
	if err == nil && !r.live && r.sArmed && r.orphan != nil && !r.sCancel {
		// a closed connection's send may wait for room forever (a peer
		// that does not read): cancel it, so the socket and its bytes go
		var s *uring.SQE
		if s, err = p.ring.PrepCancel(uring.Pack(kindSend, i, r.gen), false, uring.Pack(kindSendCtl, i, r.gen)); err == nil {
			s.SetFlags(uring.FlagSkipSuccess)
			r.sCancel = true
		}
	}
	if err != nil {
		p.queue(i)
	}
}

// pollMask is what registration r's poll watches: its interest, or for a
// recv-mode connection only EPOLLOUT (input comes with the recv).
func (p *URing) pollMask(r *pollReg) uint32 {
	if r.recv && p.bufs != nil {
		return uint32(r.ev & Out)
	}
	return uint32(r.ev)
}

func (p *URing) queue(i uint32) {
	if r := &p.regs[i]; !r.queued {
		r.queued = true
		p.later = append(p.later, i)
	}
}

// settleLater retries the registrations on later.
func (p *URing) settleLater() {
	n := len(p.later)
	for k := 0; k < n; k++ {
		i := p.later[k]
		p.regs[i].queued = false
		p.settle(i)
	}
	p.later = append(p.later[:0], p.later[n:]...)
}
