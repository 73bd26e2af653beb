package http1

import (
	"strconv"
	"time"
	"unsafe"

	"github.com/sluicenet/sluice/protocol"
)

// StatusText returns the reason phrase for the statuses a sluice server
// sends (RFC 9110 section 15), or "" for others; an empty reason phrase is
// valid on the wire.
func StatusText(status int) string {
	switch status {
	case 100:
		return "Continue"
	case 200:
		return "OK"
	case 201:
		return "Created"
	case 202:
		return "Accepted"
	case 204:
		return "No Content"
	case 301:
		return "Moved Permanently"
	case 302:
		return "Found"
	case 304:
		return "Not Modified"
	case 400:
		return "Bad Request"
	case 401:
		return "Unauthorized"
	case 403:
		return "Forbidden"
	case 404:
		return "Not Found"
	case 405:
		return "Method Not Allowed"
	case 408:
		return "Request Timeout"
	case 409:
		return "Conflict"
	case 411:
		return "Length Required"
	case 413:
		return "Content Too Large"
	case 414:
		return "URI Too Long"
	case 415:
		return "Unsupported Media Type"
	case 417:
		return "Expectation Failed"
	case 422:
		return "Unprocessable Content"
	case 429:
		return "Too Many Requests"
	case 431:
		return "Request Header Fields Too Large"
	case 500:
		return "Internal Server Error"
	case 501:
		return "Not Implemented"
	case 502:
		return "Bad Gateway"
	case 503:
		return "Service Unavailable"
	case 504:
		return "Gateway Timeout"
	case 505:
		return "HTTP Version Not Supported"
	}
	return ""
}

// AppendResponse appends a complete HTTP/1.1 response to dst: the status
// line, "Server: sluice", "Date: date" (left out when date is empty; use
// DateCache), "Content-Type: contentType" (left out when empty),
// "Content-Length", "Connection: close" when keepAlive is false, and the
// body. A status outside 100-999 is written as 500. For 1xx and 204 the
// Content-Length and body are left out, and for 304 the body, as RFC 9110
// requires. Control characters in contentType are dropped, so the header
// block cannot be split. It allocates only when dst lacks room.
//
// For a reply to a parsed request prefer Request.AppendResponse, which also
// handles HEAD and HTTP/1.0 keep-alive.
func AppendResponse(dst []byte, status int, contentType string, body []byte, keepAlive bool, date []byte) []byte {
	return appendResponse(dst, status, contentType, body, len(body), keepAlive, false, -1, date)
}

// AppendResponse appends the response to r: like the package function
// AppendResponse with keepAlive set to r.KeepAlive, plus
// "Connection: keep-alive" for an HTTP/1.0 client that asked for it, and for
// a HEAD request the Content-Length of body without the body itself.
func (r *Request) AppendResponse(dst []byte, status int, contentType string, body []byte, date []byte) []byte {
	if r.MethodIs("HEAD") {
		return appendResponse(dst, status, contentType, nil, len(body), r.KeepAlive, r.ProtoMinor == 0, -1, date)
	}
	return appendResponse(dst, status, contentType, body, len(body), r.KeepAlive, r.ProtoMinor == 0, -1, date)
}

// AppendError appends a response with status and a short text/plain body,
// its reason phrase ("Bad Request\n"). Use keepAlive false for every
// decode error (see AppendDecodeError) and when the server will close.
func AppendError(dst []byte, status int, keepAlive bool, date []byte) []byte {
	return appendText(dst, status, keepAlive, -1, date)
}

// AppendDecodeError appends the response to a Decode or Parse error: status
// StatusFor(err), a text/plain reason, and "Connection: close". The server
// closes the connection after flushing it.
func AppendDecodeError(dst []byte, err error, date []byte) []byte {
	return appendText(dst, StatusFor(err), false, -1, date)
}

// AppendRetryAfter appends a shed response, normally 429 Too Many Requests
// or 503 Service Unavailable, with "Retry-After" set to retryAfter rounded
// up to whole seconds (negative counts as 0) and a text/plain reason. The
// request was framed, so the connection may stay open (keepAlive).
func AppendRetryAfter(dst []byte, status int, retryAfter time.Duration, keepAlive bool, date []byte) []byte {
	return appendText(dst, status, keepAlive, (protocol.RetryAfterMillis(retryAfter)+999)/1000, date)
}

func appendText(dst []byte, status int, keepAlive bool, retryAfterSecs int64, date []byte) []byte {
	if status < 100 || status > 999 {
		status = 500
	}
	text := StatusText(status)
	dst = appendHead(dst, status, "text/plain; charset=utf-8", len(text)+1, keepAlive, false, retryAfterSecs, date)
	dst = append(dst, text...)
	return append(dst, '\n')
}

// appendResponse writes the head and, unless the status forbids one, body.
// bodyLen is the Content-Length (differs from len(body) for HEAD).
func appendResponse(dst []byte, status int, contentType string, body []byte, bodyLen int, keepAlive, http10 bool, retryAfterSecs int64, date []byte) []byte {
	if status < 100 || status > 999 {
		status = 500
	}
	dst = appendHead(dst, status, contentType, bodyLen, keepAlive, http10, retryAfterSecs, date)
	if bodyAllowed(status) {
		dst = append(dst, body...)
	}
	return dst
}

// bodyAllowed reports whether a response with status may carry content.
func bodyAllowed(status int) bool {
	return status >= 200 && status != 204 && status != 304
}

func appendHead(dst []byte, status int, contentType string, bodyLen int, keepAlive, http10 bool, retryAfterSecs int64, date []byte) []byte {
	dst = append(dst, "HTTP/1.1 "...)
	dst = append(dst, byte('0'+status/100), byte('0'+status/10%10), byte('0'+status%10), ' ')
	dst = append(dst, StatusText(status)...)
	dst = append(dst, "\r\nServer: sluice\r\n"...)
	if len(date) > 0 {
		dst = append(dst, "Date: "...)
		dst = appendFieldValue(dst, date)
		dst = append(dst, "\r\n"...)
	}
	if contentType != "" {
		dst = append(dst, "Content-Type: "...)
		dst = appendFieldString(dst, contentType)
		dst = append(dst, "\r\n"...)
	}
	if status >= 200 && status != 204 {
		dst = append(dst, "Content-Length: "...)
		dst = strconv.AppendInt(dst, int64(bodyLen), 10)
		dst = append(dst, "\r\n"...)
	}
	if retryAfterSecs >= 0 {
		dst = append(dst, "Retry-After: "...)
		dst = strconv.AppendInt(dst, retryAfterSecs, 10)
		dst = append(dst, "\r\n"...)
	}
	switch {
	case !keepAlive:
		dst = append(dst, "Connection: close\r\n"...)
	case http10:
		dst = append(dst, "Connection: keep-alive\r\n"...)
	}
	return append(dst, "\r\n"...)
}

// appendFieldValue appends v without control characters other than HTAB.
// The clean prefix, usually all of v, is found a word at a time
// (scanField) and appended in one copy.
func appendFieldValue(dst []byte, v []byte) []byte {
	i := scanField(v, 0)
	dst = append(dst, v[:i]...)
	for ; i < len(v); i++ {
		if fieldChar[v[i]] {
			dst = append(dst, v[i])
		}
	}
	return dst
}

// appendFieldString is appendFieldValue for a string; it reads s in place.
func appendFieldString(dst []byte, s string) []byte {
	return appendFieldValue(dst, unsafe.Slice(unsafe.StringData(s), len(s)))
}
