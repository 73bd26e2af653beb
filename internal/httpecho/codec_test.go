package httpecho

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sluicenet/sluice/protocol/http1"
)

const postABC = "POST /echo HTTP/1.1\r\nHost: h\r\ncontent-length: 3\r\n\r\nabc"

// decodeCases: input, the length Codec.Decode returns (0: more input; -1:
// a framing error passed through as all of the input; -2: one request that
// is all of the input), and whether the fast pass cuts it (else the strict
// parser decides).
var decodeCases = []struct {
	name string
	in   string
	n    int
	fast bool
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
	{"CL list", "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 2, 2\r\n\r\nab", -2, false},
	{"CL conflict", "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc", -1, false},
	{"CL bad", "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: x\r\n\r\n", -1, false},
	{"CL huge", "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999\r\n\r\n", -1, false},
	{"CL over limit", "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 65537\r\n\r\n", -1, false},
	{"chunked", "POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n", -1, false},
	{"leading CRLF", "\r\n" + wrkRequest, len(wrkRequest) + 2, false},
	{"garbage", "\x16\x03\x01\x00\xa5\x01\x00", -1, false},
	{"bare LF", "GET / HTTP/1.1\nHost: h\n\n", -1, false},
	// The fast pass cuts at the first CRLFCRLF; the strict parse of the
	// frame then fails (missing Host) and the handler answers 400.
	{"bad head, fast cut", "GET / HTTP/1.1\r\n\r\n", 18, true},
	{"space before colon", "GET / HTTP/1.1\r\nHost : h\r\n\r\n", 28, true},
}

// TestDecode pins what Codec.Decode returns and which pass decides.
func TestDecode(t *testing.T) {
	var c Codec
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
		if fast := c.frameFast([]byte(tc.in)) > 0; fast != tc.fast {
			t.Errorf("%d %s: fast pass %v, want %v", i, tc.name, fast, tc.fast)
		}
	}
}

// TestDecodeAgreesWithStrict: wherever the strict http1 Decode frames a
// request, Codec.Decode cuts the same frame; where strict fails, Decode
// passes the whole input through.
func TestDecodeAgreesWithStrict(t *testing.T) {
	var c Codec
	strict := c.limited()
	for i, tc := range decodeCases {
		in := []byte(tc.in)
		_, sn, serr := strict.Decode(in)
		_, n, _ := c.Decode(in)
		switch {
		case serr != nil && n != len(in):
			t.Errorf("%d %s: strict error %v, Decode consumed %d of %d", i, tc.name, serr, n, len(in))
		case serr == nil && sn > 0 && n != sn:
			t.Errorf("%d %s: strict frames %d bytes, Decode %d", i, tc.name, sn, n)
		}
	}
}

// TestDecodeLimits: the fast pass honours MaxHeaderBytes and MaxBodyBytes
// the way the strict parser does.
func TestDecodeLimits(t *testing.T) {
	c := Codec{Codec: http1.Codec{MaxHeaderBytes: 64, MaxBodyBytes: 4}}
	long := "GET /" + strings.Repeat("a", 80) + " HTTP/1.1\r\nHost: h\r\n\r\n"
	if _, n, err := c.Decode([]byte(long)); err != nil || n != len(long) {
		t.Errorf("long head: %d, %v: want the input passed through", n, err)
	}
	h := NewHandler(c)
	out, closeAfter, cause := h.Respond(nil, []byte(long), t0)
	if !bytes.HasPrefix(out, []byte("HTTP/1.1 414 ")) || !closeAfter || cause != http1.ErrURITooLong {
		t.Errorf("long head: %q %v %v", out, closeAfter, cause)
	}
	body := "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"
	out, _, cause = h.Respond(nil, []byte(body), t0)
	if !bytes.HasPrefix(out, []byte("HTTP/1.1 413 ")) || cause != http1.ErrBodyTooLarge {
		t.Errorf("large body: %q %v", out, cause)
	}
	bad := Codec{Codec: http1.Codec{MaxHeaderBytes: -1}}
	if _, _, ok := bad.limits(); ok {
		t.Error("negative limit accepted by the fast pass")
	}
	if _, n, err := bad.Decode([]byte(wrkRequest)); err != nil || n != len(wrkRequest) {
		t.Errorf("invalid codec: %d, %v: want the input passed through", n, err)
	}
}

// serveStream plays the engine's part for a byte stream arriving in the
// given chunks: buffer, Decode frames, Respond to each, stop at a close.
func serveStream(t *testing.T, h *Handler, chunks ...[]byte) (out []byte, closed bool) {
	t.Helper()
	c := h.Codec()
	var in []byte
	for _, ch := range chunks {
		in = append(in, ch...)
		for len(in) > 0 {
			frame, n, err := c.Decode(in)
			if err != nil {
				t.Fatalf("Decode error %v (must pass framing errors through)", err)
			}
			if n == 0 {
				break
			}
			if n > len(in) {
				t.Fatalf("Decode consumed %d of %d", n, len(in))
			}
			var closeAfter bool
			out, closeAfter, _ = h.Respond(out, frame, t0)
			in = in[n:]
			if closeAfter {
				return out, true
			}
		}
	}
	return out, false
}

