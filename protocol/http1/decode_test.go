package http1_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicenet/sluice/protocol"
	"github.com/sluicenet/sluice/protocol/http1"
)

var _ protocol.Codec = http1.Codec{}

// want is what a valid request parses to; zero fields are not checked
// except where noted.
type want struct {
	method, target, path, query string
	minor                       int
	keepAlive                   bool
	host                        string
	body                        string
	headers                     int // exact NumHeaders
}

var validCases = []struct {
	name string
	in   string
	want want
}{
	// RFC 9112 section 3.2.1 (origin-form).
	{"origin form", "GET /where?q=now HTTP/1.1\r\nHost: www.example.org\r\n\r\n",
		want{"GET", "/where?q=now", "/where", "q=now", 1, true, "www.example.org", "", 1}},
	// RFC 9112 section 3.2.2 (absolute-form).
	{"absolute form", "GET http://www.example.org/pub/WWW/TheProject.html HTTP/1.1\r\nHost: www.example.org\r\n\r\n",
		want{"GET", "http://www.example.org/pub/WWW/TheProject.html", "/pub/WWW/TheProject.html", "", 1, true, "www.example.org", "", 1}},
	{"absolute form without path", "GET https://h.example?x HTTP/1.1\r\nHost: h.example\r\n\r\n",
		want{"GET", "https://h.example?x", "/", "x", 1, true, "h.example", "", 1}},
	// RFC 9112 section 3.2.3 (authority-form).
	{"authority form", "CONNECT www.example.com:80 HTTP/1.1\r\nHost: www.example.com\r\n\r\n",
		want{"CONNECT", "www.example.com:80", "www.example.com:80", "", 1, true, "www.example.com", "", 1}},
	// RFC 9112 section 3.2.4 (asterisk-form).
	{"asterisk form", "OPTIONS * HTTP/1.1\r\nHost: www.example.org:8001\r\n\r\n",
		want{"OPTIONS", "*", "*", "", 1, true, "www.example.org:8001", "", 1}},
	// RFC 9110 section 6.2 / RFC 9112 section 1 example request.
	{"curl example", "GET /hello.txt HTTP/1.1\r\nUser-Agent: curl/7.64.1\r\nHost: www.example.com\r\nAccept-Language: en, mi\r\n\r\n",
		want{"GET", "/hello.txt", "/hello.txt", "", 1, true, "www.example.com", "", 3}},
	{"wrk", "GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n",
		want{"GET", "/", "/", "", 1, true, "127.0.0.1:8080", "", 1}},
	{"post body", "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello",
		want{"POST", "/echo", "/echo", "", 1, true, "h", "hello", 2}},
	{"body with crlf", "PUT /x HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\n\r\n\r\n",
		want{"PUT", "/x", "/x", "", 1, true, "h", "\r\n\r\n", 2}},
	{"zero content length", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n",
		want{"POST", "/", "/", "", 1, true, "h", "", 2}},
	{"equal content lengths", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\ncontent-length: 3\r\n\r\nabc",
		want{"POST", "/", "/", "", 1, true, "h", "abc", 3}},
	{"content length list", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3 , 3\r\n\r\nabc",
		want{"POST", "/", "/", "", 1, true, "h", "abc", 2}},
	{"content length leading zeros", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 003\r\n\r\nabc",
		want{"POST", "/", "/", "", 1, true, "h", "abc", 2}},
	{"http/1.0 closes", "GET / HTTP/1.0\r\n\r\n",
		want{"GET", "/", "/", "", 0, false, "", "", 0}},
	{"http/1.0 keep-alive", "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n",
		want{"GET", "/", "/", "", 0, true, "", "", 1}},
	{"http/1.0 keep-alive and close", "GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n",
		want{"GET", "/", "/", "", 0, false, "", "", 1}},
	{"http/1.1 close", "GET / HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, CLOSE\r\n\r\n",
		want{"GET", "/", "/", "", 1, false, "h", "", 2}},
	{"http/1.1 close in second field", "GET / HTTP/1.1\r\nConnection: foo\r\nHost: h\r\nconnection:close\r\n\r\n",
		want{"GET", "/", "/", "", 1, false, "h", "", 3}},
	{"http/1.2 is 1.1", "GET / HTTP/1.2\r\nHost: h\r\n\r\n",
		want{"GET", "/", "/", "", 2, true, "h", "", 1}},
	{"leading empty lines", "\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n",
		want{"GET", "/", "/", "", 1, true, "h", "", 1}},
	{"white space around value", "GET / HTTP/1.1\r\nHost: \t h \t \r\nX-Empty:\r\nX-Sp:   \r\n\r\n",
		want{"GET", "/", "/", "", 1, true, "h", "", 3}},
	{"obs-text value", "GET / HTTP/1.1\r\nHost: h\r\nX-Name: caf\xc3\xa9\r\n\r\n",
		want{"GET", "/", "/", "", 1, true, "h", "", 2}},
	{"token method", "M-SEARCH /~a!$&'()*+,;=:@ HTTP/1.1\r\nHost: h\r\n\r\n",
		want{"M-SEARCH", "/~a!$&'()*+,;=:@", "/~a!$&'()*+,;=:@", "", 1, true, "h", "", 1}},
	{"empty host is allowed", "GET / HTTP/1.1\r\nHost:\r\n\r\n",
		want{"GET", "/", "/", "", 1, true, "", "", 1}},
}

