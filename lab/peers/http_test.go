package peers

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicenet/sluice/internal/httpecho"
)

// httpPipeline is one request of every kind, pipelined, ending with a
// Connection: close.
const httpPipeline = "GET / HTTP/1.1\r\nHost: h\r\n\r\n" +
	"POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello" +
	"HEAD / HTTP/1.1\r\nHost: h\r\n\r\n" +
	"GET /missing HTTP/1.1\r\nHost: h\r\n\r\n" +
	"DELETE / HTTP/1.1\r\nHost: h\r\n\r\n" +
	"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"

var dateField = regexp.MustCompile(`(?m)^Date: [^\r]*\r\n`)

// TestGnetHTTPSameBytes: the gnet HTTP peer answers a pipeline sent in
// random pieces with exactly the bytes sluice's handler produces (Date
// aside), then closes.
func TestGnetHTTPSameBytes(t *testing.T) {
	addr := startPeer(t, KindGnetHTTP, "")
	h := httpecho.NewHandler(httpecho.Codec{})
	var want []byte
	in := []byte(httpPipeline)
	for len(in) > 0 {
		frame, n, _ := h.Codec().Decode(in)
		want, _, _ = h.Respond(want, frame, time.Now())
		in = in[n:]
	}
	for _, pieces := range []int{1, 3, 17, len(httpPipeline)} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		step := (len(httpPipeline) + pieces - 1) / pieces
		for i := 0; i < len(httpPipeline); i += step {
			if _, err := c.Write([]byte(httpPipeline[i:min(len(httpPipeline), i+step)])); err != nil {
				t.Fatal(err)
			}
		}
		got, err := io.ReadAll(c)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		if g, w := dateField.ReplaceAllString(string(got), ""), dateField.ReplaceAllString(string(want), ""); g != w {
			t.Errorf("%d pieces:\n%q\nwant\n%q", pieces, g, w)
		}
	}
	// Garbage: 400 and close.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("\x16\x03\x01\x00\xa5")); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil || !strings.HasPrefix(string(got), "HTTP/1.1 400 Bad Request\r\n") {
		t.Errorf("garbage: %q, %v", got, err)
	}
}

// TestNetHTTPRoutes: the net/http peer answers the same routes, pipelined.
func TestNetHTTPRoutes(t *testing.T) {
	addr := startPeer(t, KindNetHTTP, "")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(httpPipeline)); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	want := []struct {
		method string
		status int
		body   string
	}{
		{"GET", 200, httpecho.Body}, {"POST", 200, "hello"}, {"HEAD", 200, ""},
		{"GET", 404, "404 page not found\n"}, {"DELETE", 405, "Method Not Allowed\n"}, {"GET", 200, httpecho.Body},
	}
	for i, w := range want {
		resp, err := http.ReadResponse(r, &http.Request{Method: w.method})
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != w.status || string(body) != w.body {
			t.Errorf("%d %s: %d %q %v, want %d %q", i, w.method, resp.StatusCode, body, err, w.status, w.body)
		}
		if w.status == 200 && w.method != "POST" && resp.Header.Get("Content-Type") != httpecho.HelloContentType {
			t.Errorf("%d: Content-Type %q", i, resp.Header.Get("Content-Type"))
		}
	}
	if rest, _ := io.ReadAll(r); len(rest) != 0 {
		t.Errorf("after Connection: close: %q", rest)
	}
}
