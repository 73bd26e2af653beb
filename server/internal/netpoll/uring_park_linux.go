//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package netpoll

import (
	"os"

	"golang.org/x/sys/unix"
)

// Park is a blocking wait that releases the loop's P while it sleeps, as
// Epoll.Park does for epoll: a blocking io_uring_enter keeps the P until
// sysmon retakes it (up to 10 ms once sysmon has backed off), and a pool
// worker sharing the P waits that long (docs/OVERLOAD.md, The worker
// pool's law).
//
// The ring signals an eventfd (IORING_REGISTER_EVENTFD) when it has
// completion work, and the loop goroutine parks in Go's netpoller on that
// eventfd (parker); when woken it collects the work with a non-blocking
// Wait. The signals are switched off (a flag in the ring's memory) outside
// Park, so the ordinary blocking wait costs nothing more. The eventfd's
// counter is never read: the netpoller watches it edge-triggered and every
// signal is a new edge. A poll that an eventfd write completes (Wake's own
// eventfd) is signalled late by the kernel, or not at all (an RCU
// callback; internal/uring's TestRegisterEventfd), so Wake kicks the
// parked loop itself (parker.kick). If the eventfd cannot be set up or
// registered, Park is Wait(true).
func (p *URing) Park() (int, error) {
	if p.ring == nil || p.pk.off || p.acceptPending() {
		return p.Wait(true) // which does not sleep while accepts wait
	}
	p.ring.EventfdSignals(true)
	n, err, ok := p.pk.sleep(p.openPark)
	p.ring.EventfdSignals(false)
	if ok {
		return n, err
	}
	return p.Wait(true)
}

// openPark creates the park eventfd, registers it with the ring and hands
// it to the parker. It runs inside the first Park's sleep, with signals on
// (a registration starts with them on; Park turns them off after it).
func (p *URing) openPark() error {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return os.NewSyscallError("eventfd", err)
	}
	if err := p.ring.RegisterEventfd(fd); err != nil {
		unix.Close(fd)
		return err
	}
	return p.pk.open(fd, "sluice-uring-park", func() (int, error) { return p.Wait(false) })
}
