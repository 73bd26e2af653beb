package http1_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/sluicenet/sluice/protocol/http1"
)

// A server loop over two pipelined requests: Decode frames, Parse fills a
// reused Request, responses go into one buffer with a cached Date.
func ExampleCodec_Decode() {
	in := []byte("GET / HTTP/1.1\r\nHost: h\r\n\r\n" +
		"POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nConnection: close\r\n\r\nping")
	var (
		codec http1.Codec
		req   http1.Request
		dates http1.DateCache
		out   []byte
	)
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC) // read once per loop turn
	for {
		frame, n, err := codec.Decode(in)
		if err != nil {
			out = http1.AppendDecodeError(out, err, dates.Value(now)) // then close
			break
		}
		if n == 0 {
			break
		}
		in = in[n:]
		if err := http1.Parse(frame, &req); err != nil {
			break
		}
		body := []byte("Hello, World!")
		if string(req.Path) == "/echo" {
			body = req.Body
		}
		out = req.AppendResponse(out, 200, "text/plain", body, dates.Value(now))
		if !req.KeepAlive {
			break // close after flushing out
		}
	}
	fmt.Print(strings.ReplaceAll(string(out), "\r\n", "\n"))
	// Output:
	// HTTP/1.1 200 OK
	// Server: sluice
	// Date: Sun, 22 Nov 2026 10:00:00 GMT
	// Content-Type: text/plain
	// Content-Length: 13
	//
	// Hello, World!HTTP/1.1 200 OK
	// Server: sluice
	// Date: Sun, 22 Nov 2026 10:00:00 GMT
	// Content-Type: text/plain
	// Content-Length: 4
	// Connection: close
	//
	// ping
}

func ExampleAppendRetryAfter() {
	out := http1.AppendRetryAfter(nil, 429, 1200*time.Millisecond, true, nil)
	fmt.Printf("%q\n", out)
	// Output: "HTTP/1.1 429 Too Many Requests\r\nServer: sluice\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 18\r\nRetry-After: 2\r\n\r\nToo Many Requests\n"
}
