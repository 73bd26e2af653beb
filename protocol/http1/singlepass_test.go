package http1

import (
	"bytes"
	"errors"
	"strconv"
	"testing"
	"unsafe"
)

// fuzzServerCodec maps a fuzzed selector to a ServerCodec: 0 is the
// default limits, anything else small limits the inputs can reach (as
// fuzzCodec in fuzz_test.go does for Codec).
func fuzzServerCodec(sel uint16) ServerCodec {
	if sel == 0 {
		return ServerCodec{Clock: fixedClock}
	}
	return ServerCodec{Clock: fixedClock, Codec: Codec{
		MaxHeaderBytes: int(sel&0xff) + 1,
		MaxHeaderCount: int(sel>>8&0x7) + 1,
		MaxBodyBytes:   int64(sel>>11) + 1,
	}}
}

// dumpRoute answers with everything the parse put in the Request, so that
// two parses that differ in any field give different responses.
func dumpRoute(dst []byte, req *Request, date []byte) []byte {
	var b []byte
	field := func(f []byte) {
		if f == nil {
			b = append(b, "nil "...)
			return
		}
		b = strconv.AppendQuote(b, string(f))
		b = append(b, ' ')
	}
	for _, f := range [][]byte{req.Method, req.Target, req.Path, req.Query, req.Host, req.Body} {
		field(f)
	}
	b = strconv.AppendInt(b, int64(req.ProtoMinor), 10)
	b = strconv.AppendBool(b, req.KeepAlive)
	b = strconv.AppendInt(b, req.ContentLength, 10)
	b = strconv.AppendInt(b, int64(req.NumHeaders), 10)
	for i, h := range req.Headers {
		if i >= req.NumHeaders && (h.Name != nil || h.Value != nil) {
			b = append(b, "stale slot "...) // Parse promises zero entries
		}
		field(h.Name)
		field(h.Value)
	}
	return req.AppendResponse(dst, 200, "text/plain", b, date)
}

// served is one Respond result.
type served struct {
	n          int // bytes of input the frame took
	out        string
	closeAfter bool
	cause      error
}

// serveSinglePass serves in as the engine does: ServerCodec.Decode, then
// Server.Respond of the frame (which takes the parse Decode left).
func serveSinglePass(s *Server, in []byte) (got []served) {
	for len(in) > 0 {
		frame, n, err := s.Codec.Decode(in)
		if err != nil || n == 0 {
			break
		}
		out, closeAfter, cause := s.Respond(nil, frame, t0)
		got = append(got, served{n, string(out), closeAfter, cause})
		in = in[n:]
		if closeAfter {
			break
		}
	}
	return got
}

// serveReference serves in with decode framing each request and a strict
// parse of each frame by Server, with no parse left over from decode.
func serveReference(s *Server, in []byte, decode func([]byte) ([]byte, int, error)) (got []served) {
	for len(in) > 0 {
		frame, n, err := decode(in)
		if err != nil || n == 0 {
			break
		}
		var sc scratch // no record: Server parses
		out, closeAfter, cause := s.respond(&sc, nil, frame, t0, false)
		got = append(got, served{n, string(out), closeAfter, cause})
		in = in[n:]
		if closeAfter {
			break
		}
	}
	return got
}

// singlePassCases seed FuzzServerSinglePass (with decodeCases).
var singlePassCases = []string{
	wrkRequest + wrkRequest + postABC,
	"GET /a?b=c HTTP/1.1\r\nHost: h\r\nX: 1\r\nx: 2\r\n\r\nGET /d HTTP/1.1\r\nHost: h\r\n\r\n",
	"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nHEAD / HTTP/1.0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1, 1\r\n\r\nxGET / HTTP/1.1\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\nabc",
	"GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: h\r\nX: a\rb\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: h\nX: 1\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: h\r\nX: \x7f\r\n\r\n",
	"GET / HTTP/1.1\r\nHo\x00st: h\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: h\r\nHost: h\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n" + wrkRequest,
	"GET http://h/x?y HTTP/1.1\r\nHost: h\r\n\r\nOPTIONS * HTTP/1.1\r\nHost: h\r\n\r\nCONNECT h:1 HTTP/1.1\r\nHost: h\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n\r\n",
	wrkRequest + "GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999\r\n\r\n",
	"\r\n\r\n" + wrkRequest + "\r\n" + wrkRequest,
}

