//go:build linux

package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// dialWindow is how many connection attempts are in progress at once: enough
// to open thousands of loopback connections in well under a second, few enough
// not to overflow a listen backlog (SOMAXCONN is 4096 by default).
const dialWindow = 256

// resolveSockaddr turns HOST:PORT into a socket address for connect(2).
func resolveSockaddr(addr string) (unix.Sockaddr, int, error) {
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: address %q: %v", ErrInvalidConfig, addr, err)
	}
	if ip4 := ta.IP.To4(); ip4 != nil {
		sa := &unix.SockaddrInet4{Port: ta.Port}
		copy(sa.Addr[:], ip4)
		return sa, unix.AF_INET, nil
	}
	sa := &unix.SockaddrInet6{Port: ta.Port}
	copy(sa.Addr[:], ta.IP.To16())
	return sa, unix.AF_INET6, nil
}

// localSockaddr is the bind address for a LocalAddr (port zero: the kernel
// picks it) in the server address's family; nil for an empty one.
func localSockaddr(local string, family int) (unix.Sockaddr, error) {
	if local == "" {
		return nil, nil
	}
	ip := net.ParseIP(local)
	switch {
	case ip == nil:
		return nil, fmt.Errorf("%w: local address %q is not an IP address", ErrInvalidConfig, local)
	case family == unix.AF_INET && ip.To4() != nil:
		sa := &unix.SockaddrInet4{}
		copy(sa.Addr[:], ip.To4())
		return sa, nil
	case family == unix.AF_INET6 && ip.To4() == nil:
		sa := &unix.SockaddrInet6{}
		copy(sa.Addr[:], ip.To16())
		return sa, nil
	}
	return nil, fmt.Errorf("%w: local address %q is not in the server address's family", ErrInvalidConfig, local)
}

// classify maps a connection error to its kind.
func classify(err error) ErrorKind {
	switch {
	case errors.Is(err, unix.ECONNREFUSED):
		return ErrRefused
	case errors.Is(err, unix.ECONNRESET), errors.Is(err, unix.EPIPE), errors.Is(err, unix.ECONNABORTED):
		return ErrReset
	case errors.Is(err, unix.ETIMEDOUT), errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return ErrTimeout
	case errors.Is(err, ErrMismatch):
		return ErrMismatched
	case errors.Is(err, errPeerClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return ErrRejected
	case tlsFailure(err) != "":
		return ErrTLS
	}
	return ErrOther
}

// errPeerClosed is the end of stream from a server during a run.
var errPeerClosed = errors.New("sluice: bench: server closed the connection")

// dialFailure records a failed connection attempt.
type dialFailure struct {
	errs     errorCounts
	firstErr error
}

func (d *dialFailure) add(err error) {
	d.errs[classify(err)]++
	if d.firstErr == nil {
		d.firstErr = err
	}
}

// dialAll opens n non-blocking TCP connections (TCP_NODELAY set) to sa,
// each bound to local first when it is not nil, dialWindow at a time, each
// bounded by timeout. It returns the connected fds
// and the failures; it stops early when the first full window is refused
// outright (no server) or ctx ends.
func dialAll(ctx context.Context, sa, local unix.Sockaddr, family, n int, timeout time.Duration) ([]int, *dialFailure, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, nil, os.NewSyscallError("epoll_create1", err)
	}
	defer unix.Close(ep)

	fail := &dialFailure{}
	fds := make([]int, 0, n)
	started := make(map[int]time.Time, dialWindow)
	events := make([]unix.EpollEvent, dialWindow)
	attempts := 0

	closeFd := func(fd int) {
		delete(started, fd)
		_ = unix.Close(fd)
	}
	for len(fds)+int(fail.errs.total()) < n {
		if ctx.Err() != nil {
			break
		}
		// Launch attempts up to the window.
		for len(started) < dialWindow && attempts < n {
			attempts++
			fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				fail.add(os.NewSyscallError("socket", err))
				continue
			}
			_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
			if local != nil {
				// The port is chosen at connect, for the 4-tuple, not at
				// bind from the address's ephemeral ports alone.
				_ = unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
				if err := unix.Bind(fd, local); err != nil {
					fail.add(os.NewSyscallError("bind", err))
					_ = unix.Close(fd)
					continue
				}
			}
			err = unix.Connect(fd, sa)
			switch err {
			case nil:
				fds = append(fds, fd)
				continue
			case unix.EINPROGRESS, unix.EINTR:
			default:
				fail.add(os.NewSyscallError("connect", err))
				_ = unix.Close(fd)
				continue
			}
			if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLOUT, Fd: int32(fd)}); err != nil {
				fail.add(os.NewSyscallError("epoll_ctl", err))
				_ = unix.Close(fd)
				continue
			}
			started[fd] = time.Now()
		}
		if len(started) == 0 {
			if attempts >= n {
				break
			}
			// Everything in this window failed at once: with no success yet and
			// a refusal, there is no server.
			if len(fds) == 0 && fail.errs[ErrRefused] > 0 {
				break
			}
			continue
		}
		k, err := unix.EpollWait(ep, events, 50)
		if err != nil && err != unix.EINTR {
			return fds, fail, os.NewSyscallError("epoll_wait", err)
		}
		for _, ev := range events[:max(k, 0)] {
			fd := int(ev.Fd)
			if _, ok := started[fd]; !ok {
				continue
			}
			_ = unix.EpollCtl(ep, unix.EPOLL_CTL_DEL, fd, nil)
			soErr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
			if err == nil && soErr != 0 {
				err = unix.Errno(soErr)
			}
			if err != nil {
				fail.add(os.NewSyscallError("connect", err))
				closeFd(fd)
				continue
			}
			delete(started, fd)
			fds = append(fds, fd)
		}
		now := time.Now()
		for fd, t := range started {
			if now.Sub(t) > timeout {
				fail.add(ErrConnectTimeout)
				_ = unix.EpollCtl(ep, unix.EPOLL_CTL_DEL, fd, nil)
				closeFd(fd)
			}
		}
		if len(fds) == 0 && attempts >= dialWindow && fail.errs[ErrRefused] >= int64(dialWindow) {
			break // refused outright: no server
		}
	}
	for fd := range started {
		closeFd(fd)
	}
	return fds, fail, nil
}

// closeAll closes every fd.
func closeAll(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}
