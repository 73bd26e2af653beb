package netpoll

import (
	"net/netip"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Event bits, the epoll ones themselves so no translation happens per event.
const (
	In        Events = unix.EPOLLIN
	Out       Events = unix.EPOLLOUT
	RdHup     Events = unix.EPOLLRDHUP
	Hup       Events = unix.EPOLLHUP
	Err       Events = unix.EPOLLERR
	Edge      Events = unix.EPOLLET
	Exclusive Events = unix.EPOLLEXCLUSIVE
)

// Epoll is the epoll backend: one epoll set, one timerfd (CLOCK_MONOTONIC,
// the clock Go's monotonic time uses) and one eventfd, both registered
// edge-triggered so neither needs a read: every expiry or write is a new
// edge, and timerfd_settime resets the expiry count. The tag rides in the
// epoll_event's padding, so Event is a load. Its zero value is ready for
// Open.
type Epoll struct {
	epfd    int
	timerfd int
	wakefd  int
	opened  bool         // the fds above are valid or -1 (the zero poller holds none)
	pend    atomic.Int32 // epfd+1 for Pending from other goroutines; 0: closed
	events  []unix.EpollEvent

	// pk parks the loop on a duplicate of epfd registered with Go's
	// netpoller (Park); opened on first use.
	pk parker
}

// Open creates the set, the timerfd and the eventfd and registers the
// latter two (tag 0).
func (p *Epoll) Open(maxEvents int) error {
	p.epfd, p.timerfd, p.wakefd, p.opened = -1, -1, -1, true
	var err error
	if p.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		p.epfd = -1
		return os.NewSyscallError("epoll_create1", err)
	}
	p.pend.Store(int32(p.epfd) + 1)
	if p.timerfd, err = unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC); err != nil {
		p.timerfd = -1
		p.Close()
		return os.NewSyscallError("timerfd_create", err)
	}
	if p.wakefd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		p.wakefd = -1
		p.Close()
		return os.NewSyscallError("eventfd", err)
	}
	for _, fd := range []int{p.timerfd, p.wakefd} {
		if err := p.Add(fd, In|Edge, 0); err != nil {
			p.Close()
			return err
		}
	}
	p.events = make([]unix.EpollEvent, maxEvents)
	return nil
}

func (p *Epoll) ctl(op, fd int, ev Events, tag uint32) error {
	e := unix.EpollEvent{Events: uint32(ev), Fd: int32(fd), Pad: int32(tag)}
	_, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(p.epfd), uintptr(op), uintptr(fd),
		uintptr(unsafe.Pointer(&e)), 0, 0)
	if errno != 0 {
		return os.NewSyscallError("epoll_ctl", errno)
	}
	return nil
}

// Add, Mod and Del are epoll_ctl(2), as raw calls (they cannot block).
func (p *Epoll) Add(fd int, ev Events, tag uint32) error {
	return p.ctl(unix.EPOLL_CTL_ADD, fd, ev, tag)
}

func (p *Epoll) Mod(fd int, ev Events, tag uint32) error {
	return p.ctl(unix.EPOLL_CTL_MOD, fd, ev, tag)
}

func (p *Epoll) Del(fd int) error { return p.ctl(unix.EPOLL_CTL_DEL, fd, 0, 0) }

// Attach has nothing to do: an epoll set is not tied to a thread.
func (p *Epoll) Attach() error { return nil }

// Forget has nothing to do: closing an fd takes it out of the epoll set.
func (p *Epoll) Forget(fd int) {}

// Accept is accept4(2) on the listener.
func (p *Epoll) Accept(lfd int) (int, netip.AddrPort, Errno) { return Accept(lfd) }

// AcceptQueued is 0: epoll queues nothing; the backlog is the kernel's.
func (p *Epoll) AcceptQueued() int { return 0 }

// SubmitNow has nothing to do: the owner's writes are its own system calls.
func (p *Epoll) SubmitNow() error { return nil }

