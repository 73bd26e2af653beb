package http1_test

import (
	"bytes"

	"github.com/sluicenet/sluice/internal/fuzzseed"
)

// seedCorpus lists the committed seeds under testdata/fuzz, per target;
// TestSeedCorpus keeps files and table in step.
var seedCorpus = fuzzseed.Corpus{
	"FuzzHTTPDecode": {
		{"wrk", []any{[]byte("GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"), uint16(0)}},
		{"techempower", []any{[]byte(wrkPlaintext), uint16(0)}},
		{"pipeline", []any{[]byte("GET / HTTP/1.1\r\nHost: h\r\n\r\nPOST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 12\r\n\r\nhello\r\nworldHEAD /x?y=1 HTTP/1.1\r\nHost: h\r\n\r\n\r\nGET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"), uint16(0)}},
		{"pipeline-small-limits", []any{[]byte("GET / HTTP/1.1\r\nHost: h\r\n\r\nPOST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"), uint16(0x2150)}},
		{"absolute", []any{[]byte("GET http://www.example.org/pub/WWW/TheProject.html HTTP/1.1\r\nHost: www.example.org\r\n\r\n"), uint16(0)}},
		{"connect", []any{[]byte("CONNECT www.example.com:80 HTTP/1.1\r\nHost: www.example.com\r\n\r\n"), uint16(0)}},
		{"options", []any{[]byte("OPTIONS * HTTP/1.1\r\nHost: www.example.org:8001\r\n\r\n"), uint16(0)}},
		{"chunked", []any{[]byte("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"), uint16(0)}},
		{"te-and-cl", []any{[]byte("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\nabc"), uint16(0)}},
		{"expect", []any{[]byte("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n"), uint16(0)}},
		{"obs-fold", []any{[]byte("GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n"), uint16(0)}},
		{"cl-list", []any{[]byte("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 3\r\ncontent-length: 3\r\n\r\nabc"), uint16(0)}},
		{"cl-differ", []any{[]byte("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd"), uint16(0)}},
		{"http10", []any{[]byte("GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n"), uint16(0)}},
		{"http2-preface", []any{[]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), uint16(0)}},
		{"tls", []any{[]byte("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"), uint16(0)}},
		{"too-many-fields", []any{[]byte("GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n"), uint16(0x0140)}},
		{"head-too-long", []any{[]byte("GET /aaaaaaaaaaaaaaaaaaaaaaaa HTTP/1.1\r\nHost: h\r\n\r\n"), uint16(0x0710)}},
		{"body-too-large", []any{[]byte("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999\r\n\r\n"), uint16(0)}},
		{"value-chars", []any{[]byte("GET / HTTP/1.1\r\nHost: \t h \t\r\nX: caf\xc3\xa9\x01\r\n\r\n"), uint16(0)}},
		{"leading-crlf", []any{[]byte("\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n"), uint16(0)}},
	},
	"FuzzHTTPParse": {
		{"get", []any{[]byte("GET /a?b HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")}},
		{"head10", []any{[]byte("HEAD / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")}},
		{"post", []any{[]byte("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello")}},
		{"trailing", []any{[]byte("GET / HTTP/1.1\r\nHost: h\r\n\r\nGET / HTTP/1.1\r\n")}},
		{"incomplete", []any{[]byte("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhel")}},
		{"absolute", []any{[]byte("GET https://h.example?x HTTP/1.1\r\nHost: h.example\r\n\r\n")}},
		{"bad-host", []any{[]byte("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")}},
		{"max-fields", []any{append(append([]byte("GET / HTTP/1.1\r\nHost: h\r\n"), bytes.Repeat([]byte("A: 1\r\n"), 63)...), "\r\n"...)}},
		{"too-many-fields", []any{append(append([]byte("GET / HTTP/1.1\r\nHost: h\r\n"), bytes.Repeat([]byte("A: 1\r\n"), 64)...), "\r\n"...)}},
	},
}

// wrkPlaintext is the request of the TechEmpower plaintext test as wrk
// sends it.
const wrkPlaintext = "GET /plaintext HTTP/1.1\r\nHost: server\r\nAccept: text/plain,text/html;q=0.9,application/xhtml+xml;q=0.9,application/xml;q=0.8,*/*;q=0.7\r\nConnection: keep-alive\r\n\r\n"
