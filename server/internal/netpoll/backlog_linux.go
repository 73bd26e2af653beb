package netpoll

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// TCPInfo is the scratch struct ListenQueue fills.
type TCPInfo = unix.TCPInfo

// ListenQueue reads a listening socket's accept queue with
// getsockopt(TCP_INFO): for a socket in LISTEN state Linux reports the
// connections waiting to be accepted in tcpi_unacked and the backlog limit
// (the listen(2) backlog, capped at net.core.somaxconn) in tcpi_sacked
// (tcp_get_info in net/ipv4/tcp.c). info is the caller's scratch, so the
// call does not allocate. ok is false when the call failed.
func ListenQueue(fd int, info *TCPInfo) (depth, limit uint32, ok bool) {
	l := uint32(unsafe.Sizeof(*info))
	_, _, e := unix.RawSyscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.IPPROTO_TCP, unix.TCP_INFO,
		uintptr(unsafe.Pointer(info)), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 || info.State != unix.BPF_TCP_LISTEN {
		return 0, 0, false
	}
	return info.Unacked, info.Sacked, true
}
