package http1

import "math"

// Default limits used when the corresponding Codec field is zero.
const (
	// DefaultMaxHeaderBytes bounds the request line plus header fields:
	// 16 KiB, twice nginx's 8 KiB per line, room for large cookies.
	DefaultMaxHeaderBytes = 16 << 10
	// DefaultMaxHeaderCount bounds the number of header fields: MaxHeaders.
	DefaultMaxHeaderCount = MaxHeaders
	// DefaultMaxBodyBytes bounds a request body: 1 MiB, like
	// protocol.DefaultMaxFrameBytes (nginx's client_max_body_size is 1 MiB
	// too).
	DefaultMaxBodyBytes = 1 << 20
)

// Codec frames HTTP/1.1 requests on the server side: Decode returns one
// whole request (head and Content-Length body) per call, so pipelined
// requests come out one at a time, and Parse turns a frame into a Request.
// A zero limit means the default above; a negative one, or a
// MaxHeaderCount above MaxHeaders, is invalid (Validate, and Decode returns
// the same error). A Codec has no per-connection state and is safe for
// concurrent use; it satisfies protocol.Codec.
//
// The codec is strict (RFC 9110, RFC 9112): lines end in CRLF; the method
// and field names are tokens; field values hold no control characters;
// obsolete line folding, white space before a colon, duplicate differing
// Content-Length values, a missing or duplicate Host in HTTP/1.1 and any
// Transfer-Encoding are refused, each with an *Error that names the status
// to answer before closing. Bodies are framed by Content-Length only:
// chunked requests get 411. Requests with Expect get 417 (see ErrExpectation).
type Codec struct {
	// MaxHeaderBytes bounds the request line, header fields and final
	// CRLF, in bytes. A request line that does not fit is ErrURITooLong
	// (414); a head that does not fit is ErrHeaderTooLarge (431).
	MaxHeaderBytes int
	// MaxHeaderCount bounds the number of header fields (at most
	// MaxHeaders); more is ErrTooManyHeaders (431).
	MaxHeaderCount int
	// MaxBodyBytes bounds Content-Length, in bytes; more is ErrBodyTooLarge
	// (413), reported as soon as the head is complete.
	MaxBodyBytes int64
}

// limits is a Codec with defaults applied.
type limits struct {
	maxHead  int
	maxCount int
	maxBody  int64
}

// parseLimits lets Parse accept any well-formed request that fits a
// Request: the other limits were Decode's business.
var parseLimits = limits{maxHead: math.MaxInt, maxCount: MaxHeaders, maxBody: math.MaxInt64}

// Validate reports protocol.ErrInvalidConfig for a negative limit or a
// MaxHeaderCount above MaxHeaders.
func (c Codec) Validate() error {
	if c.MaxHeaderBytes < 0 || c.MaxHeaderCount < 0 || c.MaxBodyBytes < 0 {
		return errNegativeLimit
	}
	if c.MaxHeaderCount > MaxHeaders {
		return errHeaderCountCap
	}
	return nil
}

func (c Codec) limits() (limits, error) {
	if err := c.Validate(); err != nil {
		return limits{}, err
	}
	l := limits{maxHead: c.MaxHeaderBytes, maxCount: c.MaxHeaderCount, maxBody: c.MaxBodyBytes}
	if l.maxHead == 0 {
		l.maxHead = DefaultMaxHeaderBytes
	}
	if l.maxCount == 0 {
		l.maxCount = DefaultMaxHeaderCount
	}
	if l.maxBody == 0 {
		l.maxBody = DefaultMaxBodyBytes
	}
	return l, nil
}

