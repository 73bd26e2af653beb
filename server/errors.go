package server

import (
	"errors"
	"fmt"
	"os"

	"github.com/sluicenet/sluice/protocol"
)

// Sentinel errors of the engine. Close causes reach Handler.OnClose and the
// per-cause counters in Stats; test them with errors.Is.
var (
	// ErrUnsupported is returned by New on systems other than Linux. It
	// matches errors.ErrUnsupported.
	ErrUnsupported error = unsupportedError{}

	// ErrInvalidConfig wraps every Config.Validate failure.
	ErrInvalidConfig = errors.New("sluice: invalid server config")

	// ErrStarted is returned by Start when the engine was already started.
	ErrStarted = errors.New("sluice: engine already started")

	// ErrEngineClosed is returned by Start after Shutdown, and by off-loop
	// Conn methods once the connection's loop has exited.
	ErrEngineClosed = errors.New("sluice: engine closed")

	// ErrClosed is returned by Conn methods on a connection that is closed
	// or closing.
	ErrClosed = errors.New("sluice: connection closed")

	// ErrQueueFull is returned by a write that would pass the connection's
	// out-queue budget (OutQueueMsgs, OutQueueBytes). The write did not
	// happen; the caller decides what to do. As a close cause it means an
	// off-loop write accepted earlier could not be queued.
	ErrQueueFull = errors.New("sluice: connection out-queue full")

	// ErrInboxFull is returned by an off-loop Conn method when the loop's
	// inbox (Config.InboxTasks) is full. Nothing was queued.
	ErrInboxFull = errors.New("sluice: loop inbox full")

	// ErrIdleTimeout closes a connection that moved no bytes either way for
	// Config.IdleTimeout. It matches os.ErrDeadlineExceeded.
	ErrIdleTimeout error = &timeoutError{"sluice: idle timeout"}

	// ErrFrameTimeout closes a connection whose started frame did not
	// complete within Config.FrameTimeout (slowloris). It matches
	// os.ErrDeadlineExceeded.
	ErrFrameTimeout error = &timeoutError{"sluice: frame timeout"}

	// ErrWriteStall closes a connection whose queued output made no progress
	// for Config.WriteStallTimeout. It matches os.ErrDeadlineExceeded.
	ErrWriteStall error = &timeoutError{"sluice: write stalled"}

	// ErrFrameTooLarge is protocol.ErrFrameTooLarge: a codec (or the
	// engine's MaxInBufferBytes backstop) refused a frame as too large.
	ErrFrameTooLarge = protocol.ErrFrameTooLarge

	// ErrMalformed is protocol.ErrMalformed: the input can never become a
	// valid frame.
	ErrMalformed = protocol.ErrMalformed

	// ErrPeerClosed is the cause when the peer closed its side (read
	// returned end of file) and our queued output was flushed.
	ErrPeerClosed = errors.New("sluice: peer closed the connection")

	// ErrLocalClose is the cause when the server closed the connection:
	// Conn.Close or a handler returning Close.
	ErrLocalClose = errors.New("sluice: connection closed by the server")

	// ErrAborted is the OnClose cause after Conn.Abort: closed at once with
	// a reset, queued output dropped. It counts as a local close.
	ErrAborted = fmt.Errorf("%w: aborted", ErrLocalClose)

	// ErrShutdown is the cause for connections closed by Engine.Shutdown.
	ErrShutdown = errors.New("sluice: engine shutting down")

	// ErrRejected is the cause when admission refused a frame and the codec
	// has no in-protocol way to say so (it does not implement Rejecter).
	ErrRejected = errors.New("sluice: frame rejected by admission")

	// ErrBadHistogram reports a Histogram whose bounds are not finite and
	// strictly increasing, or whose Counts do not have one more element
	// than its Buckets (Histogram.Validate).
	ErrBadHistogram = errors.New("sluice: malformed histogram")

	// ErrShed is the cause when a connection broke its own budget in the
	// admission policy (admission.ConnBudgets: queued bytes or messages
	// above Max) and was closed. It matches ErrRejected.
	ErrShed = fmt.Errorf("%w: connection over its queued budget (shed)", ErrRejected)
)

// errInBufferFull is the close cause when the unparsed input of one
// connection passes Config.MaxInBufferBytes.
var errInBufferFull = fmt.Errorf("%w: unparsed input passed MaxInBufferBytes", ErrFrameTooLarge)

// errCodecOverrun is the close cause when a codec reports consuming more
// bytes than it was given (a broken Codec).
var errCodecOverrun = fmt.Errorf("%w: codec consumed more than its input", ErrMalformed)

type unsupportedError struct{}

func (unsupportedError) Error() string { return "sluice: the server engine needs Linux" }

func (unsupportedError) Is(target error) bool { return target == errors.ErrUnsupported }

// timeoutError is a deadline cause: errors.Is(err, os.ErrDeadlineExceeded)
// holds and it reports Timeout() like net errors do.
type timeoutError struct{ msg string }

func (e *timeoutError) Error() string { return e.msg }

// Timeout reports true: the error is a deadline.
func (e *timeoutError) Timeout() bool { return true }

// Is matches os.ErrDeadlineExceeded.
func (e *timeoutError) Is(target error) bool { return target == os.ErrDeadlineExceeded }

// errPollFailed is the close cause of a connection whose readiness the
// backend can no longer watch (an io_uring poll that failed with an errno
// other than a cancellation); it counts as an I/O error.
var errPollFailed = errors.New("sluice: io_uring poll of the connection failed")
