//go:build linux

package peers

import (
	"context"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The trivial echo: the least work a server can do per message, to measure
// what the load generator can drive when the server costs (almost) nothing.
// One SO_REUSEPORT listener and one edge-triggered epoll loop per OS thread;
// per readable event one read(2) into the loop's buffer and one write(2) of
// the same bytes, no decoding (an echo of bytes is an echo of frames). A short
// write parks the rest on the connection and stops reading it until the
// socket drains.

const (
	trivialBufferBytes = 64 << 10
	trivialEvents      = 256
	trivialWaitMillis  = 100 // how often a blocked loop checks for shutdown
)

type trivialConn struct {
	fd      int
	pending []byte
}

func serveTrivial(ctx context.Context, cfg Config, ready func(net.Addr)) error {
	addr, err := ResolvePort(cfg.Addr)
	if err != nil {
		return err
	}
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return err
	}
	lfds := make([]int, 0, cfg.Loops)
	defer func() {
		for _, fd := range lfds {
			_ = unix.Close(fd)
		}
	}()
	for i := 0; i < cfg.Loops; i++ {
		fd, err := trivialListen(ta)
		if err != nil {
			return err
		}
		lfds = append(lfds, fd)
	}
	ready(ta)
	var stop atomic.Bool
	go func() { <-ctx.Done(); stop.Store(true) }()
	var wg sync.WaitGroup
	errs := make([]error, len(lfds))
	for i, lfd := range lfds {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = trivialLoop(lfd, &stop) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func trivialListen(ta *net.TCPAddr) (int, error) {
	family := unix.AF_INET
	var sa unix.Sockaddr
	if ip4 := ta.IP.To4(); ip4 != nil {
		s := &unix.SockaddrInet4{Port: ta.Port}
		copy(s.Addr[:], ip4)
		sa = s
	} else {
		family = unix.AF_INET6
		s := &unix.SockaddrInet6{Port: ta.Port}
		copy(s.Addr[:], ta.IP.To16())
		sa = s
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
		_ = unix.Close(fd)
		return -1, os.NewSyscallError("setsockopt", err)
	}
	if err := unix.Bind(fd, sa); err != nil {
		_ = unix.Close(fd)
		return -1, os.NewSyscallError("bind", err)
	}
	if err := unix.Listen(fd, unix.SOMAXCONN); err != nil {
		_ = unix.Close(fd)
		return -1, os.NewSyscallError("listen", err)
	}
	return fd, nil
}

func trivialLoop(lfd int, stop *atomic.Bool) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return os.NewSyscallError("epoll_create1", err)
	}
	conns := map[int]*trivialConn{}
	defer func() {
		for fd := range conns {
			_ = unix.Close(fd)
		}
		_ = unix.Close(ep)
	}()
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, lfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(lfd)}); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	buf := make([]byte, trivialBufferBytes)
	events := make([]unix.EpollEvent, trivialEvents)
	closeConn := func(c *trivialConn) {
		delete(conns, c.fd)
		_ = unix.Close(c.fd)
	}
	for !stop.Load() {
		r, _, errno := syscall.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(ep), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
		n := int(r)
		if errno != 0 || n == 0 {
			n, err = unix.EpollWait(ep, events, trivialWaitMillis)
			if err != nil {
				n = 0
			}
		}
		for _, ev := range events[:n] {
			fd := int(ev.Fd)
			if fd == lfd {
				for {
					cfd, _, err := unix.Accept4(lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
					if err != nil {
						break
					}
					_ = unix.SetsockoptInt(cfd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
					if unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, cfd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(cfd)}) != nil {
						_ = unix.Close(cfd)
						continue
					}
					conns[cfd] = &trivialConn{fd: cfd}
				}
				continue
			}
			c := conns[fd]
			if c == nil {
				continue
			}
			drained := false
			if ev.Events&unix.EPOLLOUT != 0 && len(c.pending) > 0 {
				if !trivialFlush(c) {
					closeConn(c)
					continue
				}
				// Reading stopped while the output was parked; input that
				// arrived meanwhile raised no new edge, so read now.
				drained = len(c.pending) == 0
			}
			if len(c.pending) > 0 || (!drained && ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) == 0) {
				continue
			}
			if !trivialRead(c, buf) {
				closeConn(c)
			}
		}
	}
	return nil
}

// trivialRead echoes what c has; false means close it.
func trivialRead(c *trivialConn, buf []byte) bool {
	for {
		r, _, errno := syscall.RawSyscall(unix.SYS_READ, uintptr(c.fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
		n := int(r)
		switch {
		case errno == unix.EINTR:
			continue
		case errno == unix.EAGAIN:
			return true
		case errno != 0 || n == 0:
			return false
		}
		out := buf[:n]
		for len(out) > 0 {
			r, _, errno := syscall.RawSyscall(unix.SYS_WRITE, uintptr(c.fd), uintptr(unsafe.Pointer(&out[0])), uintptr(len(out)))
			if errno == unix.EINTR {
				continue
			}
			if errno == unix.EAGAIN {
				break
			}
			if errno != 0 {
				return false
			}
			out = out[int(r):]
		}
		if len(out) > 0 {
			// The socket is full: keep the rest and stop reading until EPOLLOUT.
			c.pending = append(c.pending[:0], out...)
			return true
		}
		if n < len(buf) {
			return true
		}
	}
}

// trivialFlush writes c.pending; false means close it.
func trivialFlush(c *trivialConn) bool {
	for len(c.pending) > 0 {
		r, _, errno := syscall.RawSyscall(unix.SYS_WRITE, uintptr(c.fd), uintptr(unsafe.Pointer(&c.pending[0])), uintptr(len(c.pending)))
		switch {
		case errno == unix.EINTR:
			continue
		case errno == unix.EAGAIN:
			return true
		case errno != 0:
			return false
		}
		c.pending = c.pending[int(r):]
	}
	c.pending = c.pending[:0]
	return true
}
