package http1

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// t0 is the fixed clock of the byte-exact tests.
var t0 = time.Date(2026, 11, 22, 17, 0, 0, 0, time.UTC)

// date0 is the Date value for t0.
var date0 = t0.Format(TimeFormat)

func fixedClock() time.Time { return t0 }

// expectResp builds an expected response head and body.
func expectResp(status, fields, body string) string {
	return "HTTP/1.1 " + status + "\r\nServer: sluice\r\nDate: " + date0 + "\r\n" + fields + "\r\n" + body
}

const (
	wrkRequest = "GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"
	postABC    = "POST /echo HTTP/1.1\r\nHost: h\r\ncontent-length: 3\r\n\r\nabc"
)

// echoLimits are the limits of the decode cases: a 64 KiB body limit (the
// HTTP echo server's).
var echoLimits = Codec{MaxBodyBytes: 64 << 10}

// decodeCases: input, the length ServerCodec.Decode returns (0: more input;
// -1: a framing error passed through as all of the input; -2: one request
// that is all of the input), and whether Decode leaves its parse for
// Server (the frame is a request that parses).
var decodeCases = []struct {
	name string
	in   string
	n    int
	kept bool
}{
	{"empty", "", 0, false},
	{"wrk", wrkRequest, len(wrkRequest), true},
	{"pipelined", wrkRequest + wrkRequest, len(wrkRequest), true},
	{"partial head", wrkRequest[:20], 0, false},
	{"head without final CRLF", wrkRequest[:len(wrkRequest)-2], 0, false},
	{"body", postABC + "GET", len(postABC), true},
	{"body in parts", "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nab", 0, false},
	{"CL with spaces", "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length:  2 \t\r\n\r\nab", -2, true},
	{"CL repeated", "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nab", -2, true},
	{"CL list", "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 2, 2\r\n\r\nab", -2, true},
	{"CL conflict", "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc", -1, false},
	{"CL bad", "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: x\r\n\r\n", -1, false},
	{"CL huge", "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999\r\n\r\n", -1, false},
	{"CL over limit", "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 65537\r\n\r\n", -1, false},
	{"chunked", "POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n", -1, false},
	{"leading CRLF", "\r\n" + wrkRequest, len(wrkRequest) + 2, true},
	{"garbage", "\x16\x03\x01\x00\xa5\x01\x00", -1, false},
	{"bare LF", "GET / HTTP/1.1\nHost: h\n\n", -1, false},
	// The old fast pass cut these at the first CRLFCRLF, for Server's
	// strict parse to refuse; the strict Decode passes them through.
	{"bad head", "GET / HTTP/1.1\r\n\r\n", -1, false},
	{"space before colon", "GET / HTTP/1.1\r\nHost : h\r\n\r\n", -1, false},
}

// TestServerCodecDecode pins what ServerCodec.Decode returns and which
// pass decides.
func TestServerCodecDecode(t *testing.T) {
	c := ServerCodec{Codec: echoLimits}
	for i, tc := range decodeCases {
		frame, n, err := c.Decode([]byte(tc.in))
		want := tc.n
		if want < 0 { // passed through, or all of it one request
			want = len(tc.in)
		}
		if err != nil || n != want || len(frame) != n || string(frame) != tc.in[:n] {
			t.Errorf("%d %s: Decode = %q, %d, %v; want %d bytes", i, tc.name, frame, n, err, want)
		}
		if n > 0 && cap(frame) != n {
			t.Errorf("%d %s: frame capacity %d not clipped", i, tc.name, cap(frame))
		}
		if kept := keptFor(frame); !raceEnabled && kept != tc.kept {
			t.Errorf("%d %s: parse left for Server %v, want %v", i, tc.name, kept, tc.kept)
		}
	}
}

// keptFor reports whether the scratch Server would get next holds
// Decode's parse of frame (with the race detector on, sync.Pool drops
// items at random, so this is only meaningful without it).
func keptFor(frame []byte) bool {
	sc := getScratch()
	defer putScratch(sc)
	p := &sc.parsed
	return len(frame) > 0 && p.start == uintptr(unsafe.Pointer(&frame[0])) && p.n == len(frame)
}

