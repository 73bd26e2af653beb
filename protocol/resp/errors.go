package resp

import (
	"errors"
	"fmt"

	"github.com/sluicenet/sluice/protocol"
)

// ProtocolError is a RESP framing error. Its Reason is the text redis-server
// puts after "ERR Protocol error: " for the same fault, so a server can send
// it back unchanged (AppendProtocolError) before closing the connection. Every
// ProtocolError unwraps to protocol.ErrMalformed or protocol.ErrFrameTooLarge.
// The package's sentinel values are *ProtocolError; compare them with
// errors.Is.
type ProtocolError struct {
	reason string
	msg    string
	kind   error
}

func newProtocolError(kind error, reason string) *ProtocolError {
	return &ProtocolError{reason: reason, msg: "sluice: resp: Protocol error: " + reason, kind: kind}
}

// Error returns "sluice: resp: Protocol error: " followed by the reason.
func (e *ProtocolError) Error() string { return e.msg }

// Reason returns the redis-style reason, for example "invalid bulk length".
func (e *ProtocolError) Reason() string { return e.reason }

// Unwrap returns protocol.ErrMalformed or protocol.ErrFrameTooLarge.
func (e *ProtocolError) Unwrap() error { return e.kind }

// Sentinel errors returned by Decode and Parse. The first group wraps
// protocol.ErrMalformed, the second protocol.ErrFrameTooLarge. They are built
// once here, so Decode and Parse never allocate, not even on error paths.
var (
	// ErrInvalidMultibulkLength reports an array header ("*N\r\n") whose
	// count is not a canonical decimal integer or whose line does not end in
	// CRLF.
	ErrInvalidMultibulkLength error = newProtocolError(protocol.ErrMalformed, "invalid multibulk length")
	// ErrExpectedDollar reports an array element that is not a bulk string.
	ErrExpectedDollar error = newProtocolError(protocol.ErrMalformed, "expected '$'")
	// ErrInvalidBulkLength reports a bulk header ("$N\r\n") whose length is
	// negative, not a canonical decimal integer, or not followed by CRLF.
	ErrInvalidBulkLength error = newProtocolError(protocol.ErrMalformed, "invalid bulk length")
	// ErrExpectedCRLF reports bulk data not followed by CRLF.
	ErrExpectedCRLF error = newProtocolError(protocol.ErrMalformed, "expected CRLF after bulk data")
	// ErrUnbalancedQuotes reports an inline command with an unterminated
	// quoted argument, or a closing quote followed by something other than
	// a space.
	ErrUnbalancedQuotes error = newProtocolError(protocol.ErrMalformed, "unbalanced quotes in request")
	// ErrIncompleteCommand reports a frame passed to Parse that holds less
	// than one whole command.
	ErrIncompleteCommand error = newProtocolError(protocol.ErrMalformed, "incomplete command")
	// ErrTrailingBytes reports a frame passed to Parse that holds more than
	// one command.
	ErrTrailingBytes error = newProtocolError(protocol.ErrMalformed, "trailing bytes after command")

	// ErrTooManyArgs reports an array header or inline command with more
	// than MaxArgs arguments.
	ErrTooManyArgs error = newProtocolError(protocol.ErrFrameTooLarge, "too many arguments")
	// ErrBulkTooLarge reports a bulk string longer than MaxBulkBytes.
	ErrBulkTooLarge error = newProtocolError(protocol.ErrFrameTooLarge, "bulk length exceeds limit")
	// ErrInlineTooLarge reports an inline command line longer than
	// MaxInlineBytes.
	ErrInlineTooLarge error = newProtocolError(protocol.ErrFrameTooLarge, "too big inline request")
	// ErrCommandTooLarge reports a command whose wire size exceeds
	// MaxCommandBytes.
	ErrCommandTooLarge error = newProtocolError(protocol.ErrFrameTooLarge, "command exceeds size limit")
)

// errNegativeLimit reports a Codec with a negative limit.
var errNegativeLimit = fmt.Errorf("%w: resp: negative limit", protocol.ErrInvalidConfig)

// AppendProtocolError appends the reply redis-server sends for a framing
// error, "-ERR Protocol error: <reason>\r\n", for err (a *ProtocolError or an
// error wrapping one). Any other error gives "-ERR Protocol error\r\n". The
// server should close the connection after flushing it.
func AppendProtocolError(dst []byte, err error) []byte {
	var pe *ProtocolError
	if errors.As(err, &pe) {
		dst = append(dst, "-ERR Protocol error: "...)
		dst = append(dst, pe.reason...)
		return append(dst, "\r\n"...)
	}
	return append(dst, "-ERR Protocol error\r\n"...)
}