// Decode returns the first whole request in buf, head and body. n == 0 &&
// err == nil means more input is needed. Syntax errors are reported as soon
// as the offending byte arrives (a TLS handshake or binary junk fails on its
// first bytes); limits as soon as the bytes prove them exceeded; the rules
// that need the whole head (framing, Host, Expect, the body limit) when the
// head is complete, before the body arrives. Errors are *Error sentinels
// wrapping protocol.ErrMalformed or protocol.ErrFrameTooLarge; StatusFor
// maps them to a status, and the connection must close after the response.
//
// frame aliases buf (capacity clipped to its length) and stays valid until
// buf is modified. Decode does not allocate. Each call rescans the head from
// its start (at most MaxHeaderBytes); a body is skipped by length.
func (c Codec) Decode(buf []byte) (frame []byte, n int, err error) {
	lim, err := c.limits()
	if err != nil {
		return nil, 0, err
	}
	n, err = parse(buf, &lim, nil)
	if n == 0 || err != nil {
		return nil, 0, err
	}
	return buf[:n:n], n, nil
}

// DecodeRequest is Decode and Parse in one pass: it frames the first
// request in buf, with the codec's limits, and fills req from it. It returns
// the bytes consumed; n == 0 && err == nil means more input is needed (req
// then holds partial results). Every slice in req aliases buf. It does not
// allocate. A nil req is an error.
func (c Codec) DecodeRequest(buf []byte, req *Request) (n int, err error) {
	lim, err := c.limits()
	if err != nil {
		return 0, err
	}
	if req == nil {
		return 0, errNilRequest
	}
	return parseInto(buf, &lim, req)
}

// AppendEncode appends frame unchanged: a request frame from Decode is
// already in wire form (a proxy or a test client can send it on). Responses
// are written with AppendResponse and its relatives, not with AppendEncode.
func (Codec) AppendEncode(dst, frame []byte) []byte {
	return append(dst, frame...)
}

// Parse fills req from frame, which must hold exactly one request as Decode
// returns it: less is ErrIncompleteRequest, more is ErrTrailingBytes. It
// checks the syntax and rules again, so it is safe on any input, but applies
// no size limits except that the header fields must fit req (MaxHeaders).
// Every slice in req aliases frame. Parse does not allocate and does not
// modify frame. On error the fields of req are unspecified (call Reset to
// drop its references). A nil req is an error.
func Parse(frame []byte, req *Request) error {
	if req == nil {
		return errNilRequest
	}
	n, err := parseInto(frame, &parseLimits, req)
	switch {
	case err != nil:
		return err
	case n == 0:
		return ErrIncompleteRequest
	case n != len(frame):
		return ErrTrailingBytes
	}
	return nil
}

// parseInto is parse into a reused Request: it clears what the previous
// request left that this one may not overwrite.
func parseInto(buf []byte, lim *limits, req *Request) (int, error) {
	prev := req.NumHeaders
	req.Host, req.Body, req.ContentLength, req.KeepAlive = nil, nil, 0, false
	n, err := parse(buf, lim, req)
	if req.NumHeaders < prev {
		clear(req.Headers[req.NumHeaders:prev])
	}
	return n, err
}

// parse frames (and, with req, fills) the request at the start of buf.
// n == 0 && err == nil means more input is needed.
func parse(buf []byte, lim *limits, req *Request) (n int, err error) {
	window := buf
	if len(window) > lim.maxHead {
		window = window[:lim.maxHead]
	}
	// Field by field: a composite literal is built in a temporary and
	// copied in 16-byte moves that stall on its 8-byte stores.
	var p parser
	p.buf, p.req, p.cl, p.maxHeaders = window, req, -1, lim.maxCount
	head, err := p.parseHead()
	if req != nil {
		req.NumHeaders = p.count
	}
	if err == errMore {
		if len(buf) < lim.maxHead {
			return 0, nil
		}
		if p.stage == inRequestLine {
			return 0, ErrURITooLong
		}
		return 0, ErrHeaderTooLarge
	}
	if err != nil {
		return 0, err
	}
	cl, err := p.finish(lim.maxBody)
	if err != nil {
		return 0, err
	}
	// cl <= maxBody; comparing against the bytes after the head avoids
	// overflow in head+cl.
	if int64(len(buf)-head) < cl {
		return 0, nil
	}
	n = head + int(cl)
	if req != nil {
		req.Body = buf[head:n:n]
	}
	return n, nil
}
