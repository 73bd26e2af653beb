package httpecho

import (
	"bytes"
	"time"

	"github.com/sluicenet/sluice/protocol"
	"github.com/sluicenet/sluice/protocol/http1"
)

var (
	_ protocol.Rejecter = Codec{}
	_ interface {
		Decode([]byte) ([]byte, int, error)
		AppendEncode(dst, frame []byte) []byte
	} = Codec{}
)

// Codec is http1.Codec for the engine, with three differences.
//
// Decode frames a request that arrived whole with a fast pass (the end of
// the head, Content-Length) instead of the strict one, because the handler
// parses every frame strictly anyway (Handler.OnFrame): running the strict
// parser in both places would parse every request twice. Anything the fast
// pass does not recognise as plain (a request split across reads, leading
// empty lines, Transfer-Encoding, a Content-Length list or a bad one, a body
// over the limit, a head over the limit) goes to the strict http1 Decode,
// so limits and errors are exactly http1's. A frame the fast pass cut is
// checked by the handler's strict parse, which must consume exactly the
// frame; if it does not, the request is answered with 400 and the
// connection closed (ErrFramingMismatch), so the two can never disagree
// silently.
//
// Decode passes a framing error through as a frame holding all the
// buffered input instead of failing (which would make the engine close the
// connection without a word): Handler.OnFrame parses it again, gets the same
// error, answers with its status (400, 411, 413, 414, 417, 431, 505) and
// closes the connection. An admitter in front of Handler should therefore
// admit frames that do not parse.
//
// AppendReject answers admission refusals in HTTP (protocol.Rejecter,
// through http1's): 429 for a tenant over its quota, 503 otherwise, with
// Retry-After and Date.
//
// The zero value uses http1's default limits (DefaultMaxBodyBytes for
// bodies) and time.Now. A Codec has no per-connection
// state and is safe for concurrent use.
type Codec struct {
	// Codec holds the limits (MaxHeaderBytes, MaxHeaderCount,
	// MaxBodyBytes); zero means http1's defaults, except MaxBodyBytes,
	// whose default is DefaultMaxBodyBytes.
	http1.Codec
	// Clock is the wall clock of the Date header, read once per read batch
	// (see Handler); nil means time.Now. It must be safe for concurrent use.
	Clock func() time.Time
}

// DefaultMaxBodyBytes is the request body limit when Codec.MaxBodyBytes is
// zero: 64 KiB, smaller than http1's 1 MiB default because the echo route
// queues the body again as its response, and a response must fit the
// engine's per-connection out-queue (server.DefaultOutQueueBytes, 256 KiB;
// reading pauses at half of it). With a smaller -out-queue-bytes, lower
// MaxBodyBytes to match: an echo that does not fit closes the connection
// with server.ErrQueueFull.
const DefaultMaxBodyBytes = 64 << 10

// limited returns the http1 codec with DefaultMaxBodyBytes applied.
func (c Codec) limited() http1.Codec {
	h := c.Codec
	if h.MaxBodyBytes == 0 {
		h.MaxBodyBytes = DefaultMaxBodyBytes
	}
	return h
}

// Decode returns the first request in buf (see the type's documentation):
// n == 0 && err == nil means more input is needed; a framing error yields
// all of buf as one frame and no error. frame aliases buf, capacity clipped.
// Decode does not allocate.
func (c Codec) Decode(buf []byte) (frame []byte, n int, err error) {
	if n := c.frameFast(buf); n > 0 {
		return buf[:n:n], n, nil
	}
	frame, n, err = c.limited().Decode(buf)
	if err != nil {
		return buf[:len(buf):len(buf)], len(buf), nil
	}
	return frame, n, nil
}

// AppendEncode appends frame unchanged (http1.Codec.AppendEncode); the
// handler writes responses with Conn.Write.
func (c Codec) AppendEncode(dst, frame []byte) []byte {
	return c.Codec.AppendEncode(dst, frame)
}

// limits returns MaxHeaderBytes and MaxBodyBytes with defaults applied;
// ok is false for a configuration http1 refuses (the strict Decode then
// reports it).
func (c Codec) limits() (maxHead int, maxBody int64, ok bool) {
	h := c.limited()
	if h.Validate() != nil {
		return 0, 0, false
	}
	maxHead = h.MaxHeaderBytes
	if maxHead == 0 {
		maxHead = http1.DefaultMaxHeaderBytes
	}
	return maxHead, h.MaxBodyBytes, true
}

var crlfcrlf = []byte("\r\n\r\n")

// frameFast returns the length of the request at the start of buf when it
// is whole and plainly framed: its head ends within MaxHeaderBytes, it has
// no Transfer-Encoding, and at most plain-decimal Content-Length fields that
// agree, within MaxBodyBytes, with the whole body in buf. Otherwise it
// returns 0 and the strict parser decides. In a request valid under RFC
// 9112, no CR or LF occurs inside the request line or a field line, so the
// first CRLFCRLF ends the head; the strict parse of the frame in the
// handler checks the rest.
func (c Codec) frameFast(buf []byte) int {
	if len(buf) == 0 || buf[0] == '\r' || buf[0] == '\n' {
		return 0
	}
	maxHead, maxBody, ok := c.limits()
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
			v, ok := fieldValue(line, "content-length")
			if !ok {
				continue
			}
			n, ok := plainDecimal(v)
			if !ok || cl >= 0 && cl != n {
				return 0
			}
			cl = n
		case 't', 'T':
			if _, ok := fieldValue(line, "transfer-encoding"); ok {
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

// fieldValue returns the value of line, "name:value\r" (it ends in CR),
// trimmed of spaces and tabs, when its name equals name under ASCII case
// folding.
func fieldValue(line []byte, name string) ([]byte, bool) {
	if len(line) <= len(name) || line[len(name)] != ':' || !http1.EqualFold(line[:len(name)], name) {
		return nil, false
	}
	v := line[len(name)+1 : len(line)-1] // without the CR
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		v = v[:len(v)-1]
	}
	return v, true
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
// (protocol.Rejecter): http1.Codec.AppendRejectDated with the codec's
// limits and a Date from Clock, read once per read batch like the
// handler's. It does not allocate when dst has room.
func (c Codec) AppendReject(dst, frame []byte, reason string, retryAfter time.Duration) []byte {
	s := getScratch()
	defer putScratch(s)
	now := s.clock(frame, c.Clock)
	return c.limited().AppendRejectDated(dst, frame, reason, retryAfter, s.dates.Value(now))
}
