package httpecho

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicenet/sluice/protocol"
	"github.com/sluicenet/sluice/protocol/http1"
)

// t0 is the fixed clock of the byte-exact tests.
var t0 = time.Date(2026, 11, 22, 17, 0, 0, 0, time.UTC)

// date0 is the Date value for t0.
var date0 = t0.Format(http1.TimeFormat)

func fixedClock() time.Time { return t0 }

// resp builds an expected response head and body.
func resp(status, fields, body string) string {
	return "HTTP/1.1 " + status + "\r\nServer: sluice\r\nDate: " + date0 + "\r\n" + fields + "\r\n" + body
}

const (
	helloResp    = "Content-Type: text/plain\r\nContent-Length: 13\r\n"
	notFoundResp = "Content-Type: text/plain; charset=utf-8\r\nContent-Length: 10\r\n"
	notAllowed   = "Content-Type: text/plain; charset=utf-8\r\nContent-Length: 19\r\n"
	wrkRequest   = "GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"
)

// respondCases are requests and the exact responses, with whether the
// connection closes after them.
var respondCases = []struct {
	name, in, want string
	close          bool
	err            error // the cause for a malformed request
}{
	{"wrk GET /", wrkRequest, resp("200 OK", helloResp, "Hello, World!"), false, nil},
	{"HEAD /", "HEAD / HTTP/1.1\r\nHost: h\r\n\r\n", resp("200 OK", helloResp, ""), false, nil},
	{"GET /?q", "GET /?x=1 HTTP/1.1\r\nHost: h\r\n\r\n", resp("200 OK", helloResp, "Hello, World!"), false, nil},
	{"absolute form", "GET http://h/ HTTP/1.1\r\nHost: h\r\n\r\n", resp("200 OK", helloResp, "Hello, World!"), false, nil},
	{"POST /echo", "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello",
		resp("200 OK", "Content-Type: application/octet-stream\r\nContent-Length: 5\r\n", "hello"), false, nil},
	{"PUT /echo empty", "PUT /echo HTTP/1.1\r\nHost: h\r\n\r\n",
		resp("200 OK", "Content-Type: application/octet-stream\r\nContent-Length: 0\r\n", ""), false, nil},
	{"POST /echo CL list", "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 3\r\n\r\nabc",
		resp("200 OK", "Content-Type: application/octet-stream\r\nContent-Length: 3\r\n", "abc"), false, nil},
	{"GET /echo", "GET /echo HTTP/1.1\r\nHost: h\r\n\r\n",
		"HTTP/1.1 405 Method Not Allowed\r\nAllow: POST, PUT\r\nServer: sluice\r\nDate: " + date0 + "\r\n" + notAllowed + "\r\nMethod Not Allowed\n", false, nil},
	{"DELETE /", "DELETE / HTTP/1.1\r\nHost: h\r\n\r\n",
		"HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD\r\nServer: sluice\r\nDate: " + date0 + "\r\n" + notAllowed + "\r\nMethod Not Allowed\n", false, nil},
	{"HEAD /echo", "HEAD /echo HTTP/1.1\r\nHost: h\r\n\r\n",
		"HTTP/1.1 405 Method Not Allowed\r\nAllow: POST, PUT\r\nServer: sluice\r\nDate: " + date0 + "\r\n" + notAllowed + "\r\n", false, nil},
	{"404", "GET /nope HTTP/1.1\r\nHost: h\r\n\r\n", resp("404 Not Found", notFoundResp, "Not Found\n"), false, nil},
	{"404 path is exact", "GET /echo/ HTTP/1.1\r\nHost: h\r\n\r\n", resp("404 Not Found", notFoundResp, "Not Found\n"), false, nil},
	{"Connection: close", "GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
		resp("200 OK", helloResp+"Connection: close\r\n", "Hello, World!"), true, nil},
	{"HTTP/1.0 closes", "GET / HTTP/1.0\r\n\r\n", resp("200 OK", helloResp+"Connection: close\r\n", "Hello, World!"), true, nil},
	{"HTTP/1.0 keep-alive", "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
		resp("200 OK", helloResp+"Connection: keep-alive\r\n", "Hello, World!"), false, nil},
	{"404 with close", "GET /x HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
		resp("404 Not Found", notFoundResp+"Connection: close\r\n", "Not Found\n"), true, nil},
	{"garbage", "\x16\x03\x01\x00\xa5\x01\x00\x00",
		resp("400 Bad Request", "Content-Type: text/plain; charset=utf-8\r\nContent-Length: 12\r\nConnection: close\r\n", "Bad Request\n"), true, http1.ErrBadRequestLine},
	{"missing Host", "GET / HTTP/1.1\r\n\r\n",
		resp("400 Bad Request", "Content-Type: text/plain; charset=utf-8\r\nContent-Length: 12\r\nConnection: close\r\n", "Bad Request\n"), true, http1.ErrBadHost},
	{"chunked", "POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n",
		resp("411 Length Required", "Content-Type: text/plain; charset=utf-8\r\nContent-Length: 16\r\nConnection: close\r\n", "Length Required\n"), true, http1.ErrChunked},
	{"Expect", "POST /echo HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n",
		resp("417 Expectation Failed", "Content-Type: text/plain; charset=utf-8\r\nContent-Length: 19\r\nConnection: close\r\n", "Expectation Failed\n"), true, http1.ErrExpectation},
	{"HTTP/2.0", "GET / HTTP/2.0\r\nHost: h\r\n\r\n",
		resp("505 HTTP Version Not Supported", "Content-Type: text/plain; charset=utf-8\r\nContent-Length: 27\r\nConnection: close\r\n", "HTTP Version Not Supported\n"), true, http1.ErrVersion},
	{"body too large", "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 65537\r\n\r\n",
		resp("413 Content Too Large", "Content-Type: text/plain; charset=utf-8\r\nContent-Length: 18\r\nConnection: close\r\n", "Content Too Large\n"), true, http1.ErrBodyTooLarge},
	{"framing mismatch", "GET / HTTP/1.1\r\nHost: h\r\n\r\nGET",
		resp("400 Bad Request", "Content-Type: text/plain; charset=utf-8\r\nContent-Length: 12\r\nConnection: close\r\n", "Bad Request\n"), true, http1.ErrFramingMismatch},
}

