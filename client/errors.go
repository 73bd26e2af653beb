package client

import (
	"context"
	"errors"
	"os"

	"github.com/sluicenet/sluice/resilience"
)

// Sentinel errors. Every message starts with "sluice:"; test with errors.Is.
var (
	// ErrInvalidConfig is wrapped by every Config.Validate error.
	ErrInvalidConfig = errors.New("sluice: invalid client configuration")

	// ErrClosed is returned by calls on a closed Client, and by calls whose
	// connection the Client closed under them.
	ErrClosed error = &classedError{msg: "sluice: client closed", class: resilience.ClassCanceled}

	// ErrInvalidRequest reports a request that cannot be sent (nil, or a
	// field over its envelope bound; the envelope error is wrapped too).
	ErrInvalidRequest = errors.New("sluice: invalid request")

	// ErrProtocol reports a peer that broke the envelope protocol (a frame
	// that does not parse, a request where a response belongs). The
	// connection is closed.
	ErrProtocol = errors.New("sluice: envelope protocol violation")

	// ErrConnRefused is returned by calls made on a connection the server
	// refused as a whole (a reject that answers no request: its final
	// refusal, reason "goaway", or a refusal at accept) after it arrived;
	// the calls pending on it get that reject as their *StatusError. The
	// connection is closed; the next call dials again. Retryable.
	ErrConnRefused error = &classedError{msg: "sluice: connection refused by the server", class: resilience.ClassRetryable}

	// ErrTimeout is returned when a call's deadline (or its attempt's)
	// passes while waiting for a response. It satisfies
	// errors.Is(err, os.ErrDeadlineExceeded) and context.DeadlineExceeded.
	ErrTimeout error = &timeoutError{msg: "sluice: deadline passed waiting for the response"}
)

// DialError is a connection that could not be made: the dial failed, or,
// with Config.TLS, the TLS handshake did. Nothing was sent, so the attempt
// is retried by the class of Err, whatever the call: a refused or reset
// connection, or a dial or handshake past its timeout, is retryable; a
// server certificate the client does not trust, an alert from the server
// or a peer that does not speak TLS is not (resilience.ClassFailed).
type DialError struct {
	// Addr is the address dialed.
	Addr string
	// Handshake reports that the connection was made and the TLS handshake
	// failed.
	Handshake bool
	// Err is the dial's or the handshake's error.
	Err error
}

// Error says which step failed, where, and why.
func (e *DialError) Error() string {
	if e.Handshake {
		return "sluice: TLS handshake with " + e.Addr + ": " + e.Err.Error()
	}
	return "sluice: dial " + e.Addr + ": " + e.Err.Error()
}

// Unwrap returns Err, which classifies the failure.
func (e *DialError) Unwrap() error { return e.Err }

type classedError struct {
	msg   string
	class resilience.Class
	is    error // a sentinel it also matches
}

func (e *classedError) Error() string                { return e.msg }
func (e *classedError) RetryClass() resilience.Class { return e.class }
func (e *classedError) Is(target error) bool         { return e.is != nil && target == e.is }

type timeoutError struct{ msg string }

func (e *timeoutError) Error() string { return e.msg }
func (e *timeoutError) Timeout() bool { return true }
func (e *timeoutError) Is(target error) bool {
	return target == os.ErrDeadlineExceeded || target == context.DeadlineExceeded
}
