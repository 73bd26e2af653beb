package http1_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/sluicenet/sluice/protocol"
	"github.com/sluicenet/sluice/protocol/http1"
)

// fuzzCodec maps a fuzzed selector to a codec: 0 is the default limits,
// anything else small limits that the inputs can reach.
func fuzzCodec(sel uint16) http1.Codec {
	if sel == 0 {
		return http1.Codec{}
	}
	return http1.Codec{
		MaxHeaderBytes: int(sel&0xff) + 1,
		MaxHeaderCount: int(sel>>8&0x7) + 1,
		MaxBodyBytes:   int64(sel>>11) + 1,
	}
}

func effective(c http1.Codec) (head, count int, body int64) {
	head, count, body = c.MaxHeaderBytes, c.MaxHeaderCount, c.MaxBodyBytes
	if head == 0 {
		head = http1.DefaultMaxHeaderBytes
	}
	if count == 0 {
		count = http1.DefaultMaxHeaderCount
	}
	if body == 0 {
		body = http1.DefaultMaxBodyBytes
	}
	return head, count, body
}

// isStatus reports the statuses the codec may ask for.
func isStatus(s int) bool {
	switch s {
	case 400, 411, 413, 414, 417, 431, 505:
		return true
	}
	return false
}

// within reports whether a is empty or lies inside b's memory.
func within(a, b []byte) bool {
	if len(a) == 0 {
		return true
	}
	for i := range b {
		if &b[i] == &a[0] {
			return i+len(a) <= len(b)
		}
	}
	return false
}

// FuzzHTTPDecode (seeds in seedCorpus) decodes arbitrary input as a pipelined stream: Decode never
// panics, never consumes more than its input, enforces every limit, agrees
// with Parse, treats every strict prefix of a request as incomplete, and
// only fails on input that more bytes cannot repair.
func FuzzHTTPDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, sel uint16) {
		c := fuzzCodec(sel)
		maxHead, maxCount, maxBody := effective(c)
		var req http1.Request
		in := data
		for steps := 0; steps <= len(data); steps++ {
			frame, n, err := c.Decode(in)
			if n < 0 || n > len(in) {
				t.Fatalf("Decode consumed %d of %d bytes", n, len(in))
			}
			if err != nil {
				if n != 0 || frame != nil {
					t.Fatalf("error %v with frame %q, n %d", err, frame, n)
				}
				var e *http1.Error
				if !errors.As(err, &e) || !isStatus(e.Status()) || http1.StatusFor(err) != e.Status() ||
					!(errors.Is(err, protocol.ErrMalformed) || errors.Is(err, protocol.ErrFrameTooLarge)) {
					t.Fatalf("error %v is not a framing *Error", err)
				}
				var one http1.Request
				if m, err2 := c.DecodeRequest(in, &one); m != 0 || err2 != err {
					t.Fatalf("Decode: %v; DecodeRequest: %d, %v", err, m, err2)
				}
				more := append(append([]byte(nil), in...), "\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n"...)
				if _, _, err2 := c.Decode(more); err2 == nil {
					t.Fatalf("Decode(%q) = %v but more input repaired it", in, err)
				}
				return
			}
			if n == 0 {
				if frame != nil {
					t.Fatalf("frame %q with n == 0", frame)
				}
				return
			}
			if !bytes.Equal(frame, in[:n]) || cap(frame) != n {
				t.Fatalf("frame %q is not in[:%d] with clipped capacity", frame, n)
			}
			if err := http1.Parse(frame, &req); err != nil {
				t.Fatalf("Parse(%q) after Decode: %v", frame, err)
			}
			var one http1.Request
			if m, err := c.DecodeRequest(in, &one); err != nil || m != n || one.NumHeaders != req.NumHeaders ||
				!bytes.Equal(one.Target, req.Target) || !bytes.Equal(one.Body, req.Body) || one.KeepAlive != req.KeepAlive {
				t.Fatalf("DecodeRequest = %d, %v; Decode+Parse gave %d", m, err, n)
			}
			body := int64(len(req.Body))
			if head := n - len(req.Body); head > maxHead || body > maxBody || req.NumHeaders > maxCount {
				t.Fatalf("limits %d/%d/%d exceeded: head %d, body %d, fields %d", maxHead, maxCount, maxBody, head, body, req.NumHeaders)
			}
			if req.ContentLength != body || !bytes.HasSuffix(frame, req.Body) {
				t.Fatalf("body %q is not the last %d bytes of %q", req.Body, req.ContentLength, frame)
			}
			step := 1
			if n > 64 {
				step = n / 32
			}
			for k := 0; k < n; k += step {
				if f, m, err := c.Decode(frame[:k]); m != 0 || err != nil || f != nil {
					t.Fatalf("prefix %d of %q: %q, %d, %v; want more input", k, frame, f, m, err)
				}
			}
			in = in[n:]
		}
		t.Fatalf("Decode made no progress on %q", in)
	})
}