// Wait fills p.events. block=false is a raw epoll_pwait with timeout 0: it
// cannot block, so it skips the runtime's entersyscall/exitsyscall and gives
// sysmon no syscall to preempt. block=true sleeps (timeout -1; deadlines come
// through the timerfd) through an ordinary syscall so the runtime can hand
// the P to other goroutines. EINTR returns 0 events.
func (p *Epoll) Wait(block bool) (int, error) {
	var r uintptr
	var errno unix.Errno
	ptr := uintptr(unsafe.Pointer(&p.events[0]))
	if block {
		r, _, errno = unix.Syscall6(unix.SYS_EPOLL_PWAIT, uintptr(p.epfd), ptr, uintptr(len(p.events)),
			^uintptr(0), 0, 0)
	} else {
		r, _, errno = unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(p.epfd), ptr, uintptr(len(p.events)),
			0, 0, 0)
	}
	switch errno {
	case 0:
		return int(r), nil
	case unix.EINTR:
		return 0, nil
	}
	return 0, os.NewSyscallError("epoll_pwait", errno)
}

// Park is a blocking wait that releases the loop's P while it sleeps: the
// goroutine parks in Go's netpoller (parker) on a duplicate of the epoll fd
// (an epoll set is readable while it has events) and polls the set without
// blocking when woken. A blocking epoll_pwait keeps the P in its syscall
// until sysmon retakes it, one sysmon tick later (up to 10 ms once sysmon
// has backed off), and a goroutine that shares the P (a pool worker) waits
// that long. If the duplicate cannot be set up, Park is Wait(true).
func (p *Epoll) Park() (int, error) {
	if n, err, ok := p.pk.sleep(p.openPark); ok {
		return n, err
	}
	return p.Wait(true)
}

// openPark duplicates epfd, non-blocking, for the parker.
func (p *Epoll) openPark() error {
	fd, err := unix.FcntlInt(uintptr(p.epfd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return err
	}
	return p.pk.open(fd, "sluice-epoll", func() (int, error) { return p.Wait(false) })
}

// Pending reports whether the set has events the loop has not collected,
// from any goroutine: poll(2) on the epoll fd, which collects nothing. A
// set closed meanwhile (its fd number reused) at worst gives a wrong
// answer, which only the TLS handshakes' share reads (server/tls_share.go).
func (p *Epoll) Pending() bool {
	fd := p.pend.Load() - 1
	if fd < 0 {
		return false
	}
	pfd := [1]unix.PollFd{{Fd: fd, Events: unix.POLLIN}}
	n, err := unix.Poll(pfd[:], 0)
	return err == nil && n > 0 && pfd[0].Revents&unix.POLLIN != 0
}

// Event returns the i-th event of the last Wait.
func (p *Epoll) Event(i int) (fd int, tag uint32, ev Events) {
	e := &p.events[i]
	return int(e.Fd), uint32(e.Pad), Events(e.Events)
}

var wakeValue = uint64(1)

// Wake adds 1 to the eventfd: a new edge for the loop's epoll set; and
// a loop parked in the netpoller is made runnable on the caller's P
// (parker.kick).
func (p *Epoll) Wake() error {
	if !p.opened {
		return nil
	}
	_, _, errno := unix.RawSyscall(unix.SYS_WRITE, uintptr(p.wakefd),
		uintptr(unsafe.Pointer(&wakeValue)), 8)
	if errno != 0 && errno != unix.EAGAIN { // EAGAIN: counter saturated, a wake-up is pending anyway
		return os.NewSyscallError("write", errno)
	}
	p.pk.kick()
	return nil
}

// ArmTimer makes the timerfd fire once, afterNanos from now (at least 1 ns;
// a zero it_value would disarm it).
func (p *Epoll) ArmTimer(afterNanos int64) error {
	if afterNanos < 1 {
		afterNanos = 1
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(afterNanos)}
	_, _, errno := unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, uintptr(p.timerfd), 0,
		uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	if errno != 0 {
		return os.NewSyscallError("timerfd_settime", errno)
	}
	return nil
}

// Close closes the set, the timerfd, the eventfd and the park descriptor.
func (p *Epoll) Close() {
	if !p.opened {
		return
	}
	p.opened = false
	p.pend.Store(0)
	p.pk.close()
	for _, fd := range []*int{&p.wakefd, &p.timerfd, &p.epfd} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}