// TestServerCodecAgreesWithStrict: wherever the strict Decode frames a
// request, ServerCodec.Decode cuts the same frame; where strict fails,
// Decode passes the whole input through.
func TestServerCodecAgreesWithStrict(t *testing.T) {
	c := ServerCodec{Codec: echoLimits}
	for i, tc := range decodeCases {
		in := []byte(tc.in)
		_, sn, serr := c.Codec.Decode(in)
		_, n, _ := c.Decode(in)
		switch {
		case serr != nil && n != len(in):
			t.Errorf("%d %s: strict error %v, Decode consumed %d of %d", i, tc.name, serr, n, len(in))
		case serr == nil && sn > 0 && n != sn:
			t.Errorf("%d %s: strict frames %d bytes, Decode %d", i, tc.name, sn, n)
		}
	}
}

// TestServerCodecLimits: Decode passes a request over MaxHeaderBytes or
// MaxBodyBytes through, and Server answers it with the strict parser's
// status.
func TestServerCodecLimits(t *testing.T) {
	c := ServerCodec{Codec: Codec{MaxHeaderBytes: 64, MaxBodyBytes: 4}}
	long := "GET /" + strings.Repeat("a", 80) + " HTTP/1.1\r\nHost: h\r\n\r\n"
	if _, n, err := c.Decode([]byte(long)); err != nil || n != len(long) {
		t.Errorf("long head: %d, %v: want the input passed through", n, err)
	}
	s := &Server{Codec: c}
	out, closeAfter, cause := s.Respond(nil, []byte(long), t0)
	if !bytes.HasPrefix(out, []byte("HTTP/1.1 414 ")) || !closeAfter || cause != ErrURITooLong {
		t.Errorf("long head: %q %v %v", out, closeAfter, cause)
	}
	body := "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"
	out, _, cause = s.Respond(nil, []byte(body), t0)
	if !bytes.HasPrefix(out, []byte("HTTP/1.1 413 ")) || cause != ErrBodyTooLarge {
		t.Errorf("large body: %q %v", out, cause)
	}
	bad := ServerCodec{Codec: Codec{MaxHeaderBytes: -1}}
	if _, n, err := bad.Decode([]byte(wrkRequest)); err != nil || n != len(wrkRequest) {
		t.Errorf("invalid codec: %d, %v: want the input passed through", n, err)
	}
}

// TestServerCodecAppendReject pins the reject responses.
func TestServerCodecAppendReject(t *testing.T) {
	c := ServerCodec{Clock: fixedClock}
	text := func(status string) string { return "text/plain; charset=utf-8\r\nContent-Length: " + status }
	cases := []struct {
		name, frame, reason string
		retry               time.Duration
		want                string
	}{
		{"tenant", wrkRequest, "tenant", 1500 * time.Millisecond,
			expectResp("429 Too Many Requests", "Content-Type: "+text("18")+"\r\nRetry-After: 2\r\n", "Too Many Requests\n")},
		{"overload", wrkRequest, "codel", 100 * time.Millisecond,
			expectResp("503 Service Unavailable", "Content-Type: "+text("20")+"\r\nRetry-After: 1\r\n", "Service Unavailable\n")},
		{"unknown reason", wrkRequest, "whatever", 0,
			expectResp("503 Service Unavailable", "Content-Type: "+text("20")+"\r\nRetry-After: 0\r\n", "Service Unavailable\n")},
		{"HEAD", "HEAD / HTTP/1.1\r\nHost: h\r\n\r\n", "tenant", time.Second,
			expectResp("429 Too Many Requests", "Content-Type: "+text("18")+"\r\nRetry-After: 1\r\n", "")},
		{"close", "GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", "tenant", time.Second,
			expectResp("429 Too Many Requests", "Content-Type: "+text("18")+"\r\nRetry-After: 1\r\nConnection: close\r\n", "Too Many Requests\n")},
		{"HTTP/1.0 keep-alive", "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", "tenant", time.Second,
			"HTTP/1.1 429 Too Many Requests\r\nConnection: keep-alive\r\nServer: sluice\r\nDate: " + date0 + "\r\nContent-Type: " + text("18") + "\r\nRetry-After: 1\r\n\r\nToo Many Requests\n"},
		{"in progress", wrkRequest, "in_progress", 2 * time.Second,
			expectResp("409 Conflict", "Content-Type: "+text("9")+"\r\nRetry-After: 2\r\n", "Conflict\n")},
		{"mismatch", wrkRequest, "mismatch", 0,
			expectResp("422 Unprocessable Content", "Content-Type: "+text("22")+"\r\n", "Unprocessable Content\n")},
		{"no frame (a connection refused at accept)", "", "global", 100 * time.Millisecond,
			expectResp("503 Service Unavailable", "Content-Type: "+text("20")+"\r\nRetry-After: 1\r\nConnection: close\r\n", "Service Unavailable\n")},
		{"garbage", "\x16\x03\x01", "tenant", time.Second,
			expectResp("429 Too Many Requests", "Content-Type: "+text("18")+"\r\nRetry-After: 1\r\nConnection: close\r\n", "Too Many Requests\n")},
	}
	for i, tc := range cases {
		got := c.AppendReject([]byte("x"), []byte(tc.frame), tc.reason, tc.retry)
		if string(got) != "x"+tc.want {
			t.Errorf("%d %s:\n%q\nwant\n%q", i, tc.name, got, "x"+tc.want)
		}
	}
}

