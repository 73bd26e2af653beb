package http1

import (
	"bytes"
	"time"

	"github.com/sluicenet/sluice/protocol"
)

var (
	_ protocol.Rejecter = ServerCodec{}
	_ protocol.Codec    = ServerCodec{}
)

// ServerCodec is Codec for a server engine, paired with Server, with three
// differences.
//
// Decode frames a request that arrived whole with a fast pass (the end of
// the head, Content-Length) instead of the strict one, because Server
// parses every frame strictly anyway: running the strict parser in both
// places would parse every request twice. Anything the fast pass does not
// recognise as plain (a request split across reads, leading empty lines,
// Transfer-Encoding, a Content-Length list or a bad one, a body over the
// limit, a head over the limit) goes to the strict Decode, so limits and
// errors are exactly Codec's. A frame the fast pass cut is checked by
// Server's strict parse, which must consume exactly the frame; if it does
// not, the request is answered with 400 and the connection closed
// (ErrFramingMismatch), so the two can never disagree silently.
//
// Decode passes a framing error through as a frame holding all the
// buffered input instead of failing (which would make the engine close the
// connection without a word): Server parses it again, gets the same error,
// answers with its status (400, 411, 413, 414, 417, 431, 505) and closes
// the connection. An admitter in front of Server should therefore admit
// frames that do not parse.
//
// AppendReject answers admission refusals (protocol.Rejecter) with
// Codec.AppendRejectDated: 429 for a tenant over its quota, 503 for
// overload, with Retry-After, and a Date from Clock.
//
// The zero value uses Codec's default limits and time.Now. A ServerCodec
// has no per-connection state and is safe for concurrent use.
type ServerCodec struct {
	// Codec holds the limits (MaxHeaderBytes, MaxHeaderCount,
	// MaxBodyBytes); zero means the defaults.
	Codec
	// Clock is the wall clock of the Date field, read once per read batch
	// (see Server); nil means time.Now. It must be safe for concurrent use.
	Clock func() time.Time
}

// Decode returns the first request in buf (see the type's documentation):
// n == 0 && err == nil means more input is needed; a framing error yields
// all of buf as one frame and no error. frame aliases buf, capacity clipped.
// Decode does not allocate.
func (c ServerCodec) Decode(buf []byte) (frame []byte, n int, err error) {
	if n := c.frameFast(buf); n > 0 {
		return buf[:n:n], n, nil
	}
	frame, n, err = c.Codec.Decode(buf)
	if err != nil {
		return buf[:len(buf):len(buf)], len(buf), nil
	}
	return frame, n, nil
}

// fastLimits returns MaxHeaderBytes and MaxBodyBytes with defaults applied;
// ok is false for a configuration Codec refuses (the strict Decode then
// reports it).
func (c ServerCodec) fastLimits() (maxHead int, maxBody int64, ok bool) {
	lim, err := c.limits()
	if err != nil {
		return 0, 0, false
	}
	return lim.maxHead, lim.maxBody, true
}

var crlfcrlf = []byte("\r\n\r\n")

// frameFast returns the length of the request at the start of buf when it
// is whole and plainly framed: its head ends within MaxHeaderBytes, it has
// no Transfer-Encoding, and at most plain-decimal Content-Length fields that
// agree, within MaxBodyBytes, with the whole body in buf. Otherwise it
// returns 0 and the strict parser decides. In a request valid under RFC
// 9112, no CR or LF occurs inside the request line or a field line, so the
// first CRLFCRLF ends the head; Server's strict parse of the frame checks
// the rest.
func (c ServerCodec) frameFast(buf []byte) int {
	if len(buf) == 0 || buf[0] == '\r' || buf[0] == '\n' {
		return 0
	}
	maxHead, maxBody, ok := c.fastLimits()
	if !ok {
		return 0
	}
	window := buf
	if len(window) > maxHead {
		window = window[:maxHead]
	}
	end := bytes.Index(window, crlfcrlf)
	if end < 0 {
		return 0
	}
	head := end + len(crlfcrlf)
	cl := int64(-1)
	// Field lines start after the request line's LF; the head's last line
	// is the empty one.
	i := bytes.IndexByte(buf[:end], '\n') + 1
	for i > 0 && i < head-2 {
		j := bytes.IndexByte(buf[i:head], '\n')
		if j < 0 {
			return 0
		}
		line := buf[i : i+j] // without LF
		i += j + 1
		if len(line) < 2 || line[len(line)-1] != '\r' {
			return 0 // a bare LF, or an empty field line: strict decides
		}
		switch line[0] {
		case 'c', 'C':
			v, ok := fastFieldValue(line, "content-length")
			if !ok {
				continue
			}
			n, ok := plainDecimal(v)
			if !ok || cl >= 0 && cl != n {
				return 0
			}
			cl = n
		case 't', 'T':
			if _, ok := fastFieldValue(line, "transfer-encoding"); ok {
				return 0
			}
		}
	}
	if cl < 0 {
		return head
	}
	if cl > maxBody || int64(len(buf)-head) < cl {
		return 0
	}
	return head + int(cl)
}

// fastFieldValue returns the value of line, "name:value\r" (it ends in CR),
// trimmed of spaces and tabs, when its name equals name under ASCII case
// folding.
func fastFieldValue(line []byte, name string) ([]byte, bool) {
	if len(line) <= len(name) || line[len(name)] != ':' || !EqualFold(line[:len(name)], name) {
		return nil, false
	}
	return trimOWS(line[len(name)+1 : len(line)-1]), true // without the CR
}

// plainDecimal parses 1 to 18 decimal digits (no sign, no list).
func plainDecimal(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for _, ch := range v {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		n = n*10 + int64(ch-'0')
	}
	return n, true
}

// AppendReject appends the response to a request admission refused
// (protocol.Rejecter): Codec.AppendRejectDated with a Date from Clock, read
// once per read batch like Server's. It does not allocate when dst has
// room.
func (c ServerCodec) AppendReject(dst, frame []byte, reason string, retryAfter time.Duration) []byte {
	s := getScratch()
	defer putScratch(s)
	now := s.clock(frame, c.Clock)
	return c.AppendRejectDated(dst, frame, reason, retryAfter, s.dates.Value(now))
}
