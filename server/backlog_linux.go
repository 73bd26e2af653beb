package server

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// tcpInfo is the scratch struct listenQueue fills.
type tcpInfo = unix.TCPInfo

// listenQueue reads a listening socket's accept queue with
// getsockopt(TCP_INFO): for a socket in LISTEN state Linux reports the
// connections waiting to be accepted in tcpi_unacked and the backlog limit
// (the listen(2) backlog, capped at net.core.somaxconn) in tcpi_sacked
// (tcp_get_info in net/ipv4/tcp.c). info is the caller's scratch, so the
// call does not allocate. ok is false when the call failed.
func listenQueue(fd int, info *tcpInfo) (depth, limit uint32, ok bool) {
	l := uint32(unsafe.Sizeof(*info))
	_, _, e := unix.RawSyscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.IPPROTO_TCP, unix.TCP_INFO,
		uintptr(unsafe.Pointer(info)), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 || info.State != unix.BPF_TCP_LISTEN {
		return 0, 0, false
	}
	return info.Unacked, info.Sacked, true
}

// sysWrite writes b to a non-blocking socket once; it cannot block.
func sysWrite(fd int, b []byte) (int, errno) {
	if len(b) == 0 {
		return 0, 0
	}
	r, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}
