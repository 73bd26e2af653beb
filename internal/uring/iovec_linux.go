//go:build linux

package uring

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// ConsumeIovecs drops the first n bytes from iovs after a short send and
// returns the iovecs still to send: fully sent ones are removed (and their
// Base cleared, so they keep nothing reachable), a partly sent one is
// trimmed in place. It does not allocate.
func ConsumeIovecs(iovs []unix.Iovec, n int) []unix.Iovec {
	for len(iovs) > 0 && n > 0 {
		l := int(iovs[0].Len)
		if n < l {
			iovs[0].Base = &unsafe.Slice(iovs[0].Base, l)[n]
			iovs[0].SetLen(l - n)
			return iovs
		}
		n -= l
		iovs[0] = unix.Iovec{}
		iovs = iovs[1:]
	}
	for len(iovs) > 0 && iovs[0].Len == 0 {
		iovs[0] = unix.Iovec{}
		iovs = iovs[1:]
	}
	return iovs
}
