package uring

import (
	"errors"
	"strings"
)

// ErrUnsupported is returned where io_uring cannot be used at all: another
// operating system, a big-endian or 32-bit architecture, a kernel without
// io_uring, or one that refuses it (ENOSYS, EPERM from seccomp or the
// kernel.io_uring_disabled sysctl). errors.Is(ErrUnsupported,
// errors.ErrUnsupported) also holds, and so does errors.Is(err,
// ErrUnsupported) for every *MissingError.
var ErrUnsupported = unsupportedError{}

// ErrBadConfig is wrapped by the errors of Config.Validate and of
// NewBufRing's size checks.
var ErrBadConfig = errors.New("sluice: uring: bad config")

// ErrSQFull is returned by GetSQE and the prep methods when the submission
// queue is still full after submitting what it held: the kernel did not
// consume the queue (for example because the completion queue overflowed and
// the kernel applies back-pressure). Reap completions, then retry.
var ErrSQFull = errors.New("sluice: uring: submission queue full")

// ErrWrongThread is wrapped by the error of a submission or wait made from
// an OS thread other than the one that created a ring set up with
// FeatSingleIssuer (the kernel's EEXIST, which the error also matches): the
// loop goroutine must call runtime.LockOSThread before New.
var ErrWrongThread = errors.New("sluice: uring: ring used from a thread other than its single issuer")

// ErrClosed is returned by methods called on a closed Ring, BufRing or Waker.
var ErrClosed = errors.New("sluice: uring: closed")

// ErrBufferNotLent is returned by BufRing.Recycle for a buffer id that the
// application does not hold: recycling it would hand the kernel a buffer that
// is already in the ring (a double recycle) or an id outside the ring.
var ErrBufferNotLent = errors.New("sluice: uring: buffer not lent to the application")

// ErrBufferState is returned by BufRing.Take when a completion names a
// buffer the application already holds or an id outside the ring, which only
// a bookkeeping bug (or a completion handed to the wrong BufRing) can cause.
var ErrBufferState = errors.New("sluice: uring: completion names a buffer the kernel does not hold")

// ErrNoBuffer is returned by BufRing.Take for a completion that carries no
// provided buffer (IORING_CQE_F_BUFFER is clear).
var ErrNoBuffer = errors.New("sluice: uring: completion carries no buffer")

type unsupportedError struct{}

func (unsupportedError) Error() string {
	return "sluice: uring: io_uring is not available on this system"
}

// Is makes ErrUnsupported match errors.ErrUnsupported.
func (unsupportedError) Is(target error) bool { return target == errors.ErrUnsupported }

// MissingError is what Detect returns when io_uring is unusable for an
// engine: Missing names the required features the kernel lacks (empty when
// the ring could not be set up at all), Have the features it offers, and Err
// the system call error behind an outright refusal (nil otherwise). An engine
// logs Error() and falls back to epoll. errors.Is(err, ErrUnsupported) holds.
type MissingError struct {
	Have    Feature
	Missing Feature
	Err     error
}

func (e *MissingError) Error() string {
	var b strings.Builder
	b.WriteString("sluice: uring: io_uring unusable")
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.Missing != 0 {
		b.WriteString(": missing ")
		b.WriteString(e.Missing.String())
	}
	return b.String()
}

// Is makes every *MissingError match ErrUnsupported and errors.ErrUnsupported.
func (e *MissingError) Is(target error) bool {
	return target == ErrUnsupported || target == errors.ErrUnsupported
}

// Unwrap returns the system call error, if any.
func (e *MissingError) Unwrap() error { return e.Err }
