//go:build !linux

package netpoll

import (
	"net/netip"

	"golang.org/x/sys/unix"
)

// Supported is false: there is no backend outside Linux.
const Supported = false

const errnoUnsupported = unix.ENOSYS

func Read(fd int, b []byte) (int, Errno)          { return 0, errnoUnsupported }
func Write(fd int, b []byte) (int, Errno)         { return 0, errnoUnsupported }
func Close(fd int)                                {}
func SetLingerZero(fd int)                        {}
func Accept(lfd int) (int, netip.AddrPort, Errno) { return -1, netip.AddrPort{}, errnoUnsupported }
func SetNoDelay(fd int) Errno                     { return errnoUnsupported }
func SockError(fd int) error                      { return errUnsupported }
func LocalAddr(fd int) netip.AddrPort             { return netip.AddrPort{} }

func Listen(addr string, o ListenConfig) (int, netip.AddrPort, error) {
	return -1, netip.AddrPort{}, errUnsupported
}
