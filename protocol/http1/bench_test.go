package http1_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/sluicenet/sluice/protocol/http1"
)

// wrkMinimal is the request wrk sends by default.
const wrkMinimal = "GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"

var hello = []byte("Hello, World!")

// serve decodes, parses and answers every request in in, as an event loop
// would, and returns the response buffer.
func serve(c http1.Codec, in []byte, req *http1.Request, dates *http1.DateCache, now time.Time, out []byte) ([]byte, error) {
	for len(in) > 0 {
		frame, n, err := c.Decode(in)
		if err != nil {
			return out, err
		}
		if n == 0 {
			break
		}
		if err := http1.Parse(frame, req); err != nil {
			return out, err
		}
		out = req.AppendResponse(out, 200, "text/plain", hello, dates.Value(now))
		in = in[n:]
	}
	return out, nil
}

func benchServe(b *testing.B, in []byte, reqs int) {
	var c http1.Codec
	var req http1.Request
	var dates http1.DateCache
	out := make([]byte, 0, 64<<10)
	now := time.Unix(1_790_000_000, 0)
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var err error
		out, err = serve(c, in, &req, &dates, now, out[:0])
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*reqs), "ns/req")
}

// BenchmarkWrkGET: Decode + Parse + AppendResponse (with Date) of wrk's
// default request.
func BenchmarkWrkGET(b *testing.B) { benchServe(b, []byte(wrkMinimal), 1) }

// BenchmarkPlaintextGET: the same for the TechEmpower plaintext request.
func BenchmarkPlaintextGET(b *testing.B) { benchServe(b, []byte(wrkPlaintext), 1) }

// BenchmarkPlaintextPipelined16: 16 pipelined plaintext requests per op,
// like wrk with the TechEmpower pipeline script.
func BenchmarkPlaintextPipelined16(b *testing.B) {
	benchServe(b, bytes.Repeat([]byte(wrkPlaintext), 16), 16)
}

// BenchmarkDecodePlaintext: framing alone.
func BenchmarkDecodePlaintext(b *testing.B) {
	var c http1.Codec
	in := []byte(wrkPlaintext)
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for i := 0; i < b.N; i++ {
		if _, n, err := c.Decode(in); n != len(in) || err != nil {
			b.Fatal(n, err)
		}
	}
}

// BenchmarkAppendResponse: the plaintext response alone.
func BenchmarkAppendResponse(b *testing.B) {
	date := []byte("Sun, 22 Nov 2026 10:00:00 GMT")
	out := make([]byte, 0, 512)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		out = http1.AppendResponse(out[:0], 200, "text/plain", hello, true, date)
	}
}

// BenchmarkDecodeRequestPlaintext: framing and parsing in one pass, the
// alternative to Decode + Parse.
func BenchmarkDecodeRequestPlaintext(b *testing.B) {
	var c http1.Codec
	var req http1.Request
	in := []byte(wrkPlaintext)
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for i := 0; i < b.N; i++ {
		if n, err := c.DecodeRequest(in, &req); n != len(in) || err != nil {
			b.Fatal(n, err)
		}
	}
}

// BenchmarkPlaintextGETOnePass: the plaintext request served with
// DecodeRequest (one pass) instead of Decode + Parse.
func BenchmarkPlaintextGETOnePass(b *testing.B) {
	var c http1.Codec
	var req http1.Request
	var dates http1.DateCache
	in := []byte(wrkPlaintext)
	out := make([]byte, 0, 4096)
	now := time.Unix(1_790_000_000, 0)
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for i := 0; i < b.N; i++ {
		n, err := c.DecodeRequest(in, &req)
		if n != len(in) || err != nil {
			b.Fatal(n, err)
		}
		out = req.AppendResponse(out[:0], 200, "text/plain", hello, dates.Value(now))
	}
}