// TestServerCodecRejectZeroAllocs: a reject allocates nothing when dst has
// room.
func TestServerCodecRejectZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's bookkeeping allocates")
	}
	c := ServerCodec{}
	dst := make([]byte, 0, 512)
	frame := []byte(wrkRequest)
	if a := testing.AllocsPerRun(1000, func() { dst = c.AppendReject(dst[:0], frame, "tenant", time.Second) }); a != 0 {
		t.Errorf("%.1f allocations per reject, want 0", a)
	}
}

// TestClockOncePerBatch: frames that follow each other in one buffer share
// a clock reading; a frame elsewhere reads the clock again, and a reading
// serves at most maxClockReuse frames.
func TestClockOncePerBatch(t *testing.T) {
	reads := 0
	clock := func() time.Time { reads++; return t0 }
	var s scratch
	buf := []byte(strings.Repeat(wrkRequest, 4))
	for i := 0; i < 4; i++ {
		s.clock(buf[i*len(wrkRequest):(i+1)*len(wrkRequest)], clock)
	}
	if reads != 1 {
		t.Errorf("4 back-to-back frames read the clock %d times, want 1", reads)
	}
	s.clock(buf[:len(wrkRequest)], clock) // a new read batch: the buffer's start again
	if reads != 2 {
		t.Errorf("a new batch read the clock %d times in all, want 2", reads)
	}
	big := make([]byte, 2*maxClockReuse)
	reads = 0
	for i := range big {
		s.clock(big[i:i+1], clock)
	}
	if reads != 2 {
		t.Errorf("%d contiguous frames read the clock %d times, want 2", len(big), reads)
	}
}

// fakeConn records what Server.Serve does to a connection.
type fakeConn struct {
	out      []byte
	cause    error
	writeErr error
}

func (c *fakeConn) Write(p []byte) error {
	if c.writeErr != nil {
		return c.writeErr
	}
	c.out = append(c.out, p...)
	return nil
}

func (c *fakeConn) CloseWithError(cause error) error { c.cause = cause; return nil }

// TestServerServe: a route's response is written once; a request that does
// not keep the connection alive (or whose route says so) reports close; a
// malformed request, a framing mismatch or a failed write closes the
// connection with the cause; a nil Route answers 404.
func TestServerServe(t *testing.T) {
	hello := func(dst []byte, req *Request, date []byte) []byte {
		if string(req.Path) == "/bye" {
			req.KeepAlive = false
		}
		return req.AppendResponse(dst, 200, "text/plain", []byte("hi"), date)
	}
	s := &Server{Codec: ServerCodec{Clock: fixedClock}, Route: hello}
	okResp := expectResp("200 OK", "Content-Type: text/plain\r\nContent-Length: 2\r\n", "hi")
	byeResp := expectResp("200 OK", "Content-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n", "hi")
	badResp := expectResp("400 Bad Request", "Content-Type: text/plain; charset=utf-8\r\nContent-Length: 12\r\nConnection: close\r\n", "Bad Request\n")
	queueFull := errors.New("queue full")
	cases := []struct {
		name, in string
		route    Route
		writeErr error
		want     string
		close    bool
		cause    error
	}{
		{"ok", wrkRequest, hello, nil, okResp, false, nil},
		{"route closes", "GET /bye HTTP/1.1\r\nHost: h\r\n\r\n", hello, nil, byeResp, true, nil},
		{"client closes", "GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", hello, nil, byeResp, true, nil},
		{"malformed", "GET / HTTP/1.1\r\n\r\n", hello, nil, badResp, false, ErrBadHost},
		{"framing mismatch", wrkRequest + "GET", hello, nil, badResp, false, ErrFramingMismatch},
		{"write fails", wrkRequest, hello, queueFull, "", false, queueFull},
		{"nil route", wrkRequest, nil, nil, expectResp("404 Not Found", "Content-Type: text/plain; charset=utf-8\r\nContent-Length: 10\r\n", "Not Found\n"), false, nil},
	}
	for i, tc := range cases {
		s.Route = tc.route
		c := &fakeConn{writeErr: tc.writeErr}
		closeAfter := s.Serve(c, []byte(tc.in))
		if string(c.out) != tc.want || closeAfter != tc.close || !errors.Is(c.cause, tc.cause) || (c.cause == nil) != (tc.cause == nil) {
			t.Errorf("%d %s: wrote %q, close %v, cause %v; want %q, %v, %v", i, tc.name, c.out, closeAfter, c.cause, tc.want, tc.close, tc.cause)
		}
	}
}

