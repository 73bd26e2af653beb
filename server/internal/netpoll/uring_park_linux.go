//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package netpoll

import (
	"os"

	"golang.org/x/sys/unix"
)

// park is a blocking wait that releases the loop's P while it sleeps, as
// Epoll.Park does for epoll. A blocking io_uring_enter keeps the P
// until sysmon retakes it (up to 10 ms once sysmon has backed off), which a
// pool worker sharing the P waited out each time the loop slept while the
// worker was runnable: measured with 20 ms handlers, one P, 64 connections
// × 16 in flight, 25 frames/s against the 43 the loop serves alone.
//
// The ring signals an eventfd (IORING_REGISTER_EVENTFD) when it has
// completion work, and the loop goroutine parks in Go's netpoller on that
// eventfd (parker); when woken it collects the work with a non-blocking
// wait. The signals are switched off (a flag in the ring's memory) outside
// park, so the ordinary blocking wait costs nothing more. The eventfd's
// counter is never read: the netpoller watches it edge-triggered and every
// signal is a new edge (a read per wake-up made the pool's admitted p99 at
// 200 µs of work and 5x 3-9% worse in 2 of 3 paired rounds by hand). A poll
// that an eventfd write completes (wake's own eventfd) is signalled late by
// the kernel, or not at all (an RCU callback: 22 ms, or more than 200 ms;
// TestRegisterEventfd), so wake kicks the parked loop itself
// (parker.kick). If the eventfd cannot be set up or registered, park is
// Wait(true).
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
// it to the parker. It runs inside the first park's sleep, with signals on
// (a registration starts with them on; park turns them off after it).
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
