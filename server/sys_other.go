//go:build !linux

package server

import "golang.org/x/sys/unix"

// errno is the syscall error number the backend returns on the hot path.
type errno = unix.Errno

const errnoUnsupported = unix.ENOSYS
