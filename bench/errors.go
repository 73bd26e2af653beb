package bench

import (
	"errors"
	"os"
)

// Sentinel errors returned by the bench package. Each is errors.Is-able; the
// functions that return them wrap them with the detail (%w).
var (
	// ErrInvalidConfig reports a load or comparison configuration that cannot run
	// (no connections, a size out of range, an unknown codec or scenario, ...).
	ErrInvalidConfig = errors.New("sluice: bench: invalid configuration")

	// ErrUnsupported is returned on systems other than Linux: the generator uses
	// epoll and the runner reads /proc.
	ErrUnsupported = errors.New("sluice: bench: unsupported on this system (Linux only)")

	// ErrMismatch reports a response that does not match the request it answers
	// (wrong length, wrong sequence number, more bytes than were sent).
	ErrMismatch = errors.New("sluice: bench: response does not match request")

	// ErrResponseTimeout reports a request whose response did not arrive within
	// the configured timeout. It satisfies errors.Is(err, os.ErrDeadlineExceeded).
	ErrResponseTimeout = &timeoutError{"sluice: bench: response timeout"}

	// ErrConnectTimeout reports a connection that was not established within the
	// configured timeout. It satisfies errors.Is(err, os.ErrDeadlineExceeded).
	ErrConnectTimeout = &timeoutError{"sluice: bench: connect timeout"}

	// ErrNoConnections reports a load run in which no connection could be
	// established.
	ErrNoConnections = errors.New("sluice: bench: no connection could be established")
)

// timeoutError is a sentinel that also matches os.ErrDeadlineExceeded.
type timeoutError struct{ msg string }

func (e *timeoutError) Error() string { return e.msg }

// Timeout reports true, as net.Error timeouts do.
func (e *timeoutError) Timeout() bool { return true }

// Is makes errors.Is(err, os.ErrDeadlineExceeded) true.
func (e *timeoutError) Is(target error) bool { return target == os.ErrDeadlineExceeded }