func check(t *testing.T, i int, name string, req *http1.Request, w want) {
	t.Helper()
	got := want{string(req.Method), string(req.Target), string(req.Path), string(req.Query),
		req.ProtoMinor, req.KeepAlive, string(req.Host), string(req.Body), req.NumHeaders}
	if got != w {
		t.Errorf("%d %s: parsed %+v\nwant %+v", i, name, got, w)
	}
	if req.ContentLength != int64(len(req.Body)) {
		t.Errorf("%d %s: ContentLength %d, body %d bytes", i, name, req.ContentLength, len(req.Body))
	}
}

func TestDecodeParseValid(t *testing.T) {
	var c http1.Codec
	var req http1.Request
	for i, tc := range validCases {
		buf := []byte(tc.in + "GET / HTTP/1.0\r\n\r\n") // a pipelined second request
		frame, n, err := c.Decode(buf)
		if err != nil || n != len(tc.in) || string(frame) != tc.in || cap(frame) != n {
			t.Fatalf("%d %s: Decode = %q, %d, %v; want the first request", i, tc.name, frame, n, err)
		}
		if err := http1.Parse(frame, &req); err != nil {
			t.Fatalf("%d %s: Parse: %v", i, tc.name, err)
		}
		check(t, i, tc.name, &req, tc.want)
		var one http1.Request
		if n, err := c.DecodeRequest(buf, &one); err != nil || n != len(tc.in) {
			t.Fatalf("%d %s: DecodeRequest = %d, %v", i, tc.name, n, err)
		}
		check(t, i, tc.name+" (DecodeRequest)", &one, tc.want)
		for j := req.NumHeaders; j < http1.MaxHeaders; j++ {
			if req.Headers[j].Name != nil || req.Headers[j].Value != nil {
				t.Errorf("%d %s: stale header slot %d", i, tc.name, j)
			}
		}
		for k := 0; k < len(tc.in); k++ {
			if f, m, err := c.Decode([]byte(tc.in[:k])); m != 0 || err != nil || f != nil {
				t.Fatalf("%d %s: Decode(prefix %d) = %q, %d, %v; want more input", i, tc.name, k, f, m, err)
			}
		}
	}
}

