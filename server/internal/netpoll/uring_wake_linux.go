//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package netpoll

import (
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/uring"
)

// The io_uring backend's wake-up, timer and teardown, and the detection of
// what the kernel offers.

// Wake adds 1 to the eventfd, a new edge for its multishot poll, and kicks
// a loop parked in the netpoller (see Park: the ring's signal for this
// poll comes late).
func (p *URing) Wake() error {
	if !p.opened {
		return nil
	}
	_, _, errno := unix.RawSyscall(unix.SYS_WRITE, uintptr(p.wakefd),
		uintptr(unsafe.Pointer(&wakeValue)), 8)
	if errno != 0 && errno != unix.EAGAIN {
		return os.NewSyscallError("write", errno)
	}
	p.pk.kick()
	return nil
}

// ArmTimer makes the timerfd fire once, afterNanos from now (at least 1 ns).
func (p *URing) ArmTimer(afterNanos int64) error {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(max(afterNanos, 1))}
	_, _, errno := unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, uintptr(p.timerfd), 0,
		uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	if errno != 0 {
		return os.NewSyscallError("timerfd_settime", errno)
	}
	return nil
}

// Close tears the ring down (cancelling every poll, so the kernel drops its
// references to the descriptors) and closes the timer and wake-up fds.
func (p *URing) Close() {
	if !p.opened {
		return
	}
	p.opened = false
	p.pk.close()
	if p.ring != nil {
		p.ring.CloseWith(func(c uring.CQE) {
			if c.UserData.Kind() == kindAccept && c.Res >= 0 {
				Close(int(c.Res)) // accepted while the ring closed
			}
		})
		p.ring = nil
	}
	p.closeAccepted()
	for _, fd := range []*int{&p.wakefd, &p.timerfd} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

var (
	detectOnce  sync.Once
	detectFeats uring.Feature
	detectErr   error
)

// CheckURing reports why the io_uring backend cannot run here (a
// *uring.MissingError names what the kernel lacks), or nil.
func CheckURing() error {
	_, err := uringUsable()
	return err
}

// uringUsable reports whether the kernel offers what the io_uring backend
// needs (uring.Required, which implies multishot poll: IORING_OP_POLL_ADD
// multishot came in 5.13, multishot accept in 5.19), detecting once per
// process, and returns the features found.
func uringUsable() (uring.Feature, error) {
	detectOnce.Do(func() { detectFeats, detectErr = uring.Detect() })
	return detectFeats, detectErr
}
