package http1

import (
	"sync"
	"time"

	"github.com/sluicenet/sluice/protocol"
)

var _ protocol.Rejecter = Codec{}

// rejectRequests holds the Request an AppendReject parses the refused
// frame into (about 3 KiB: too big for the stack, and a refusal must not
// allocate).
var rejectRequests = sync.Pool{New: func() any { return new(Request) }}

// AppendReject answers a refused request (protocol.Rejecter) without a
// Date field: see AppendRejectDated.
func (c Codec) AppendReject(dst, frame []byte, reason string, retryAfter time.Duration) []byte {
	return c.AppendRejectDated(dst, frame, reason, retryAfter, nil)
}

// AppendRejectDated appends the response to a request refused for reason,
// with the status of protocol.RejectStatus: 429 Too Many Requests for a
// tenant over its quota, 409 Conflict or 422 Unprocessable Content for the
// idempotency refusals, 503 Service Unavailable for overload; Retry-After
// (except on 422, where waiting does not help) is retryAfter rounded up to
// whole seconds, and date (DateCache.Value; nil: none) the Date field. The
// connection stays open when the request asked for keep-alive (an HTTP/1.0
// request that did gets "Connection: keep-alive"); a HEAD request gets the
// head only. A frame that does not parse as one whole request (nil, or a
// framing error a codec passed through) is answered with "Connection:
// close". It does not allocate when dst has room.
func (c Codec) AppendRejectDated(dst, frame []byte, reason string, retryAfter time.Duration, date []byte) []byte {
	status := protocol.RejectStatus(reason)
	req := rejectRequests.Get().(*Request)
	n, err := c.DecodeRequest(frame, req)
	whole := err == nil && n > 0 && n == len(frame)
	keepAlive, head, http10 := whole && req.KeepAlive, whole && req.MethodIs("HEAD"), whole && req.ProtoMinor == 0
	req.Reset()
	rejectRequests.Put(req)
	start := len(dst)
	if status == 422 { // nothing to wait for: the same request will never succeed
		dst = AppendError(dst, status, keepAlive, date)
	} else {
		dst = AppendRetryAfter(dst, status, retryAfter, keepAlive, date)
	}
	if keepAlive && http10 {
		dst = InsertField(dst, start, "Connection: keep-alive\r\n")
	}
	if head {
		dst = dst[:len(dst)-len(StatusText(status))-1] // the text body appendText wrote
	}
	return dst
}

// InsertField inserts field, a whole field line with its CRLF, after the
// status line of the response that starts at dst[start:]; a response
// without a complete status line is left as it is.
func InsertField(dst []byte, start int, field string) []byte {
	at := -1
	for i := start; i+1 < len(dst); i++ {
		if dst[i] == '\r' && dst[i+1] == '\n' {
			at = i + 2
			break
		}
	}
	if at < 0 {
		return dst
	}
	n := len(dst)
	dst = append(dst, field...)
	copy(dst[at+len(field):], dst[at:n])
	copy(dst[at:], field)
	return dst
}
