package http1

import (
	"errors"
	"fmt"

	"github.com/sluicenet/sluice/protocol"
)

// Error is a request the codec refuses. Status is the response a server
// sends before closing the connection (AppendDecodeError writes it). Every
// Error unwraps to protocol.ErrMalformed or protocol.ErrFrameTooLarge: after
// one, the stream cannot be re-synchronised, so the connection must close.
// The package's sentinel values are *Error; compare them with errors.Is.
type Error struct {
	status int
	msg    string
	kind   error
}

func newError(kind error, status int, what string) *Error {
	return &Error{status: status, msg: "sluice: http1: " + what, kind: kind}
}

// Error returns the message, prefixed "sluice: http1: ".
func (e *Error) Error() string { return e.msg }

// Status returns the HTTP status code for the refusal (400, 411, 413, 414,
// 417, 431 or 505).
func (e *Error) Status() int { return e.status }

// Unwrap returns protocol.ErrMalformed or protocol.ErrFrameTooLarge.
func (e *Error) Unwrap() error { return e.kind }

// Sentinel errors returned by Decode and Parse, built once so that neither
// allocates on an error path. The first group wraps protocol.ErrMalformed,
// the second protocol.ErrFrameTooLarge.
var (
	// ErrBadRequestLine (400) reports a request line that is not
	// "method SP request-target SP HTTP/d.d CRLF" with a token method, a
	// target of visible ASCII in origin, absolute, authority (CONNECT) or
	// asterisk (OPTIONS) form, and exactly one space between the parts.
	ErrBadRequestLine error = newError(protocol.ErrMalformed, 400, "malformed request line")
	// ErrBadHeader (400) reports a header field line that is not
	// "token: value CRLF": white space before the colon, a control
	// character in the value, or a bare CR or LF.
	ErrBadHeader error = newError(protocol.ErrMalformed, 400, "malformed header field")
	// ErrObsFold (400) reports a header line starting with white space:
	// obsolete line folding, which RFC 9112 section 5.2 lets a server
	// reject.
	ErrObsFold error = newError(protocol.ErrMalformed, 400, "obsolete line folding in header")
	// ErrBadContentLength (400) reports a Content-Length that is not a
	// list of decimal digits, or several Content-Length values that differ.
	ErrBadContentLength error = newError(protocol.ErrMalformed, 400, "invalid or conflicting Content-Length")
	// ErrBadHost (400) reports an HTTP/1.1 request without exactly one
	// Host field, or an HTTP/1.0 request with several (RFC 9112 section
	// 3.2).
	ErrBadHost error = newError(protocol.ErrMalformed, 400, "missing or duplicate Host")
	// ErrBadTransferEncoding (400) reports a Transfer-Encoding whose body
	// length cannot be determined: in an HTTP/1.0 request, together with
	// Content-Length (a request smuggling signal), or with a final coding
	// other than chunked (RFC 9112 section 6.3).
	ErrBadTransferEncoding error = newError(protocol.ErrMalformed, 400, "invalid Transfer-Encoding framing")
	// ErrChunked (411) reports a request body sent with
	// "Transfer-Encoding: chunked". The codec frames bodies by
	// Content-Length only; 411 Length Required tells the client what would
	// work (nginx answered chunked requests the same way before it
	// supported them).
	ErrChunked error = newError(protocol.ErrMalformed, 411, "chunked request bodies are not supported, send Content-Length")
	// ErrExpectation (417) reports an Expect field. The codec has no
	// per-connection state and cannot send an interim 100 Continue, and
	// whether the client then sends its body is unknown, so the request is
	// refused and the connection closed.
	ErrExpectation error = newError(protocol.ErrMalformed, 417, "Expect is not supported")
	// ErrVersion (505) reports an HTTP major version other than 1.
	ErrVersion error = newError(protocol.ErrMalformed, 505, "unsupported HTTP version")
	// ErrIncompleteRequest (400) reports a frame passed to Parse that holds
	// less than one whole request.
	ErrIncompleteRequest error = newError(protocol.ErrMalformed, 400, "incomplete request")
	// ErrTrailingBytes (400) reports a frame passed to Parse that holds
	// more than one request.
	ErrTrailingBytes error = newError(protocol.ErrMalformed, 400, "trailing bytes after request")

	// ErrURITooLong (414) reports a request line that does not end within
	// MaxHeaderBytes.
	ErrURITooLong error = newError(protocol.ErrFrameTooLarge, 414, "request line exceeds MaxHeaderBytes")
	// ErrHeaderTooLarge (431) reports a head (request line and header
	// fields) that does not end within MaxHeaderBytes.
	ErrHeaderTooLarge error = newError(protocol.ErrFrameTooLarge, 431, "header exceeds MaxHeaderBytes")
	// ErrTooManyHeaders (431) reports more than MaxHeaderCount header
	// fields.
	ErrTooManyHeaders error = newError(protocol.ErrFrameTooLarge, 431, "more header fields than MaxHeaderCount")
	// ErrBodyTooLarge (413) reports a Content-Length above MaxBodyBytes,
	// refused before the body arrives.
	ErrBodyTooLarge error = newError(protocol.ErrFrameTooLarge, 413, "Content-Length exceeds MaxBodyBytes")
)

var (
	errNegativeLimit  = fmt.Errorf("%w: http1: negative limit", protocol.ErrInvalidConfig)
	errHeaderCountCap = fmt.Errorf("%w: http1: MaxHeaderCount above MaxHeaders", protocol.ErrInvalidConfig)
	errNilRequest     = errors.New("sluice: http1: Parse needs a non-nil *Request")
)

// StatusFor returns the HTTP status for a Decode or Parse error: the
// Status of a wrapped *Error, 413 or 400 for other errors wrapping
// protocol.ErrFrameTooLarge or protocol.ErrMalformed, 500 otherwise, and
// 200 for nil.
func StatusFor(err error) int {
	if err == nil {
		return 200
	}
	if e, ok := err.(*Error); ok {
		return e.status
	}
	var e *Error
	switch {
	case errors.As(err, &e):
		return e.status
	case errors.Is(err, protocol.ErrFrameTooLarge):
		return 413
	case errors.Is(err, protocol.ErrMalformed):
		return 400
	}
	return 500
}