// lendingConn is a fakeConn that lends an available buffer, as
// server.Conn does, and records whether Write got it back in place.
type lendingConn struct {
	fakeConn
	room    []byte
	inPlace bool
}

func (c *lendingConn) AvailableBuffer() []byte { return c.room[:0] }

func (c *lendingConn) Write(p []byte) error {
	c.inPlace = len(p) > 0 && &p[0] == &c.room[:1][0]
	return c.fakeConn.Write(p)
}

// TestServerServeInPlace: a connection that lends its available buffer
// gets the response encoded straight into it when the buffer has room for
// it (no scratch copy), and through the scratch buffer when it has not;
// the bytes are the same either way.
func TestServerServeInPlace(t *testing.T) {
	s := &Server{Codec: ServerCodec{Clock: fixedClock}, Route: func(dst []byte, req *Request, date []byte) []byte {
		return req.AppendResponse(dst, 200, "text/plain", []byte("hi"), date)
	}}
	want := expectResp("200 OK", "Content-Type: text/plain\r\nContent-Length: 2\r\n", "hi")
	for _, c := range []struct {
		room    int
		inPlace bool
	}{{8 << 10, true}, {64, false}} {
		conn := &lendingConn{room: make([]byte, 0, c.room)}
		if s.Serve(conn, []byte(wrkRequest)) || string(conn.out) != want || conn.inPlace != c.inPlace {
			t.Errorf("room %d: wrote %q in place %v, want %q in place %v", c.room, conn.out, conn.inPlace, want, c.inPlace)
		}
	}
}

// TestServerServeZeroAllocs: Serve with a route that does not allocate
// allocates nothing.
func TestServerServeZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's bookkeeping allocates")
	}
	body := []byte("hi")
	s := &Server{Route: func(dst []byte, req *Request, date []byte) []byte {
		return req.AppendResponse(dst, 200, "text/plain", body, date)
	}}
	c := &fakeConn{out: make([]byte, 0, 1<<20)}
	frame := []byte(wrkRequest)
	if a := testing.AllocsPerRun(1000, func() { c.out = c.out[:0]; s.Serve(c, frame) }); a != 0 {
		t.Errorf("%.1f allocations per request, want 0", a)
	}
}

// FuzzServerDecode checks ServerCodec.Decode against the strict Decode: it
// never fails and never consumes more than its input; where strict frames
// a request or wants more input, Decode does the same; where strict fails,
// Decode passes all of the input through, and Server refuses that frame
// with the same status.
func FuzzServerDecode(f *testing.F) {
	for _, tc := range decodeCases {
		f.Add([]byte(tc.in))
	}
	c := ServerCodec{Codec: echoLimits}
	s := &Server{Codec: ServerCodec{Codec: echoLimits, Clock: fixedClock}}
	f.Fuzz(func(t *testing.T, in []byte) {
		frame, n, err := c.Decode(in)
		if err != nil || n < 0 || n > len(in) || len(frame) != n || !bytes.Equal(frame, in[:n]) {
			t.Fatalf("Decode = %q, %d, %v", frame, n, err)
		}
		_, sn, serr := c.Codec.Decode(in)
		switch {
		case serr != nil:
			if n != len(in) {
				t.Fatalf("strict error %v; Decode cut %d of %d bytes", serr, n, len(in))
			}
			_, closeAfter, cause := s.Respond(nil, frame, t0)
			if cause == nil || !closeAfter || StatusFor(cause) != StatusFor(serr) {
				t.Fatalf("strict error %v; Server answers the frame with cause %v", serr, cause)
			}
		case n != sn:
			t.Fatalf("strict frames %d bytes, Decode %d", sn, n)
		}
	})
}