// FuzzServerSinglePass is the differential test of the single parse:
// serving a pipelined stream with ServerCodec.Decode leaving its parse for
// Server must answer byte for byte as a strict Decode followed by a strict
// parse of every frame (the same frames, responses, closes and causes);
// against the old two-pass path (a fast framing pass, then the strict
// parse), every response without a cause must be the same, and where the
// old path refused a request the new one must refuse it with the same
// status. A frame changed after Decode (one byte of the stream flipped)
// must be parsed again, not answered from the stale parse.
func FuzzServerSinglePass(f *testing.F) {
	for _, tc := range decodeCases {
		f.Add([]byte(tc.in), uint16(0), uint16(0))
	}
	for i, in := range singlePassCases {
		f.Add([]byte(in), uint16(0), uint16(i*13))
		f.Add([]byte(in), uint16(0x2150), uint16(i*29))
	}
	f.Fuzz(func(t *testing.T, in []byte, sel, flip uint16) {
		s := &Server{Codec: fuzzServerCodec(sel), Route: dumpRoute}
		strict := func(buf []byte) ([]byte, int, error) {
			frame, n, err := s.Codec.Codec.Decode(buf)
			if err != nil {
				return buf[:len(buf):len(buf)], len(buf), nil
			}
			return frame, n, nil
		}
		got := serveSinglePass(s, in)
		want := serveReference(s, in, strict)
		if len(got) != len(want) {
			t.Fatalf("%d responses; the strict path gives %d:\n%+v\n%+v", len(got), len(want), got, want)
		}
		for i := range got {
			g, w := got[i], want[i]
			if g.n != w.n || g.out != w.out || g.closeAfter != w.closeAfter || !errors.Is(g.cause, w.cause) || (g.cause == nil) != (w.cause == nil) {
				t.Fatalf("response %d: %+v; the strict path gives %+v", i, g, w)
			}
		}
		old := serveReference(s, in, s.Codec.legacyDecode)
		for i := 0; i < len(old) && i < len(got); i++ {
			g, o := got[i], old[i]
			if o.cause == nil && (g.n != o.n || g.out != o.out || g.closeAfter != o.closeAfter || g.cause != nil) {
				t.Fatalf("response %d: %+v; the two-pass path gave %+v", i, g, o)
			}
			if o.cause != nil {
				if g.cause == nil || StatusFor(g.cause) != StatusFor(o.cause) {
					t.Fatalf("response %d: %+v; the two-pass path refused with %v", i, g, o.cause)
				}
				break // both closed
			}
		}
		if len(got) != len(old) && (len(old) == 0 || old[len(old)-1].cause == nil) {
			t.Fatalf("%d responses; the two-pass path gave %d:\n%+v\n%+v", len(got), len(old), got, old)
		}

		// A frame changed between Decode and Serve is parsed again.
		if len(in) == 0 {
			return
		}
		buf := bytes.Clone(in)
		frame, n, _ := s.Codec.Decode(buf)
		if n == 0 {
			return
		}
		k := int(flip) % n
		buf[k] ^= byte(flip>>8) | 1
		out, closeAfter, cause := s.Respond(nil, frame, t0)
		var sc scratch
		wout, wclose, wcause := s.respond(&sc, nil, frame, t0, false)
		if string(out) != string(wout) || closeAfter != wclose || !errors.Is(cause, wcause) || (cause == nil) != (wcause == nil) {
			t.Fatalf("byte %d flipped after Decode: %q %v %v; a strict parse gives %q %v %v", k, out, closeAfter, cause, wout, wclose, wcause)
		}
	})
}