func TestHeaderAccess(t *testing.T) {
	frame := []byte("GET / HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nx-a: 2\r\nAccept: */*\r\n\r\n")
	var req http1.Request
	if err := http1.Parse(frame, &req); err != nil {
		t.Fatal(err)
	}
	if v := req.Header("x-A"); string(v) != "1" {
		t.Errorf("Header(x-A) = %q; want the first", v)
	}
	if v := req.Header("accept"); string(v) != "*/*" {
		t.Errorf("Header(accept) = %q", v)
	}
	if v := req.Header("missing"); v != nil {
		t.Errorf("Header(missing) = %q", v)
	}
	fields := req.Fields()
	if len(fields) != 4 || string(fields[2].Name) != "x-a" || string(fields[2].Value) != "2" {
		t.Errorf("Fields = %q", fields)
	}
	if !req.MethodIs("GET") || req.MethodIs("get") {
		t.Error("MethodIs is not an exact comparison")
	}
	if !http1.EqualFold([]byte("Content-Length"), "content-length") || http1.EqualFold([]byte("a"), "b") {
		t.Error("EqualFold")
	}
	// A shorter request clears the slots of the longer one before it.
	if err := http1.Parse([]byte("GET / HTTP/1.0\r\n\r\n"), &req); err != nil {
		t.Fatal(err)
	}
	if req.NumHeaders != 0 || req.Headers[0].Name != nil || req.Host != nil {
		t.Errorf("stale fields after a shorter request: %d %q %q", req.NumHeaders, req.Headers[0].Name, req.Host)
	}
	req.Reset()
	if req.Method != nil || req.NumHeaders != 0 {
		t.Error("Reset left fields")
	}
	if err := http1.Parse(frame, nil); err == nil {
		t.Error("Parse with a nil Request succeeded")
	}
	if _, err := (http1.Codec{}).DecodeRequest(frame, nil); err == nil {
		t.Error("DecodeRequest with a nil Request succeeded")
	}
}

