package netpoll

import (
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/ioflush"
	"github.com/sluicenet/sluice/ringq"
)

// Dispatcher is the poller a loop holds: epoll unless UseURing chose
// io_uring. Each method is one branch and a direct call, which the
// compiler can inline into the loop, so the epoll path costs what the
// epoll code alone costs and nothing goes through an interface on the hot
// path. Its zero value is an unopened epoll poller.
type Dispatcher struct {
	ep Epoll
	ur *URing // nil: epoll
}

// UseURing chooses the io_uring backend; it is called before Open.
// readiness keeps connections on readiness and read(2) (no buffer ring).
func (d *Dispatcher) UseURing(readiness bool) { d.ur = &URing{readyOnly: readiness} }

func (d *Dispatcher) Open(maxEvents int) error {
	if d.ur != nil {
		return d.ur.Open(maxEvents)
	}
	return d.ep.Open(maxEvents)
}

// ThreadBound reports whether the owner must stay on the thread that
// called Attach: an io_uring ring accepts submissions from that thread
// only; an epoll set is any thread's.
func (d *Dispatcher) ThreadBound() bool { return d.ur != nil }

func (d *Dispatcher) Attach() error {
	if d.ur != nil {
		return d.ur.Attach()
	}
	return d.ep.Attach()
}

func (d *Dispatcher) Add(fd int, ev Events, tag uint32) error {
	if d.ur != nil {
		return d.ur.Add(fd, ev, tag)
	}
	return d.ep.Add(fd, ev, tag)
}

func (d *Dispatcher) Mod(fd int, ev Events, tag uint32) error {
	if d.ur != nil {
		return d.ur.Mod(fd, ev, tag)
	}
	return d.ep.Mod(fd, ev, tag)
}

func (d *Dispatcher) Del(fd int) error {
	if d.ur != nil {
		return d.ur.Del(fd)
	}
	return d.ep.Del(fd)
}

func (d *Dispatcher) Forget(fd int) {
	if d.ur != nil {
		d.ur.Forget(fd)
		return
	}
	d.ep.Forget(fd)
}

func (d *Dispatcher) Accept(lfd int) (int, netip.AddrPort, Errno) {
	if d.ur != nil {
		return d.ur.Accept(lfd)
	}
	return d.ep.Accept(lfd)
}

func (d *Dispatcher) AcceptQueued() int {
	if d.ur != nil {
		return d.ur.AcceptQueued()
	}
	return d.ep.AcceptQueued()
}

func (d *Dispatcher) Wait(block bool) (int, error) {
	if d.ur != nil {
		return d.ur.Wait(block)
	}
	return d.ep.Wait(block)
}

func (d *Dispatcher) Park() (int, error) {
	if d.ur != nil {
		return d.ur.Park()
	}
	return d.ep.Park()
}

// Pending reports, from any goroutine, whether the loop has events it has
// not collected. On io_uring, whose completions may wait in the kernel
// until the loop's thread enters it, it is always true.
func (d *Dispatcher) Pending() bool {
	if d.ur != nil {
		return true
	}
	return d.ep.Pending()
}

func (d *Dispatcher) Event(i int) (fd int, tag uint32, ev Events) {
	if d.ur != nil {
		return d.ur.Event(i)
	}
	return d.ep.Event(i)
}

func (d *Dispatcher) Wake() error {
	if d.ur != nil {
		return d.ur.Wake()
	}
	return d.ep.Wake()
}

func (d *Dispatcher) ArmTimer(afterNanos int64) error {
	if d.ur != nil {
		return d.ur.ArmTimer(afterNanos)
	}
	return d.ep.ArmTimer(afterNanos)
}

func (d *Dispatcher) SubmitNow() error {
	if d.ur != nil {
		return d.ur.SubmitNow()
	}
	return d.ep.SubmitNow()
}

func (d *Dispatcher) Close() {
	if d.ur != nil {
		d.ur.Close()
		return
	}
	d.ep.Close()
}

// RecvMode is false on epoll.
func (d *Dispatcher) RecvMode() bool { return d.ur != nil && d.ur.RecvMode() }

// Received, SendIovecs, Send and OrphanSend are called only in recv mode,
// that is on io_uring.
func (d *Dispatcher) Received(i int) ([]byte, int32) { return d.ur.Received(i) }

func (d *Dispatcher) SendIovecs(n int) ([]unix.Iovec, error) { return d.ur.SendIovecs(n) }

func (d *Dispatcher) Send(fd int, iovs []unix.Iovec) error { return d.ur.Send(fd, iovs) }

func (d *Dispatcher) OrphanSend(fd int, q *ringq.Ring[ioflush.Segment]) bool {
	return d.ur.OrphanSend(fd, q)
}

// RecvOn and RecvOff are no-ops on epoll.
func (d *Dispatcher) RecvOn(fd int) {
	if d.ur != nil {
		d.ur.RecvOn(fd)
	}
}

func (d *Dispatcher) RecvOff(fd int) {
	if d.ur != nil {
		d.ur.RecvOff(fd)
	}
}