// pipeline is requests of every kind back to back, and the responses.
func pipeline() (in, want string) {
	for _, i := range []int{0, 4, 1, 10, 7, 6, 2} { // GET, POST, HEAD, 404, 405, PUT, query
		in += respondCases[i].in
		want += respondCases[i].want
	}
	return in, want
}

// TestSplitEveryByte feeds a pipeline split at every byte boundary (and in
// single bytes) and expects the same responses every time.
func TestSplitEveryByte(t *testing.T) {
	h := NewHandler(Codec{Clock: fixedClock})
	in, want := pipeline()
	for k := 0; k <= len(in); k++ {
		out, closed := serveStream(t, h, []byte(in[:k]), []byte(in[k:]))
		if string(out) != want || closed {
			t.Fatalf("split at %d: closed %v, responses\n%q\nwant\n%q", k, closed, out, want)
		}
	}
	var bytewise [][]byte
	for i := range len(in) {
		bytewise = append(bytewise, []byte(in[i:i+1]))
	}
	if out, _ := serveStream(t, h, bytewise...); string(out) != want {
		t.Fatalf("byte by byte: %q", out)
	}
	// A Connection: close in the middle ends the stream there.
	closing := respondCases[0].in + respondCases[12].in + respondCases[0].in
	out, closed := serveStream(t, h, []byte(closing))
	if !closed || string(out) != respondCases[0].want+respondCases[12].want {
		t.Fatalf("close mid-pipeline: closed %v, %q", closed, out)
	}
}

// TestAppendReject pins the reject responses.
func TestAppendReject(t *testing.T) {
	c := Codec{Clock: fixedClock}
	text := func(status string) string { return "text/plain; charset=utf-8\r\nContent-Length: " + status }
	cases := []struct {
		name, frame, reason string
		retry               time.Duration
		want                string
	}{
		{"tenant", wrkRequest, "tenant", 1500 * time.Millisecond,
			resp("429 Too Many Requests", "Content-Type: "+text("18")+"\r\nRetry-After: 2\r\n", "Too Many Requests\n")},
		{"overload", wrkRequest, "codel", 100 * time.Millisecond,
			resp("503 Service Unavailable", "Content-Type: "+text("20")+"\r\nRetry-After: 1\r\n", "Service Unavailable\n")},
		{"unknown reason", wrkRequest, "whatever", 0,
			resp("503 Service Unavailable", "Content-Type: "+text("20")+"\r\nRetry-After: 0\r\n", "Service Unavailable\n")},
		{"HEAD", "HEAD / HTTP/1.1\r\nHost: h\r\n\r\n", "tenant", time.Second,
			resp("429 Too Many Requests", "Content-Type: "+text("18")+"\r\nRetry-After: 1\r\n", "")},
		{"close", "GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", "tenant", time.Second,
			resp("429 Too Many Requests", "Content-Type: "+text("18")+"\r\nRetry-After: 1\r\nConnection: close\r\n", "Too Many Requests\n")},
		{"HTTP/1.0 keep-alive", "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", "tenant", time.Second,
			"HTTP/1.1 429 Too Many Requests\r\nConnection: keep-alive\r\nServer: sluice\r\nDate: " + date0 + "\r\nContent-Type: " + text("18") + "\r\nRetry-After: 1\r\n\r\nToo Many Requests\n"},
		{"in progress", wrkRequest, "in_progress", 2 * time.Second,
			resp("409 Conflict", "Content-Type: "+text("9")+"\r\nRetry-After: 2\r\n", "Conflict\n")},
		{"mismatch", wrkRequest, "mismatch", 0,
			resp("422 Unprocessable Content", "Content-Type: "+text("22")+"\r\n", "Unprocessable Content\n")},
		{"no frame (a connection refused at accept)", "", "global", 100 * time.Millisecond,
			resp("503 Service Unavailable", "Content-Type: "+text("20")+"\r\nRetry-After: 1\r\nConnection: close\r\n", "Service Unavailable\n")},
		{"garbage", "\x16\x03\x01", "tenant", time.Second,
			resp("429 Too Many Requests", "Content-Type: "+text("18")+"\r\nRetry-After: 1\r\nConnection: close\r\n", "Too Many Requests\n")},
	}
	for i, tc := range cases {
		got := c.AppendReject([]byte("x"), []byte(tc.frame), tc.reason, tc.retry)
		if string(got) != "x"+tc.want {
			t.Errorf("%d %s:\n%q\nwant\n%q", i, tc.name, got, "x"+tc.want)
		}
	}
}

// TestAppendRejectZeroAllocs: a reject allocates nothing when dst has room.
func TestAppendRejectZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's bookkeeping allocates")
	}
	c := Codec{}
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
