package ioflush

import "golang.org/x/sys/unix"

// WritevFunc is the shape of the writev seam.
type WritevFunc = func(fd int, iov []unix.Iovec) (int, unix.Errno)

// SetWritev replaces the writev seam and returns a function restoring it.
func SetWritev(fn WritevFunc) (restore func()) {
	old := writev
	writev = fn
	return func() { writev = old }
}

// RawWritev is the real writev the seam defaults to.
var RawWritev = rawWritev

// ScratchLen is the number of iovecs f has allocated.
func ScratchLen(f *Flusher) int { return len(f.scratch.iov) }

// ScratchClear reports whether no iovec in f's scratch still points anywhere.
func ScratchClear(f *Flusher) bool {
	for _, v := range f.scratch.iov {
		if v.Base != nil || v.Len != 0 {
			return false
		}
	}
	return true
}
