package http1_test

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicenet/sluice/protocol/http1"
)

var testDate = []byte("Sun, 06 Nov 1994 08:49:37 GMT")

func TestAppendResponseBytes(t *testing.T) {
	cases := []struct {
		name string
		got  []byte
		want string
	}{
		{"plaintext keep-alive", http1.AppendResponse(nil, 200, "text/plain", []byte("Hello, World!"), true, testDate),
			"HTTP/1.1 200 OK\r\nServer: sluice\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, World!"},
		{"close", http1.AppendResponse(nil, 404, "", nil, false, nil),
			"HTTP/1.1 404 Not Found\r\nServer: sluice\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"},
		{"204 has no length or body", http1.AppendResponse(nil, 204, "", []byte("x"), true, nil),
			"HTTP/1.1 204 No Content\r\nServer: sluice\r\n\r\n"},
		{"304 keeps length, drops body", http1.AppendResponse(nil, 304, "", []byte("xyz"), true, nil),
			"HTTP/1.1 304 Not Modified\r\nServer: sluice\r\nContent-Length: 3\r\n\r\n"},
		{"unknown status has empty reason", http1.AppendResponse(nil, 299, "", nil, true, nil),
			"HTTP/1.1 299 \r\nServer: sluice\r\nContent-Length: 0\r\n\r\n"},
		{"invalid status is 500", http1.AppendResponse(nil, 42, "", nil, true, nil),
			"HTTP/1.1 500 Internal Server Error\r\nServer: sluice\r\nContent-Length: 0\r\n\r\n"},
		{"header injection dropped", http1.AppendResponse(nil, 200, "text/plain\r\nX-Evil: 1", nil, true, nil),
			"HTTP/1.1 200 OK\r\nServer: sluice\r\nContent-Type: text/plainX-Evil: 1\r\nContent-Length: 0\r\n\r\n"},
		{"appends", http1.AppendResponse([]byte("prev"), 200, "", nil, true, nil),
			"prevHTTP/1.1 200 OK\r\nServer: sluice\r\nContent-Length: 0\r\n\r\n"},
		{"error", http1.AppendError(nil, 400, false, testDate),
			"HTTP/1.1 400 Bad Request\r\nServer: sluice\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 12\r\nConnection: close\r\n\r\nBad Request\n"},
		{"decode error", http1.AppendDecodeError(nil, http1.ErrChunked, nil),
			"HTTP/1.1 411 Length Required\r\nServer: sluice\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 16\r\nConnection: close\r\n\r\nLength Required\n"},
		{"retry after", http1.AppendRetryAfter(nil, 503, 1500*time.Millisecond, true, nil),
			"HTTP/1.1 503 Service Unavailable\r\nServer: sluice\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 20\r\nRetry-After: 2\r\n\r\nService Unavailable\n"},
	}
	for i, tc := range cases {
		if string(tc.got) != tc.want {
			t.Errorf("%d %s:\n got %q\nwant %q", i, tc.name, tc.got, tc.want)
		}
	}
}

func TestRetryAfterRounding(t *testing.T) {
	cases := []struct {
		d    time.Duration
		want string
	}{
		{0, "0"}, {-time.Second, "0"}, {time.Nanosecond, "1"}, {time.Second, "1"},
		{time.Second + 1, "2"}, {90 * time.Second, "90"},
	}
	for i, tc := range cases {
		resp := string(http1.AppendRetryAfter(nil, 429, tc.d, false, nil))
		if !strings.Contains(resp, "\r\nRetry-After: "+tc.want+"\r\n") || !strings.HasPrefix(resp, "HTTP/1.1 429 Too Many Requests\r\n") {
			t.Errorf("%d: %v gave %q", i, tc.d, resp)
		}
	}
}

func TestRequestAppendResponse(t *testing.T) {
	var req http1.Request
	parse := func(s string) {
		t.Helper()
		if err := http1.Parse([]byte(s), &req); err != nil {
			t.Fatal(err)
		}
	}
	parse("HEAD / HTTP/1.1\r\nHost: h\r\n\r\n")
	if got := string(req.AppendResponse(nil, 200, "", []byte("Hello"), nil)); got != "HTTP/1.1 200 OK\r\nServer: sluice\r\nContent-Length: 5\r\n\r\n" {
		t.Errorf("HEAD: %q", got)
	}
	parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
	if got := string(req.AppendResponse(nil, 200, "", []byte("Hi"), nil)); got != "HTTP/1.1 200 OK\r\nServer: sluice\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nHi" {
		t.Errorf("HTTP/1.0 keep-alive: %q", got)
	}
	parse("GET / HTTP/1.0\r\n\r\n")
	if got := string(req.AppendResponse(nil, 200, "", []byte("Hi"), nil)); got != "HTTP/1.1 200 OK\r\nServer: sluice\r\nContent-Length: 2\r\nConnection: close\r\n\r\nHi" {
		t.Errorf("HTTP/1.0: %q", got)
	}
	parse("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	if got := string(req.AppendResponse(nil, 200, "", []byte("Hi"), nil)); got != "HTTP/1.1 200 OK\r\nServer: sluice\r\nContent-Length: 2\r\n\r\nHi" {
		t.Errorf("HTTP/1.1: %q", got)
	}
}

