package http1

import (
	"bytes"
	"sync"
	"time"
	"unsafe"

	"github.com/sluicenet/sluice/protocol"
)

// Scratch space sizes.
const (
	// initOutBytes is the initial response buffer: a plaintext response
	// with its head is about 130 bytes.
	initOutBytes = 512
	// keepOutBytes bounds the response buffer kept for reuse; one that grew
	// past it (a large body) is dropped, so a burst of large responses does
	// not pin memory.
	keepOutBytes = 64 << 10
	// maxClockReuse bounds how many consecutive frames may share one clock
	// reading (see scratch.clock).
	maxClockReuse = 1024
	// initHeadBytes is the initial room for the copy of a parsed head (see
	// scratch.remember): a wrk or plaintext request head is 40 to 250
	// bytes, a browser's 400 to 800.
	initHeadBytes = 1 << 10
	// keepHeadBytes bounds the head ServerCodec.Decode leaves its parse of
	// for Server: DefaultMaxHeaderBytes, so that every head within the
	// default limit is parsed once. A larger head (under a larger
	// MaxHeaderBytes) is parsed again by Server.
	keepHeadBytes = DefaultMaxHeaderBytes
)

// scratch is the per-request working space of ServerCodec.Decode, Server
// and ServerCodec.AppendReject: a Request (about 3 KiB), the response
// buffer, the Date cache, the clock reading of the current read batch, and
// the record of the parse Decode left in req for Server. It is pooled
// rather than kept per connection so that an idle connection holds none of
// it; sync.Pool keeps one per P, which under the engine (one loop
// goroutine per locked thread) means in practice one per loop, reused
// without contention: the Decode of a frame and the Serve that follows it
// on the loop get the same scratch unless the goroutine changed P in
// between. A ServerCodec from ForLoop keeps one for its loop instead, and
// Serve on a connection of that loop takes it (scratchFor), with no pool
// round trip on either side.
type scratch struct {
	req   Request
	out   []byte
	dates DateCache

	now     time.Time
	lastEnd uintptr // address just past the previous frame
	reuse   int     // frames that used now since it was read

	parsed parsed
}

// parsed records which frame the scratch's Request holds the strict parse
// of, so that Server can take it instead of parsing again (recall).
type parsed struct {
	start uintptr // the frame's address; 0: no record
	n     int     // the frame's length
	codec Codec   // the limits it was parsed with, as configured
	head  []byte  // a copy of the frame's head, the bytes the parse read
}

var scratchPool = sync.Pool{New: func() any { return newScratch() }}

func newScratch() *scratch {
	return &scratch{out: make([]byte, 0, initOutBytes), parsed: parsed{head: make([]byte, 0, initHeadBytes)}}
}

// loopCodecConn is a connection that hands out its loop's codec
// (server.Conn.LoopCodec).
type loopCodecConn interface {
	LoopCodec() protocol.Codec
}

// engineConn is a connection that does both, hands out its loop's codec
// and lends its out-queue's free room (server.Conn): Serve asserts it once
// per request instead of asserting each.
type engineConn interface {
	loopCodecConn
	availableBufferer
}

// connParts returns what Serve uses of c beyond Conn: its loop's codec
// (nil when it hands out none, or off its loop) and its available-buffer
// lender (nil when it lends none).
func connParts(c Conn) (protocol.Codec, availableBufferer) {
	if ec, ok := c.(engineConn); ok {
		return ec.LoopCodec(), ec
	}
	var codec protocol.Codec
	if lc, ok := c.(loopCodecConn); ok {
		codec = lc.LoopCodec()
	}
	ab, _ := c.(availableBufferer)
	return codec, ab
}

// scratchFor returns the scratch space for serving with codec, a
// connection's loop codec: its own when it is the codec ServerCodec.ForLoop
// returned (owned), else one from the pool, which the caller puts back. The
// codec is asserted to its concrete type, a single comparison.
func scratchFor(codec protocol.Codec) (sc *scratch, owned bool) {
	if l, ok := codec.(*loopServerCodec); ok {
		return l.sc, true
	}
	return getScratch(), false
}

// release puts back a scratch space scratchFor took from the pool, and
// resets an owned one's response buffer.
func release(sc *scratch, owned bool) {
	if owned {
		sc.resetOut()
		return
	}
	putScratch(sc)
}

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

func putScratch(s *scratch) {
	s.resetOut()
	scratchPool.Put(s)
}

// resetOut empties the response buffer for the next request, dropping one
// that grew past keepOutBytes.
func (s *scratch) resetOut() {
	if cap(s.out) > keepOutBytes {
		s.out = make([]byte, 0, initOutBytes)
	}
	s.out = s.out[:0]
}

// clock returns the time for frame's response, reading clock (nil:
// time.Now) once per read batch rather than once per request. The engine
// hands a handler the frames of one read back to back, each starting where
// the previous one ended in the loop's buffer; a frame that starts anywhere
// else begins a new batch and reads the clock. A coincidental match (a new
// buffer starting exactly where the last frame ended) would reuse a stale
// reading, so a reading serves at most maxClockReuse frames. Read once per
// batch, the Date field is at most one batch late, far under its one-second
// resolution.
func (s *scratch) clock(frame []byte, clock func() time.Time) time.Time {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(frame)))
	if start == 0 || start != s.lastEnd || s.reuse >= maxClockReuse {
		if clock == nil {
			s.now = time.Now()
		} else {
			s.now = clock()
		}
		s.reuse = 0
	}
	s.reuse++
	s.lastEnd = start + uintptr(len(frame))
	return s.now
}

// remember records that s.req holds the strict parse, under codec's
// limits, of frame, a whole request with a body of bodyLen bytes. A head
// over keepHeadBytes is not recorded.
func (s *scratch) remember(frame []byte, codec Codec, bodyLen int64) {
	head := len(frame) - int(bodyLen)
	if head > keepHeadBytes {
		s.forget()
		return
	}
	p := &s.parsed
	p.start = uintptr(unsafe.Pointer(unsafe.SliceData(frame)))
	p.n = len(frame)
	p.codec = codec
	p.head = append(p.head[:0], frame[:head]...)
}

// forget drops the record: s.req no longer holds a parse remember recorded.
func (s *scratch) forget() { s.parsed.start = 0 }

// recall reports whether s.req holds the strict parse of frame under
// codec's limits, as remember recorded it: frame has the same address and
// length, codec the same fields, and, unless owned, its head the same
// bytes, so the parse of it would be the same. A record is used once (Route
// may change the Request), and recall drops it either way, since the caller
// then parses into s.req.
//
// Address and length alone would not do for a pooled scratch: the engine
// reads every connection's input into the same loop buffer, so a record
// that was never recalled (its frame served on another P, refused by
// admission, or handled without Server) can meet another request of the
// same length at the same address. Comparing the head costs one vectorised
// pass over it. An owned scratch (the loop codec's) holds the record of the
// last request its loop decoded, and the engine hands that frame to the
// handler before it decodes or reads anything else, so a frame at the same
// address and length is that request unless the handler changed its bytes,
// which Serve's contract rules out; the comparison, about 2% of the server's
// CPU per request under wrk pipelined, is skipped there.
func (s *scratch) recall(frame []byte, codec Codec, owned bool) bool {
	p := &s.parsed
	ok := p.start != 0 && p.n == len(frame) && p.start == uintptr(unsafe.Pointer(unsafe.SliceData(frame))) &&
		p.codec == codec && (owned || bytes.Equal(frame[:len(p.head)], p.head))
	p.start = 0
	return ok
}
