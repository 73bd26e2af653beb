package server

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

const platformSupported = true

// Event bits, the epoll ones themselves so no translation happens per event.
const (
	evIn        = unix.EPOLLIN
	evOut       = unix.EPOLLOUT
	evRdHup     = unix.EPOLLRDHUP
	evHup       = unix.EPOLLHUP
	evErr       = unix.EPOLLERR
	evEdge      = unix.EPOLLET
	evExclusive = unix.EPOLLEXCLUSIVE
)

// epollPoller is the epoll backend: one epoll set, one timerfd (CLOCK_MONOTONIC,
// the clock Go's monotonic time uses) and one eventfd, both registered
// edge-triggered so neither needs a read: every expiry or write is a new
// edge, and timerfd_settime resets the expiry count.
type epollPoller struct {
	epfd    int
	timerfd int
	wakefd  int
	opened  bool // the fds above are valid or -1 (the zero poller holds none)
	events  []unix.EpollEvent

	// pk parks the loop on a duplicate of epfd registered with Go's
	// netpoller (park); opened on first use.
	pk parker
}

func (p *epollPoller) open(maxEvents int) error {
	p.epfd, p.timerfd, p.wakefd, p.opened = -1, -1, -1, true
	var err error
	if p.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		p.epfd = -1
		return os.NewSyscallError("epoll_create1", err)
	}
	if p.timerfd, err = unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC); err != nil {
		p.timerfd = -1
		p.close()
		return os.NewSyscallError("timerfd_create", err)
	}
	if p.wakefd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		p.wakefd = -1
		p.close()
		return os.NewSyscallError("eventfd", err)
	}
	for _, fd := range []int{p.timerfd, p.wakefd} {
		if err := p.add(fd, evIn|evEdge, 0); err != nil {
			p.close()
			return err
		}
	}
	p.events = make([]unix.EpollEvent, maxEvents)
	return nil
}

func (p *epollPoller) ctl(op, fd int, ev, tag uint32) error {
	e := unix.EpollEvent{Events: ev, Fd: int32(fd), Pad: int32(tag)}
	_, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(p.epfd), uintptr(op), uintptr(fd),
		uintptr(unsafe.Pointer(&e)), 0, 0)
	if errno != 0 {
		return os.NewSyscallError("epoll_ctl", errno)
	}
	return nil
}

func (p *epollPoller) add(fd int, ev, tag uint32) error {
	return p.ctl(unix.EPOLL_CTL_ADD, fd, ev, tag)
}

func (p *epollPoller) mod(fd int, ev, tag uint32) error {
	return p.ctl(unix.EPOLL_CTL_MOD, fd, ev, tag)
}

func (p *epollPoller) del(fd int) error { return p.ctl(unix.EPOLL_CTL_DEL, fd, 0, 0) }

// wait fills p.events. block=false is a raw epoll_pwait with timeout 0: it
// cannot block, so it skips the runtime's entersyscall/exitsyscall and gives
// sysmon no syscall to preempt. block=true sleeps (timeout -1; deadlines come
// through the timerfd) through an ordinary syscall so the runtime can hand
// the P to other goroutines. EINTR returns 0 events.
func (p *epollPoller) wait(block bool) (int, error) {
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

// park is a blocking wait that releases the loop's P while it sleeps: the
// goroutine parks in Go's netpoller (parker) on a duplicate of the epoll fd
// (an epoll set is readable while it has events) and polls the set without
// blocking when woken. A blocking epoll_pwait keeps the P in its syscall
// until sysmon retakes it, one sysmon tick later (up to 10 ms once sysmon
// has backed off); a pool worker that shares the P (a loop per P, the
// default) waited that long each time the loop slept while it was
// runnable. If the duplicate cannot be set up, park is wait(true).
func (p *epollPoller) park() (int, error) {
	if n, err, ok := p.pk.sleep(p.openPark); ok {
		return n, err
	}
	return p.wait(true)
}

// openPark duplicates epfd, non-blocking, for the parker.
func (p *epollPoller) openPark() error {
	fd, err := unix.FcntlInt(uintptr(p.epfd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return err
	}
	return p.pk.open(fd, "sluice-epoll", func() (int, error) { return p.wait(false) })
}

func (p *epollPoller) event(i int) (fd int, tag, ev uint32) {
	e := &p.events[i]
	return int(e.Fd), uint32(e.Pad), e.Events
}

var wakeValue = uint64(1)

// wake adds 1 to the eventfd: a new edge for the loop's epoll set; and
// a loop parked in the netpoller is made runnable on the caller's P
// (parker.kick).
func (p *epollPoller) wake() error {
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

// armTimer makes the timerfd fire once, afterNanos from now (at least 1 ns;
// a zero it_value would disarm it).
func (p *epollPoller) armTimer(afterNanos int64) error {
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

func (p *epollPoller) close() {
	if !p.opened {
		return
	}
	p.opened = false
	p.pk.close()
	for _, fd := range []*int{&p.wakefd, &p.timerfd, &p.epfd} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}
