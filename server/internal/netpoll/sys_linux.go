package netpoll

import (
	"net"
	"net/netip"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Supported is true where a backend exists (Linux); elsewhere every poller
// method and raw call fails, and the engine refuses to start.
const Supported = true

// The socket calls below cannot block (every socket is non-blocking), so they
// use RawSyscall: no entersyscall/exitsyscall bookkeeping per call. They
// return the errno bare (0: none) so the hot path allocates nothing; the
// engine wraps it where an error leaves it.

// Read reads into b once.
func Read(fd int, b []byte) (int, Errno) {
	r, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}

// Close closes fd; a socket without SO_LINGER never blocks in close.
func Close(fd int) {
	unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0)
}

// SetLingerZero sets SO_LINGER with a zero timeout on fd: its close sends
// a reset and drops unsent data (an abort), without blocking.
func SetLingerZero(fd int) {
	_ = unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
}

// Write writes b to a non-blocking socket once; it cannot block.
func Write(fd int, b []byte) (int, Errno) {
	if len(b) == 0 {
		return 0, 0
	}
	r, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}

// Accept accepts one connection on the listener lfd with accept4(2),
// non-blocking and close-on-exec, and returns it with its peer.
func Accept(lfd int) (int, netip.AddrPort, Errno) {
	var rsa unix.RawSockaddrAny
	l := uint32(unix.SizeofSockaddrAny)
	r, _, e := unix.RawSyscall6(unix.SYS_ACCEPT4, uintptr(lfd), uintptr(unsafe.Pointer(&rsa)),
		uintptr(unsafe.Pointer(&l)), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0, 0)
	if e != 0 {
		return -1, netip.AddrPort{}, e
	}
	return int(r), rawToAddrPort(&rsa), 0
}

// peerAddr returns the peer address of a connected socket (getpeername).
func peerAddr(fd int) (netip.AddrPort, Errno) {
	var rsa unix.RawSockaddrAny
	l := uint32(unix.SizeofSockaddrAny)
	_, _, e := unix.RawSyscall(unix.SYS_GETPEERNAME, uintptr(fd), uintptr(unsafe.Pointer(&rsa)), uintptr(unsafe.Pointer(&l)))
	if e != 0 {
		return netip.AddrPort{}, e
	}
	return rawToAddrPort(&rsa), 0
}

// rawToAddrPort converts a kernel socket address without allocating.
func rawToAddrPort(rsa *unix.RawSockaddrAny) netip.AddrPort {
	switch rsa.Addr.Family {
	case unix.AF_INET:
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(rsa))
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(p[0])<<8|uint16(p[1]))
	case unix.AF_INET6:
		sa := (*unix.RawSockaddrInet6)(unsafe.Pointer(rsa))
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), uint16(p[0])<<8|uint16(p[1]))
	}
	return netip.AddrPort{}
}

var one = int32(1)

// SetNoDelay turns Nagle's algorithm off (TCP_NODELAY): replies leave when
// flushed.
func SetNoDelay(fd int) Errno {
	_, _, e := unix.RawSyscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY,
		uintptr(unsafe.Pointer(&one)), 4, 0)
	return e
}

// SockError returns the pending socket error (SO_ERROR), or nil. It is
// read on a connection's way out, so the error comes wrapped.
func SockError(fd int) error {
	v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err != nil {
		return os.NewSyscallError("getsockopt", err)
	}
	if v != 0 {
		return os.NewSyscallError("read", unix.Errno(v))
	}
	return nil
}

// Listen opens a non-blocking listening socket on addr and returns it with
// the address it is bound to. With ReusePort it sets SO_REUSEPORT so that
// several sockets (one per loop) share the address and the kernel spreads
// connections between them; non-zero buffer sizes are set before listen(2)
// so accepted sockets inherit them.
func Listen(addr string, o ListenConfig) (int, netip.AddrPort, error) {
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return -1, netip.AddrPort{}, err
	}
	family := unix.AF_INET6
	var sa unix.Sockaddr
	switch ip4 := ta.IP.To4(); {
	case ta.IP == nil: // ":port": every address, IPv4 and IPv6 (dual stack)
		sa = &unix.SockaddrInet6{Port: ta.Port}
	case ip4 != nil:
		family = unix.AF_INET
		sa = &unix.SockaddrInet4{Port: ta.Port, Addr: [4]byte(ip4)}
	default:
		sa6 := &unix.SockaddrInet6{Port: ta.Port, Addr: [16]byte(ta.IP.To16())}
		if ta.Zone != "" {
			if ifi, err := net.InterfaceByName(ta.Zone); err == nil {
				sa6.ZoneId = uint32(ifi.Index)
			}
		}
		sa = sa6
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return -1, netip.AddrPort{}, os.NewSyscallError("socket", err)
	}
	fail := func(call string, err error) (int, netip.AddrPort, error) {
		unix.Close(fd)
		return -1, netip.AddrPort{}, os.NewSyscallError(call, err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return fail("setsockopt", err)
	}
	if o.ReusePort {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
			return fail("setsockopt", err)
		}
	}
	if o.SndBuf > 0 {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, o.SndBuf); err != nil {
			return fail("setsockopt SO_SNDBUF", err)
		}
	}
	if o.RcvBuf > 0 {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, o.RcvBuf); err != nil {
			return fail("setsockopt SO_RCVBUF", err)
		}
	}
	if o.Control != nil {
		if err := o.Control(fd); err != nil {
			return fail("setsockopt", err)
		}
	}
	if err := unix.Bind(fd, sa); err != nil {
		return fail("bind", err)
	}
	if err := unix.Listen(fd, o.Backlog); err != nil {
		return fail("listen", err)
	}
	return fd, LocalAddr(fd), nil
}

// LocalAddr returns the address fd is bound to (getsockname), or the zero
// AddrPort.
func LocalAddr(fd int) netip.AddrPort {
	var rsa unix.RawSockaddrAny
	l := uint32(unix.SizeofSockaddrAny)
	_, _, e := unix.RawSyscall(unix.SYS_GETSOCKNAME, uintptr(fd), uintptr(unsafe.Pointer(&rsa)), uintptr(unsafe.Pointer(&l)))
	if e != 0 {
		return netip.AddrPort{}
	}
	return rawToAddrPort(&rsa)
}
