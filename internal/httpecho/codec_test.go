package httpecho

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/sluicenet/sluice/protocol/http1"
)

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
	h := NewHandler(Codec{http1.ServerCodec{Clock: fixedClock}})
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

// TestLoopCodecDecodesAlike: the codec Codec.ForLoop returns cuts the same
// frames as Codec, with the same limits (DefaultMaxBodyBytes for a zero
// MaxBodyBytes, not http1's 1 MiB), keeping its parse for Server.
func TestLoopCodecDecodesAlike(t *testing.T) {
	inputs := []string{
		"GET / HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\n\r\nGET /x HTTP/1.1\r\n",
		"GET / HTTP/1.1\r\nHost:",
		fmt.Sprintf("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: %d\r\n\r\n", DefaultMaxBodyBytes+1), // over the echo limit
		fmt.Sprintf("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: %d\r\n\r\nabc", DefaultMaxBodyBytes),
		"\x16\x03\x01 not http",
		"",
	}
	shared := Codec{}
	loop := shared.ForLoop()
	for _, in := range inputs {
		wf, wn, werr := shared.Decode([]byte(in))
		gf, gn, gerr := loop.Decode([]byte(in))
		if gn != wn || (gerr == nil) != (werr == nil) || !bytes.Equal(gf, wf) {
			t.Errorf("%q: loop codec (%q, %d, %v), shared (%q, %d, %v)", in, gf, gn, gerr, wf, wn, werr)
		}
	}
}