// TestServerTakesDecodeParse: Serve takes the parse Decode left for the
// frame it returned (without the race detector, whose sync.Pool drops
// items at random), once; a frame changed since, another frame, or a
// Server with other limits parses again.
func TestServerTakesDecodeParse(t *testing.T) {
	c := ServerCodec{Clock: fixedClock}
	buf := []byte(wrkRequest + "GET /bye HTTP/1.1\r\nHost: h\r\n\r\n")
	frame, n, _ := c.Decode(buf)
	if n != len(wrkRequest) {
		t.Fatalf("Decode took %d bytes", n)
	}
	if !raceEnabled && !keptFor(frame) {
		t.Error("Decode left no parse for Server")
	}
	calls := 0
	s := &Server{Codec: c, Route: func(dst []byte, req *Request, date []byte) []byte {
		calls++
		req.KeepAlive = false // a route may change the Request: the parse is used once
		req.Path = []byte("/changed")
		return req.AppendResponse(dst, 200, "text/plain", req.Path, date)
	}}
	for i := 0; i < 2; i++ {
		out, closeAfter, cause := s.Respond(nil, frame, t0)
		if cause != nil || !closeAfter || !bytes.HasSuffix(out, []byte("/changed")) {
			t.Fatalf("Respond %d: %q %v %v", i, out, closeAfter, cause)
		}
		if !raceEnabled && keptFor(frame) {
			t.Fatalf("Respond %d left the parse for another use", i)
		}
	}

	// The frame's bytes change after Decode: the head no longer parses.
	frame, _, _ = c.Decode(buf)
	buf[1] = ' ' // "G ET"
	out, closeAfter, cause := s.Respond(nil, frame, t0)
	if cause != ErrBadRequestLine || !closeAfter || !bytes.HasPrefix(out, []byte("HTTP/1.1 400 ")) {
		t.Errorf("changed frame: %q %v %v", out, closeAfter, cause)
	}
	buf[1] = 'E'

	// Another frame of the same length at another address.
	frame, _, _ = c.Decode(buf)
	other := []byte("GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\r\r\n")
	if len(other) != len(frame) {
		t.Fatal("test frames differ in length")
	}
	if _, _, cause := s.Respond(nil, other, t0); cause != ErrBadHeader {
		t.Errorf("another frame: cause %v, want %v", cause, ErrBadHeader)
	}

	// A Server whose limits differ from the codec's applies its own.
	post := []byte("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello")
	frame, n, _ = ServerCodec{Codec: Codec{MaxBodyBytes: 8}}.Decode(post)
	if n != len(post) {
		t.Fatalf("Decode took %d of %d bytes", n, len(post))
	}
	small := &Server{Codec: ServerCodec{Codec: Codec{MaxBodyBytes: 4}, Clock: fixedClock}}
	if _, _, cause := small.Respond(nil, frame, t0); cause != ErrBodyTooLarge {
		t.Errorf("smaller body limit: cause %v, want %v", cause, ErrBodyTooLarge)
	}

	// An empty frame is no request.
	if _, closeAfter, cause := s.Respond(nil, nil, t0); cause != ErrFramingMismatch || !closeAfter {
		t.Errorf("empty frame: %v %v", closeAfter, cause)
	}
	if calls != 2 {
		t.Errorf("route called %d times, want 2", calls)
	}
}

// TestDecodeServeZeroAllocs: ServerCodec.Decode and Server.Serve of the
// frame, the engine's steady path, allocate nothing.
func TestDecodeServeZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's bookkeeping allocates")
	}
	body := []byte("hi")
	s := &Server{Route: func(dst []byte, req *Request, date []byte) []byte {
		return req.AppendResponse(dst, 200, "text/plain", body, date)
	}}
	for _, loop := range []bool{false, true} {
		c := &loopConn{queueConn: queueConn{q: make([]byte, 0, 1<<20)}, codec: s.Codec}
		var conn Conn = &c.queueConn
		if loop { // on an engine loop with the codec's own scratch space
			c.codec, conn = s.Codec.ForLoop(), c
		}
		in := []byte(wrkRequest + wrkRequest + postABC)
		a := testing.AllocsPerRun(1000, func() {
			c.q = c.q[:0]
			for data := in; len(data) > 0; {
				frame, n, _ := c.codec.Decode(data)
				s.Serve(conn, frame)
				data = data[n:]
			}
		})
		if a != 0 {
			t.Errorf("loop codec %v: %.1f allocations per read, want 0", loop, a)
		}
	}
}