// TestRespond pins every route and error response byte for byte through
// the transport-free core.
func TestRespond(t *testing.T) {
	h := NewHandler(Codec{http1.ServerCodec{Clock: fixedClock}})
	for i, tc := range respondCases {
		out, closeAfter, cause := h.Respond(nil, []byte(tc.in), t0)
		if string(out) != tc.want {
			t.Errorf("%d %s: response\n%q\nwant\n%q", i, tc.name, out, tc.want)
		}
		if closeAfter != tc.close {
			t.Errorf("%d %s: closeAfter %v, want %v", i, tc.name, closeAfter, tc.close)
		}
		if !errors.Is(cause, tc.err) || (cause == nil) != (tc.err == nil) {
			t.Errorf("%d %s: cause %v, want %v", i, tc.name, cause, tc.err)
		}
		if cause != nil && !errors.Is(cause, protocol.ErrMalformed) && !errors.Is(cause, protocol.ErrFrameTooLarge) {
			t.Errorf("%d %s: cause %v is neither malformed nor too large", i, tc.name, cause)
		}
	}
}

// TestRespondAppends checks that Respond appends to dst and keeps what was
// there.
func TestRespondAppends(t *testing.T) {
	h := NewHandler(Codec{})
	out, _, _ := h.Respond([]byte("prefix"), []byte(wrkRequest), t0)
	if !strings.HasPrefix(string(out), "prefixHTTP/1.1 200 OK\r\n") || !strings.HasSuffix(string(out), Body) {
		t.Errorf("got %q", out)
	}
}

// TestInsertAfterStatusLine covers the splice used for Allow.
func TestInsertAfterStatusLine(t *testing.T) {
	cases := []struct{ in, want string }{
		{"xxHTTP/1.1 405 M\r\nA: b\r\n\r\n", "xxHTTP/1.1 405 M\r\nF: v\r\nA: b\r\n\r\n"},
		{"xxno line end", "xxno line end"},
		{"xx\r\n", "xx\r\nF: v\r\n"},
	}
	for i, tc := range cases {
		got := http1.InsertField([]byte(tc.in), 2, "F: v\r\n")
		if string(got) != tc.want {
			t.Errorf("%d: %q, want %q", i, got, tc.want)
		}
	}
}

// TestRespondZeroAllocs: the steady path (GET /, POST /echo, 404) does not
// allocate.
func TestRespondZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's bookkeeping allocates")
	}
	h := NewHandler(Codec{})
	dst := make([]byte, 0, 4096)
	for _, in := range []string{wrkRequest, "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello", "GET /x HTTP/1.1\r\nHost: h\r\n\r\n", "PUT / HTTP/1.1\r\nHost: h\r\n\r\n"} {
		frame := []byte(in)
		if a := testing.AllocsPerRun(1000, func() { dst, _, _ = h.Respond(dst[:0], frame, t0) }); a != 0 {
			t.Errorf("%q: %.1f allocations per request, want 0", in, a)
		}
	}
}

// TestHelloCache: the cached response to a keep-alive GET / is the one
// AppendResponse writes, with the Date of each second.
func TestHelloCache(t *testing.T) {
	h := NewHandler(Codec{})
	var req http1.Request
	if err := http1.Parse([]byte(wrkRequest), &req); err != nil {
		t.Fatal(err)
	}
	for i, now := range []time.Time{t0, t0.Add(300 * time.Millisecond), t0.Add(time.Second), t0.Add(-time.Hour), t0} {
		got, _, _ := h.Respond(nil, []byte(wrkRequest), now)
		want := req.AppendResponse(nil, 200, HelloContentType, helloBody, []byte(now.UTC().Format(http1.TimeFormat)))
		if string(got) != string(want) {
			t.Errorf("%d: %q\nwant %q", i, got, want)
		}
	}
}

// BenchmarkServe: Codec.Decode and Respond for 16 pipelined wrk requests,
// the handler's whole share of a pipelined request; ns/op is per request.
// "fast" is the handler's codec, whose Decode leaves its parse for
// Respond (one parse per request); "strict" frames with http1's strict
// Decode, which leaves nothing, so Respond parses every request again.
func BenchmarkServe(b *testing.B) {
	in := []byte(strings.Repeat(wrkRequest, 16))
	h := NewHandler(Codec{})
	strict := Codec{}.Server().Codec
	for _, bc := range []struct {
		name   string
		decode func([]byte) ([]byte, int, error)
	}{{"fast", h.Codec().Decode}, {"strict", strict.Decode}} {
		b.Run(bc.name, func(b *testing.B) {
			out := make([]byte, 0, 64<<10)
			now := time.Now()
			b.ReportAllocs()
			for i := 0; i < b.N; i += 16 {
				out = out[:0]
				for rest := in; len(rest) > 0; {
					frame, n, _ := bc.decode(rest)
					out, _, _ = h.Respond(out, frame, now)
					rest = rest[n:]
				}
			}
		})
	}
}