// TestResponsesReadByNetHTTP checks every response form against the
// standard library's client-side parser.
func TestResponsesReadByNetHTTP(t *testing.T) {
	var d http1.DateCache
	date := d.Value(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	var wire []byte
	type exp struct {
		status    int
		body      string
		close     bool
		retry     string
		noBodyReq bool
	}
	var exps []exp
	add := func(b []byte, e exp) { wire = append(wire, b...); exps = append(exps, e) }
	add(http1.AppendResponse(nil, 200, "text/plain", []byte("Hello, World!"), true, date), exp{200, "Hello, World!", false, "", false})
	for _, s := range []int{400, 411, 413, 414, 417, 431, 501, 505} {
		add(http1.AppendError(nil, s, true, date), exp{s, http1.StatusText(s) + "\n", false, "", false})
	}
	add(http1.AppendRetryAfter(nil, 429, 3*time.Second, true, date), exp{429, "Too Many Requests\n", false, "3", false})
	add(http1.AppendRetryAfter(nil, 503, time.Second, true, date), exp{503, "Service Unavailable\n", false, "1", false})
	add(http1.AppendResponse(nil, 204, "", nil, true, date), exp{204, "", false, "", false})
	add(http1.AppendResponse(nil, 500, "", []byte("bye"), false, date), exp{500, "bye", true, "", false})

	br := bufio.NewReader(bytes.NewReader(wire))
	for i, e := range exps {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%d: ReadResponse: %v", i, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%d: body: %v", i, err)
		}
		if resp.StatusCode != e.status || string(body) != e.body || resp.Close != e.close ||
			resp.Header.Get("Retry-After") != e.retry || resp.Header.Get("Server") != "sluice" ||
			resp.Header.Get("Date") != "Sun, 22 Nov 2026 10:00:00 GMT" {
			t.Errorf("%d: got %d %q close=%v retry=%q headers %v; want %+v", i, resp.StatusCode, body, resp.Close, resp.Header.Get("Retry-After"), resp.Header, e)
		}
		if when, err := http.ParseTime(resp.Header.Get("Date")); err != nil || !when.Equal(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)) {
			t.Errorf("%d: Date %q parses as %v, %v", i, resp.Header.Get("Date"), when, err)
		}
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("bytes left after the last response")
	}
}

func TestDateCache(t *testing.T) {
	var d http1.DateCache
	t0 := time.Date(1994, 11, 6, 8, 49, 37, 0, time.UTC)
	steps := []struct {
		now  time.Time
		want string
	}{
		{t0, "Sun, 06 Nov 1994 08:49:37 GMT"},
		{t0.Add(999 * time.Millisecond), "Sun, 06 Nov 1994 08:49:37 GMT"},
		{t0.Add(time.Second), "Sun, 06 Nov 1994 08:49:38 GMT"},
		{t0.Add(time.Second).In(time.FixedZone("X", 3600)), "Sun, 06 Nov 1994 08:49:38 GMT"},
		{t0.Add(-time.Hour), "Sun, 06 Nov 1994 07:49:37 GMT"},
		{time.Unix(0, 0), "Thu, 01 Jan 1970 00:00:00 GMT"},
	}
	for i, s := range steps {
		if got := string(d.Value(s.now)); got != s.want {
			t.Errorf("t%d: %q; want %q", i, got, s.want)
		}
	}
	now := t0
	allocs := testing.AllocsPerRun(100, func() {
		now = now.Add(time.Second) // reformat every time
		_ = d.Value(now)
	})
	if allocs != 0 {
		t.Errorf("DateCache.Value: %v allocs; want 0", allocs)
	}
}

func TestStatusText(t *testing.T) {
	// RFC 9110 renamed 413, 414 and 422; net/http keeps the RFC 7231 names.
	if http1.StatusText(413) != "Content Too Large" || http1.StatusText(414) != "URI Too Long" || http1.StatusText(422) != "Unprocessable Content" || http1.StatusText(299) != "" {
		t.Error("RFC 9110 reason phrases")
	}
	for _, s := range []int{200, 204, 304, 400, 404, 409, 411, 417, 429, 431, 500, 501, 503, 505} {
		if http1.StatusText(s) != http.StatusText(s) {
			t.Errorf("StatusText(%d) = %q; net/http says %q", s, http1.StatusText(s), http.StatusText(s))
		}
	}
}

func TestServeZeroAllocs(t *testing.T) {
	var c http1.Codec
	var req http1.Request
	var dates http1.DateCache
	in := bytes.Repeat([]byte(wrkPlaintext+"POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"), 4)
	out := make([]byte, 0, 8<<10)
	now := time.Unix(1_790_000_000, 0)
	allocs := testing.AllocsPerRun(100, func() {
		now = now.Add(time.Second)
		var err error
		if out, err = serve(c, in, &req, &dates, now, out[:0]); err != nil {
			t.Fatal(err)
		}
		out = http1.AppendRetryAfter(out, 503, time.Second, true, dates.Value(now))
		out = http1.AppendDecodeError(out, http1.ErrChunked, dates.Value(now))
	})
	if allocs != 0 {
		t.Errorf("decode + parse + respond: %v allocs per run; want 0", allocs)
	}
}