// TestServerTakesLoopParse: a codec from ForLoop parses into its own
// scratch space, not the pool's, and Serve on a connection that hands out
// that codec takes the parse from there, once, and answers exactly as
// Serve on a connection without it (which parses the frame itself).
func TestServerTakesLoopParse(t *testing.T) {
	s := &Server{Codec: ServerCodec{Clock: fixedClock}, Route: func(dst []byte, req *Request, date []byte) []byte {
		return req.AppendResponse(dst, 200, "text/plain", req.Path, date)
	}}
	lc := s.Codec.ForLoop()
	own := lc.(*loopServerCodec).sc
	if own == nil {
		t.Fatal("ForLoop did not give the codec scratch space of its own")
	}
	buf := []byte(wrkRequest + "GET /bye HTTP/1.1\r\nHost: h\r\n\r\n")
	var want [][]byte
	plain := &queueConn{}
	for data := buf; len(data) > 0; {
		frame, n, _ := s.Codec.Decode(data)
		plain.q = plain.q[:0]
		s.Serve(plain, frame)
		want = append(want, bytes.Clone(plain.q))
		data = data[n:]
	}
	c := &loopConn{codec: lc}
	for i, data := 0, buf; len(data) > 0; i++ {
		frame, n, _ := lc.Decode(data)
		if p := &own.parsed; p.start != uintptr(unsafe.Pointer(&frame[0])) || p.n != len(frame) {
			t.Fatalf("frame %d: the loop codec left no parse in its own space", i)
		}
		c.q = c.q[:0]
		if closeAfter := s.Serve(c, frame); closeAfter {
			t.Fatalf("frame %d: close after a keep-alive request", i)
		}
		if own.parsed.start != 0 {
			t.Fatalf("frame %d: Serve did not take the loop codec's parse", i)
		}
		if !bytes.Equal(c.q, want[i]) {
			t.Errorf("frame %d: %q, want %q", i, c.q, want[i])
		}
		data = data[n:]
	}

	// What the owned parse still checks: a frame of the same length at
	// another address, and a Server with other limits, parse for themselves.
	frame, _, _ := lc.Decode(buf)
	other := []byte("GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\r\r\n")
	if len(other) != len(frame) {
		t.Fatal("test frames differ in length")
	}
	if closeAfter := s.Serve(c, other); closeAfter || own.parsed.start != 0 || !c.closed {
		t.Errorf("another frame at another address: served from the loop parse (close %v, closed %v)", closeAfter, c.closed)
	}
	c.closed = false
	post := []byte("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello")
	frame, _, _ = lc.Decode(post)
	small := &Server{Codec: ServerCodec{Codec: Codec{MaxBodyBytes: 4}, Clock: fixedClock}}
	c.q = c.q[:0]
	if small.Serve(c, frame); !c.closed || !bytes.HasPrefix(c.q, []byte("HTTP/1.1 413 ")) {
		t.Errorf("smaller body limit: %q, closed %v; want 413 and close", c.q, c.closed)
	}

	// What it does not check (Serve's contract): bytes the handler changed
	// after Decode. The loop's frame is answered as decoded; the pooled path
	// (TestServerTakesDecodeParse) compares the head and parses again.
	frame, _, _ = lc.Decode(buf)
	buf[1] = ' ' // "G ET"
	c.q, c.closed = c.q[:0], false
	if closeAfter := s.Serve(c, frame); closeAfter || c.closed || !bytes.HasPrefix(c.q, []byte("HTTP/1.1 200 ")) {
		t.Errorf("changed frame on the loop: %q, closed %v; want the decoded request's 200", c.q, c.closed)
	}
	buf[1] = 'E'
}
