package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
)

// appendEchoResponse appends the response an echo server gives to the
// request appendRequest builds: a bulk string for RESP, a 200 with the body
// for HTTP.
func appendEchoResponse(dst []byte, c Codec, seq uint64, size int, filler []byte) []byte {
	switch c {
	case CodecRESP:
		return appendRESPBulk(dst, c, seq, size, filler)
	case CodecHTTP:
		dst = append(dst, "HTTP/1.1 200 OK\r\nDate: Wed, 25 Nov 2026 09:00:00 GMT\r\ncontent-length: "...)
		dst = strconv.AppendInt(dst, int64(size), 10)
		dst = append(dst, "\r\n\r\n"...)
		return appendPayload(dst, c, seq, size, filler)
	}
	return appendRequest(dst, c, seq, size, filler)
}

func TestRESPAndHTTPResponsesInEverySplit(t *testing.T) {
	for _, c := range []Codec{CodecRESP, CodecHTTP} {
		for _, size := range []int{1, 7, 8, 9, 64, 4096} {
			filler := newFiller(size)
			if got := len(appendRequest(nil, c, 1, size, filler)); got != c.WireBytes(size) {
				t.Fatalf("%v/%d: request of %d bytes, WireBytes %d", c, size, got, c.WireBytes(size))
			}
			var stream []byte
			for seq := uint64(0); seq < 5; seq++ {
				stream = appendEchoResponse(stream, c, seq+7, size, filler)
			}
			for split := 0; split <= len(stream); split += max(1, len(stream)/41) {
				seq := uint64(7)
				left := decodeSplit(t, c, stream, split, func(payload []byte) {
					if k, err := responseReject(c, payload); k != -1 || err != nil {
						t.Fatalf("%v/%d: echo classified as reject %d, %v", c, size, k, err)
					}
					if err := checkResponse(c, payload, seq, size, filler); err != nil {
						t.Fatalf("%v/%d split %d seq %d: %v", c, size, split, seq, err)
					}
					seq++
				})
				if seq != 12 || left != 0 {
					t.Fatalf("%v/%d split %d: matched up to %d with %d bytes left", c, size, split, seq, left)
				}
			}
		}
	}
}

func TestRESPAndHTTPRejectsAndErrors(t *testing.T) {
	for i, tc := range []struct {
		c      Codec
		in     string
		reason string // "" = an echo; "error" = fails the connection
	}{
		{CodecRESP, "-ERR sluice: too many requests (tenant), retry in 120 ms\r\n", "tenant"},
		{CodecRESP, "-BUSY sluice: server overloaded (codel), retry in 100 ms\r\n", "codel"},
		{CodecRESP, "-BUSY Redis is busy running a script\r\n", "other"},
		{CodecRESP, "-REJECT queue 5\r\n", "queue"},
		{CodecRESP, "-ERR unknown command 'ECHO'\r\n", "error"},
		{CodecRESP, "$3\r\nabc\r\n", ""},
		{CodecHTTP, "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 17\r\n\r\nToo Many Requests", "tenant"},
		{CodecHTTP, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n", "other"},
		{CodecHTTP, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", "error"},
		{CodecHTTP, "HTTP/1.0 204 No Content\r\n\r\n", ""},
	} {
		payload, n, err := nextResponse(tc.c, []byte(tc.in))
		if err != nil || n != len(tc.in) {
			t.Fatalf("%d: n %d of %d, %v", i, n, len(tc.in), err)
		}
		k, err := responseReject(tc.c, payload)
		switch {
		case tc.reason == "error":
			if !errors.Is(err, ErrMismatch) {
				t.Errorf("%d: %q gave %d, %v; want ErrMismatch", i, payload, k, err)
			}
		case tc.reason == "":
			if k != -1 || err != nil {
				t.Errorf("%d: echo gave %d, %v", i, k, err)
			}
		case err != nil || k != reasonIndex([]byte(tc.reason)):
			t.Errorf("%d: %q gave %d, %v; want %s", i, payload, k, err, tc.reason)
		}
	}
	for i, tc := range []struct {
		c  Codec
		in string
	}{
		{CodecRESP, "+OK\r\n"},
		{CodecRESP, "$x\r\n"},
		{CodecRESP, "$2000000\r\n"},
		{CodecRESP, "$3\r\nabcde"},
		{CodecRESP, strings.Repeat("-", maxRESPErrorBytes+1)},
		{CodecHTTP, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"},
		{CodecHTTP, "HTTP/1.1 200 OK\r\n\r\n"},
		{CodecHTTP, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"},
		{CodecHTTP, "SSH-2.0-OpenSSH\r\n\r\n"},
		{CodecHTTP, "HTTP/1.1 200 OK\r\nbroken\r\n\r\n"},
		{CodecHTTP, strings.Repeat("x", maxHTTPHeadBytes+1)},
	} {
		if _, n, err := nextResponse(tc.c, []byte(tc.in)); !errors.Is(err, ErrMismatch) || n != 0 {
			t.Errorf("%d: %q: n %d, %v; want ErrMismatch", i, tc.in, n, err)
		}
	}
}

// FuzzNextResponseRESPHTTP: the RESP and HTTP response decoders never panic,
// never consume more than their input, and return a payload inside it.
func FuzzNextResponseRESPHTTP(f *testing.F) {
	f.Add(false, []byte("$3\r\nabc\r\n"))
	f.Add(false, []byte("-BUSY x (cpu)\r\n"))
	f.Add(true, []byte("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"))
	f.Add(true, []byte("HTTP/1.1 503 x\r\nContent-Length: 0\r\n\r\n"))
	f.Fuzz(func(t *testing.T, http bool, buf []byte) {
		c := CodecRESP
		if http {
			c = CodecHTTP
		}
		payload, n, err := nextResponse(c, buf)
		if err != nil {
			if n != 0 || payload != nil {
				t.Fatalf("error with n %d", n)
			}
			return
		}
		if n < 0 || n > len(buf) || len(payload) > n {
			t.Fatalf("consumed %d of %d, payload %d", n, len(buf), len(payload))
		}
		_, _ = responseReject(c, payload)
	})
}

// respHTTPEchoServer is a loopback server that answers the generator's RESP
// ECHO commands or HTTP POSTs with their payload, one goroutine per
// connection.
func respHTTPEchoServer(t *testing.T, c Codec) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var conns []net.Conn
	go func() {
		defer close(done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, conn)
			go serveRESPHTTP(conn, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// serveRESPHTTP answers requests on conn until it fails.
func serveRESPHTTP(conn net.Conn, c Codec) {
	r := bufio.NewReader(conn)
	w := bufio.NewWriter(conn)
	for {
		var size int
		if c == CodecRESP {
			for i := range 4 { // *2, $4, ECHO, $N
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if i == 3 {
					size, _ = strconv.Atoi(strings.TrimSpace(line[1:]))
				}
			}
		} else {
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
					size, _ = strconv.Atoi(strings.TrimSpace(v))
				}
				if line == "\r\n" {
					break
				}
			}
		}
		body := make([]byte, size)
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		if c == CodecRESP {
			_, _ = r.Discard(2)
			fmt.Fprintf(w, "$%d\r\n%s\r\n", size, body)
		} else {
			fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", size, body)
		}
		if r.Buffered() == 0 {
			if w.Flush() != nil {
				return
			}
		}
	}
}
