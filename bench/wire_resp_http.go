package bench

import (
	"bytes"
	"fmt"
)

// RESP and HTTP framing of the generator: requests are ECHO commands and
// POST /echo requests; responses are bulk strings and Content-Length
// bodies. Like the other framings, this is the generator's own small code,
// not package protocol's.

const (
	// respEchoHead starts every RESP request: an array of two bulk strings,
	// the first "ECHO".
	respEchoHead = "*2\r\n$4\r\nECHO\r\n"
	// maxRESPErrorBytes bounds a RESP simple-string or error line.
	maxRESPErrorBytes = 1024
	// httpRequestHead starts every HTTP request; the Content-Length value,
	// the empty line and the body follow.
	httpRequestHead = "POST /echo HTTP/1.1\r\nHost: sluiceload\r\nContent-Type: application/octet-stream\r\nContent-Length: "
	// maxHTTPHeadBytes bounds an HTTP response's status line and fields.
	maxHTTPHeadBytes = 8 << 10
)

// nextRESP decodes one RESP reply: a bulk string (its content is the
// payload) or an error line (the payload is the line from its '-').
func nextRESP(buf []byte) (payload []byte, n int, err error) {
	if len(buf) == 0 {
		return nil, 0, nil
	}
	eol := bytes.Index(buf, []byte("\r\n"))
	if eol < 0 {
		if len(buf) > maxRESPErrorBytes {
			return nil, 0, fmt.Errorf("%w: RESP line longer than %d bytes", ErrMismatch, maxRESPErrorBytes)
		}
		return nil, 0, nil
	}
	switch buf[0] {
	case '-':
		return buf[:eol], eol + 2, nil
	case '$':
		size, ok := parseDecimal(buf[1:eol])
		if !ok || size > MaxMessageBytes {
			return nil, 0, fmt.Errorf("%w: RESP bulk length %q", ErrMismatch, buf[1:eol])
		}
		end := eol + 2 + size + 2
		if len(buf) < end {
			return nil, 0, nil
		}
		if buf[end-2] != '\r' || buf[end-1] != '\n' {
			return nil, 0, fmt.Errorf("%w: RESP bulk string without its CRLF", ErrMismatch)
		}
		return buf[eol+2 : end-2], end, nil
	}
	return nil, 0, fmt.Errorf("%w: RESP reply %q is not a bulk string", ErrMismatch, buf[:min(eol, 64)])
}

// nextHTTP decodes one HTTP/1.x response with a Content-Length body (or
// none, for 1xx, 204 and 304): the payload is the body of a 2xx response and
// the status line of any other.
func nextHTTP(buf []byte) (payload []byte, n int, err error) {
	headEnd := bytes.Index(buf, []byte("\r\n\r\n"))
	if headEnd < 0 {
		if len(buf) > maxHTTPHeadBytes {
			return nil, 0, fmt.Errorf("%w: HTTP response head longer than %d bytes", ErrMismatch, maxHTTPHeadBytes)
		}
		return nil, 0, nil
	}
	head := buf[:headEnd]
	statusLine, fields, _ := bytes.Cut(head, []byte("\r\n"))
	status, ok := httpStatus(statusLine)
	if !ok {
		return nil, 0, fmt.Errorf("%w: HTTP status line %q", ErrMismatch, statusLine[:min(len(statusLine), 64)])
	}
	size, hasLength := 0, false
	for len(fields) > 0 {
		var line []byte
		line, fields, _ = bytes.Cut(fields, []byte("\r\n"))
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return nil, 0, fmt.Errorf("%w: HTTP field line %q", ErrMismatch, line[:min(len(line), 64)])
		}
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			v, ok := parseDecimal(bytes.TrimSpace(value))
			if !ok || v > MaxMessageBytes || hasLength && v != size {
				return nil, 0, fmt.Errorf("%w: HTTP Content-Length %q", ErrMismatch, value)
			}
			size, hasLength = v, true
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return nil, 0, fmt.Errorf("%w: HTTP Transfer-Encoding %q is not supported (Content-Length only)", ErrMismatch, bytes.TrimSpace(value))
		}
	}
	bodyless := status < 200 || status == 204 || status == 304
	if !hasLength && !bodyless {
		return nil, 0, fmt.Errorf("%w: HTTP %d response without Content-Length", ErrMismatch, status)
	}
	end := headEnd + 4 + size
	if len(buf) < end {
		return nil, 0, nil
	}
	if status < 200 || status > 299 {
		return statusLine, end, nil
	}
	return buf[headEnd+4 : end], end, nil
}

// httpStatus parses "HTTP/1.x SSS reason" and returns SSS.
func httpStatus(line []byte) (int, bool) {
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, false
	}
	return parseDecimal(line[9:12])
}

// parseDecimal parses a non-empty run of at most 9 decimal digits.
func parseDecimal(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// responseReject classifies a framed response payload that is not an echo:
// it returns the index of a refusal's reason in rejectCounts, -1 for an
// ordinary response, or an error for a reply that is neither (a RESP error
// that is not a refusal, an HTTP status other than 2xx, 429 and 503). It
// does not allocate.
func responseReject(c Codec, payload []byte) (int, error) {
	switch c {
	case CodecRESP:
		if len(payload) == 0 || payload[0] != '-' {
			return -1, nil
		}
		if k := rejectReason(payload); k >= 0 {
			return k, nil
		}
		// sluice's refusals: "-ERR sluice: too many requests (reason)...",
		// "-BUSY sluice: server overloaded (reason)..."; redis's -BUSY.
		if bytes.HasPrefix(payload, []byte("-ERR sluice: ")) || bytes.HasPrefix(payload, []byte("-BUSY")) {
			return reasonIndex(parenthesised(payload)), nil
		}
		return 0, fmt.Errorf("%w: RESP error reply %q", ErrMismatch, payload[:min(len(payload), 80)])
	case CodecHTTP:
		if !bytes.HasPrefix(payload, []byte("HTTP/1.")) {
			return -1, nil
		}
		switch status, _ := httpStatus(payload); status {
		case 429:
			return reasonIndex([]byte("tenant")), nil
		case 503:
			return reasonIndex(nil), nil
		}
		return 0, fmt.Errorf("%w: HTTP %q", ErrMismatch, payload[:min(len(payload), 80)])
	}
	return rejectReason(payload), nil
}

// parenthesised returns the text between the first '(' and the next ')' of
// b, or nil.
func parenthesised(b []byte) []byte {
	_, rest, ok := bytes.Cut(b, []byte("("))
	if !ok {
		return nil
	}
	in, _, ok := bytes.Cut(rest, []byte(")"))
	if !ok {
		return nil
	}
	return in
}