// permissive frames anything Parse accepts: the largest limits there are.
var permissive = http1.Codec{MaxHeaderBytes: 1 << 30, MaxHeaderCount: http1.MaxHeaders, MaxBodyBytes: 1 << 40}

// FuzzHTTPParse (seeds in seedCorpus) parses arbitrary frames: Parse never panics or modifies its
// input, agrees with Decode, keeps every field inside the frame, gives the
// same result twice, and the response it leads to is one net/http can read.
func FuzzHTTPParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		orig := append([]byte(nil), data...)
		var req http1.Request
		err := http1.Parse(data, &req)
		if !bytes.Equal(data, orig) {
			t.Fatalf("Parse modified its input")
		}
		_, n, derr := permissive.Decode(data)
		switch {
		case errors.Is(err, http1.ErrIncompleteRequest):
			if n != 0 || derr != nil {
				t.Fatalf("Parse: incomplete; Decode: %d, %v", n, derr)
			}
			return
		case errors.Is(err, http1.ErrTrailingBytes):
			if n == 0 || n >= len(data) || derr != nil {
				t.Fatalf("Parse: trailing bytes; Decode: %d of %d, %v", n, len(data), derr)
			}
			return
		case err != nil:
			if derr != err {
				t.Fatalf("Parse: %v; Decode: %d, %v", err, n, derr)
			}
			return
		}
		if derr != nil || n != len(data) {
			t.Fatalf("Parse accepted %q; Decode: %d, %v", data, n, derr)
		}
		for i, s := range [][]byte{req.Method, req.Target, req.Path, req.Query, req.Host, req.Body} {
			if !within(s, data) && !(i == 2 && string(s) == "/") {
				t.Fatalf("field %d %q does not alias the frame", i, s)
			}
		}
		for _, h := range req.Fields() {
			if !within(h.Name, data) || !within(h.Value, data) || len(h.Name) == 0 {
				t.Fatalf("header %q: %q outside the frame", h.Name, h.Value)
			}
		}
		if len(req.Method) == 0 || len(req.Target) == 0 || int64(len(req.Body)) != req.ContentLength {
			t.Fatalf("incomplete request %+v", req)
		}
		first := req
		var again http1.Request
		if err := http1.Parse(data, &again); err != nil || again.NumHeaders != first.NumHeaders ||
			again.KeepAlive != first.KeepAlive || !bytes.Equal(again.Body, first.Body) {
			t.Fatalf("second Parse differs: %v", err)
		}
		out := req.AppendResponse(nil, 200, "text/plain", req.Body, testDate)
		resp, rerr := http.ReadResponse(bufio.NewReader(bytes.NewReader(out)), nil)
		if rerr != nil {
			t.Fatalf("net/http cannot read our response %q: %v", out, rerr)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.Close == req.KeepAlive {
			t.Fatalf("KeepAlive %v but response Close %v", req.KeepAlive, resp.Close)
		}
		if !req.MethodIs("HEAD") && !bytes.Equal(got, req.Body) {
			t.Fatalf("response body %q; want %q", got, req.Body)
		}
	})
}