var errorCases = []struct {
	name   string
	codec  http1.Codec
	in     string
	want   error
	status int
}{
	{"double space", http1.Codec{}, "GET  / HTTP/1.1\r\n", http1.ErrBadRequestLine, 400},
	{"tab in target", http1.Codec{}, "GET /\tx HTTP/1.1\r\n", http1.ErrBadRequestLine, 400},
	{"lower-case version", http1.Codec{}, "GET / http/1.1\r\n", http1.ErrBadRequestLine, 400},
	{"two-digit minor", http1.Codec{}, "GET / HTTP/1.10\r\n", http1.ErrBadRequestLine, 400},
	{"space after version", http1.Codec{}, "GET / HTTP/1.1 \r\n", http1.ErrBadRequestLine, 400},
	{"bare lf after request line", http1.Codec{}, "GET / HTTP/1.1\nHost: h\n\n", http1.ErrBadRequestLine, 400},
	{"bare cr before request line", http1.Codec{}, "\rGET / HTTP/1.1\r\n", http1.ErrBadRequestLine, 400},
	{"missing target", http1.Codec{}, "GET HTTP/1.1\r\n", http1.ErrBadRequestLine, 400},
	{"relative target", http1.Codec{}, "GET foo HTTP/1.1\r\nHost: h\r\n\r\n", http1.ErrBadRequestLine, 400},
	{"asterisk with GET", http1.Codec{}, "GET * HTTP/1.1\r\nHost: h\r\n\r\n", http1.ErrBadRequestLine, 400},
	{"non-ascii target", http1.Codec{}, "GET /caf\xc3\xa9 HTTP/1.1\r\n", http1.ErrBadRequestLine, 400},
	{"tls client hello", http1.Codec{}, "\x16\x03\x01\x02\x00\x01", http1.ErrBadRequestLine, 400},
	{"http/2 preface", http1.Codec{}, "PRI * HTTP/2.0\r\n", http1.ErrVersion, 505},
	{"http/0.9", http1.Codec{}, "GET / HTTP/0.9\r\n", http1.ErrVersion, 505},
	{"space before colon", http1.Codec{}, "GET / HTTP/1.1\r\nHost : h\r\n\r\n", http1.ErrBadHeader, 400},
	{"empty name", http1.Codec{}, "GET / HTTP/1.1\r\n: h\r\n\r\n", http1.ErrBadHeader, 400},
	{"no colon", http1.Codec{}, "GET / HTTP/1.1\r\nHost\r\n\r\n", http1.ErrBadHeader, 400},
	{"nul in value", http1.Codec{}, "GET / HTTP/1.1\r\nHost: a\x00b\r\n\r\n", http1.ErrBadHeader, 400},
	{"bare cr in value", http1.Codec{}, "GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", http1.ErrBadHeader, 400},
	{"bare lf after header", http1.Codec{}, "GET / HTTP/1.1\r\nHost: a\n\r\n", http1.ErrBadHeader, 400},
	{"del in value", http1.Codec{}, "GET / HTTP/1.1\r\nX: \x7f\r\n", http1.ErrBadHeader, 400},
	{"bad end of head", http1.Codec{}, "GET / HTTP/1.1\r\nHost: h\r\n\rX", http1.ErrBadHeader, 400},
	{"obs-fold", http1.Codec{}, "GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n", http1.ErrObsFold, 400},
	{"space before first field", http1.Codec{}, "GET / HTTP/1.1\r\n Host: h\r\n\r\n", http1.ErrObsFold, 400},
	{"content length letters", http1.Codec{}, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: abc\r\n\r\n", http1.ErrBadContentLength, 400},
	{"content length negative", http1.Codec{}, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", http1.ErrBadContentLength, 400},
	{"content length empty", http1.Codec{}, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length:\r\n\r\n", http1.ErrBadContentLength, 400},
	{"content length plus", http1.Codec{}, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +1\r\n\r\n", http1.ErrBadContentLength, 400},
	{"content length empty element", http1.Codec{}, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1,,1\r\n\r\n", http1.ErrBadContentLength, 400},
	{"content length list differs", http1.Codec{}, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5, 6\r\n\r\n", http1.ErrBadContentLength, 400},
	{"content lengths differ", http1.Codec{}, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", http1.ErrBadContentLength, 400},
	{"missing host", http1.Codec{}, "GET / HTTP/1.1\r\nX: y\r\n\r\n", http1.ErrBadHost, 400},
	{"two hosts", http1.Codec{}, "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", http1.ErrBadHost, 400},
	{"two hosts in 1.0", http1.Codec{}, "GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", http1.ErrBadHost, 400},
	{"chunked", http1.Codec{}, "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n", http1.ErrChunked, 411},
	{"gzip then chunked", http1.Codec{}, "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n", http1.ErrChunked, 411},
	{"chunked not last", http1.Codec{}, "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", http1.ErrBadTransferEncoding, 400},
	{"chunked with content length", http1.Codec{}, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", http1.ErrBadTransferEncoding, 400},
	{"transfer encoding in 1.0", http1.Codec{}, "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", http1.ErrBadTransferEncoding, 400},
	{"expect 100-continue", http1.Codec{}, "PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n", http1.ErrExpectation, 417},
	{"expect other", http1.Codec{}, "GET / HTTP/1.1\r\nHost: h\r\nExpect: x\r\n\r\n", http1.ErrExpectation, 417},

	{"request line too long", http1.Codec{MaxHeaderBytes: 32}, "GET /" + strings.Repeat("a", 40), http1.ErrURITooLong, 414},
	{"request line ends past limit", http1.Codec{MaxHeaderBytes: 16}, "GET /abcdefgh HTTP/1.1\r\n", http1.ErrURITooLong, 414},
	{"head too long", http1.Codec{MaxHeaderBytes: 40}, "GET / HTTP/1.1\r\nHost: h\r\nX: " + strings.Repeat("a", 40), http1.ErrHeaderTooLarge, 431},
	{"head too long by the final crlf", http1.Codec{MaxHeaderBytes: 26}, "GET / HTTP/1.1\r\nHost: h\r\n\r\n", http1.ErrHeaderTooLarge, 431},
	{"too many fields", http1.Codec{MaxHeaderCount: 2}, "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\n", http1.ErrTooManyHeaders, 431},
	{"too many fields by default", http1.Codec{}, "GET / HTTP/1.1\r\n" + strings.Repeat("A: 1\r\n", http1.MaxHeaders+1), http1.ErrTooManyHeaders, 431},
	{"body too large before it arrives", http1.Codec{MaxBodyBytes: 4}, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n", http1.ErrBodyTooLarge, 413},
	{"body above default", http1.Codec{}, fmt.Sprintf("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: %d\r\n\r\n", http1.DefaultMaxBodyBytes+1), http1.ErrBodyTooLarge, 413},
	{"content length overflows", http1.Codec{}, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999\r\n\r\n", http1.ErrBodyTooLarge, 413},
	{"negative limit", http1.Codec{MaxBodyBytes: -1}, "GET / HTTP/1.1\r\nHost: h\r\n\r\n", protocol.ErrInvalidConfig, 500},
	{"header count above array", http1.Codec{MaxHeaderCount: http1.MaxHeaders + 1}, "GET / HTTP/1.1\r\n", protocol.ErrInvalidConfig, 500},
}

func TestDecodeErrors(t *testing.T) {
	for i, tc := range errorCases {
		frame, n, err := tc.codec.Decode([]byte(tc.in))
		if err == nil || n != 0 || frame != nil {
			t.Fatalf("%d %s: Decode(%q) = %q, %d, %v; want an error", i, tc.name, tc.in, frame, n, err)
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("%d %s: err = %v; want %v", i, tc.name, err, tc.want)
		}
		if got := http1.StatusFor(err); got != tc.status {
			t.Errorf("%d %s: StatusFor = %d; want %d", i, tc.name, got, tc.status)
		}
		if !strings.HasPrefix(err.Error(), "sluice: ") {
			t.Errorf("%d %s: message %q lacks the sluice: prefix", i, tc.name, err)
		}
		var req http1.Request
		if n, err2 := tc.codec.DecodeRequest([]byte(tc.in), &req); n != 0 || err2 != err {
			t.Errorf("%d %s: DecodeRequest = %d, %v; want %v", i, tc.name, n, err2, err)
		}
		var e *http1.Error
		if errors.As(err, &e) {
			kind := protocol.ErrMalformed
			if e.Status() == 413 || e.Status() == 414 || e.Status() == 431 {
				kind = protocol.ErrFrameTooLarge
			}
			if !errors.Is(err, kind) {
				t.Errorf("%d %s: %v does not wrap %v", i, tc.name, err, kind)
			}
		}
	}
}

func TestLimitsAtTheBoundary(t *testing.T) {
	head := "GET / HTTP/1.1\r\nHost: h\r\n\r\n" // 27 bytes
	if _, n, err := (http1.Codec{MaxHeaderBytes: 27}).Decode([]byte(head)); n != 27 || err != nil {
		t.Errorf("MaxHeaderBytes 27: %d, %v", n, err)
	}
	if _, n, err := (http1.Codec{MaxHeaderBytes: 27}).Decode([]byte(head[:26])); n != 0 || err != nil {
		t.Errorf("MaxHeaderBytes 27, 26 bytes: %d, %v; want more input", n, err)
	}
	if _, n, err := (http1.Codec{MaxHeaderCount: 1}).Decode([]byte(head)); n != 27 || err != nil {
		t.Errorf("MaxHeaderCount 1: %d, %v", n, err)
	}
	post := "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\nabcd"
	if _, n, err := (http1.Codec{MaxBodyBytes: 4}).Decode([]byte(post)); n != len(post) || err != nil {
		t.Errorf("MaxBodyBytes 4: %d, %v", n, err)
	}
	full := "GET / HTTP/1.1\r\n" + strings.Repeat("A: 1\r\n", http1.MaxHeaders-1) + "Host: h\r\n\r\n"
	var req http1.Request
	if _, n, err := (http1.Codec{}).Decode([]byte(full)); n != len(full) || err != nil {
		t.Errorf("MaxHeaders fields: %d, %v", n, err)
	} else if err := http1.Parse([]byte(full), &req); err != nil || req.NumHeaders != http1.MaxHeaders {
		t.Errorf("Parse of MaxHeaders fields: %d, %v", req.NumHeaders, err)
	}
}

func TestParseFrameBounds(t *testing.T) {
	cases := []struct {
		in   string
		want error
	}{
		{"", http1.ErrIncompleteRequest},
		{"GET / HTTP/1.1\r\nHost: h\r\n", http1.ErrIncompleteRequest},
		{"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nab", http1.ErrIncompleteRequest},
		{"GET / HTTP/1.1\r\nHost: h\r\n\r\nX", http1.ErrTrailingBytes},
		{"GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n", http1.ErrChunked},
	}
	var req http1.Request
	for i, tc := range cases {
		if err := http1.Parse([]byte(tc.in), &req); !errors.Is(err, tc.want) {
			t.Errorf("%d: Parse(%q) = %v; want %v", i, tc.in, err, tc.want)
		}
	}
	// Parse applies no head or body limits of its own.
	big := "POST /" + strings.Repeat("a", 20<<10) + " HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"
	if err := http1.Parse([]byte(big), &req); err != nil || string(req.Body) != "abc" {
		t.Errorf("long request line: %v", err)
	}
}

func TestStatusFor(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{nil, 200},
		{http1.ErrChunked, 411},
		{fmt.Errorf("conn 3: %w", http1.ErrExpectation), 417},
		{protocol.ErrFrameTooLarge, 413},
		{protocol.ErrMalformed, 400},
		{errors.New("x"), 500},
	}
	for i, tc := range cases {
		if got := http1.StatusFor(tc.err); got != tc.want {
			t.Errorf("%d: StatusFor(%v) = %d; want %d", i, tc.err, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	if err := (http1.Codec{}).Validate(); err != nil {
		t.Errorf("zero Codec: %v", err)
	}
	bad := []http1.Codec{{MaxHeaderBytes: -1}, {MaxHeaderCount: -1}, {MaxBodyBytes: -1}, {MaxHeaderCount: http1.MaxHeaders + 1}}
	for i, c := range bad {
		if err := c.Validate(); !errors.Is(err, protocol.ErrInvalidConfig) {
			t.Errorf("%d: Validate = %v", i, err)
		}
	}
}

// pipeline is a stream of requests with what each parses to.
var pipeline = []struct {
	wire string
	want want
}{
	{"GET / HTTP/1.1\r\nHost: h\r\n\r\n", want{"GET", "/", "/", "", 1, true, "h", "", 1}},
	{"POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 12\r\n\r\nhello\r\nworld",
		want{"POST", "/echo", "/echo", "", 1, true, "h", "hello\r\nworld", 2}},
	{"HEAD /x?y=1 HTTP/1.1\r\nHost: h\r\nAccept: */*\r\n\r\n", want{"HEAD", "/x?y=1", "/x", "y=1", 1, true, "h", "", 2}},
	{"\r\nGET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", want{"GET", "/a", "/a", "", 0, true, "", "", 1}},
	{"PUT /p HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n", want{"PUT", "/p", "/p", "", 1, true, "h", "", 2}},
	{"GET /last HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", want{"GET", "/last", "/last", "", 1, false, "h", "", 2}},
}

func drain(t *testing.T, c http1.Codec, in *[]byte, got *[]want) {
	t.Helper()
	var req, one http1.Request
	for {
		frame, n, err := c.Decode(*in)
		if err != nil {
			t.Fatalf("Decode(%q): %v", *in, err)
		}
		if n == 0 {
			return
		}
		if err := http1.Parse(frame, &req); err != nil {
			t.Fatalf("Parse(%q): %v", frame, err)
		}
		if m, err := c.DecodeRequest(*in, &one); m != n || err != nil || one.KeepAlive != req.KeepAlive || !bytes.Equal(one.Body, req.Body) {
			t.Fatalf("DecodeRequest(%q) = %d, %v; Decode gave %d", *in, m, err, n)
		}
		*got = append(*got, want{string(req.Method), string(req.Target), string(req.Path), string(req.Query),
			req.ProtoMinor, req.KeepAlive, string(req.Host), string(req.Body), req.NumHeaders})
		*in = (*in)[n:]
	}
}

func checkPipeline(t *testing.T, got []want, rest []byte, label string) {
	t.Helper()
	if len(rest) != 0 {
		t.Fatalf("%s: %q left over", label, rest)
	}
	if len(got) != len(pipeline) {
		t.Fatalf("%s: %d requests; want %d", label, len(got), len(pipeline))
	}
	for i := range got {
		if got[i] != pipeline[i].want {
			t.Fatalf("%s: request %d = %+v; want %+v", label, i, got[i], pipeline[i].want)
		}
	}
}

// TestPipelineSplitEverywhere feeds pipelined requests in two reads split
// at every byte boundary, and then one byte per read.
func TestPipelineSplitEverywhere(t *testing.T) {
	var wire []byte
	for _, p := range pipeline {
		wire = append(wire, p.wire...)
	}
	var c http1.Codec
	for split := 0; split <= len(wire); split++ {
		var got []want
		in := append([]byte(nil), wire[:split]...)
		drain(t, c, &in, &got)
		in = append(in, wire[split:]...)
		drain(t, c, &in, &got)
		checkPipeline(t, got, in, fmt.Sprintf("split at %d", split))
	}
	var got []want
	var in []byte
	for i := range wire {
		in = append(in, wire[i])
		drain(t, c, &in, &got)
	}
	checkPipeline(t, got, in, "byte by byte")
}
