package httpecho

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicenet/sluice/protocol/http1"
	"github.com/sluicenet/sluice/server"
)

// testTimeout bounds every network exchange of a test.
const testTimeout = 20 * time.Second

// startEngine runs an engine with one loop, the handler for codec and the
// optional admitter, on a free loopback port, and shuts it down when the
// test ends.
func startEngine(t testing.TB, codec Codec, admit server.Admission) *server.Engine {
	t.Helper()
	e, err := server.New(server.Config{Loops: 1, Codec: codec, Admission: admit}, NewHandler(codec))
	if errors.Is(err, server.ErrUnsupported) {
		t.Skip("the engine needs Linux")
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return e
}

func dial(t testing.TB, e *server.Engine) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", e.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SetDeadline(time.Now().Add(testTimeout)); err != nil {
		t.Fatal(err)
	}
	return c
}

// readExactly reads len(want) bytes and compares them.
func readExactly(t *testing.T, c net.Conn, want string, what string) {
	t.Helper()
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("%s: %v after %q", what, err, got)
	}
	if string(got) != want {
		t.Fatalf("%s:\n%q\nwant\n%q", what, got, want)
	}
}

// expectEOF reads until end of file and fails on extra bytes.
func expectEOF(t *testing.T, c net.Conn, what string) {
	t.Helper()
	rest, err := io.ReadAll(c)
	if err != nil || len(rest) != 0 {
		t.Fatalf("%s: want end of file, got %q, %v", what, rest, err)
	}
}

// TestEngineSplitEveryByte sends a pipeline of requests of every kind over
// one keep-alive connection, split in two at every byte boundary. The
// responses to the requests complete in the first part are read before the
// second part is sent, so the engine really sees the split.
func TestEngineSplitEveryByte(t *testing.T) {
	codec := Codec{http1.ServerCodec{Clock: fixedClock}}
	e := startEngine(t, codec, nil)
	c := dial(t, e)
	h := NewHandler(codec)
	in, want := pipeline()
	for k := 0; k <= len(in); k++ {
		first, _ := serveStream(t, h, []byte(in[:k]))
		if _, err := c.Write([]byte(in[:k])); err != nil {
			t.Fatal(err)
		}
		readExactly(t, c, string(first), "split at "+strconv.Itoa(k)+", first part")
		if _, err := c.Write([]byte(in[k:])); err != nil {
			t.Fatal(err)
		}
		readExactly(t, c, want[len(first):], "split at "+strconv.Itoa(k)+", second part")
	}
}

// TestEngineClose: "Connection: close" and HTTP/1.0 close the connection
// after their response; pipelined requests behind them get no answer.
func TestEngineClose(t *testing.T) {
	codec := Codec{http1.ServerCodec{Clock: fixedClock}}
	e := startEngine(t, codec, nil)
	for _, tc := range []struct{ name, in, want string }{
		{"Connection: close", wrkRequest + respondCases[12].in + wrkRequest, respondCases[0].want + respondCases[12].want},
		{"HTTP/1.0", respondCases[13].in + wrkRequest, respondCases[13].want},
		{"HTTP/1.0 keep-alive", respondCases[14].in + respondCases[13].in, respondCases[14].want + respondCases[13].want},
		{"garbage", wrkRequest + "\x16\x03\x01\x00\xa5\x01\x00\x00", respondCases[0].want + respondCases[16].want},
		{"missing Host", respondCases[17].in + wrkRequest, respondCases[17].want},
		{"chunked", respondCases[18].in, respondCases[18].want},
		{"body too large", respondCases[21].in, respondCases[21].want},
	} {
		c := dial(t, e)
		if _, err := c.Write([]byte(tc.in)); err != nil {
			t.Fatal(err)
		}
		readExactly(t, c, tc.want, tc.name)
		expectEOF(t, c, tc.name)
	}
}

// TestEngineEchoBodies echoes bodies of several sizes, up to the limit,
// on one connection, each sent in pieces.
func TestEngineEchoBodies(t *testing.T) {
	e := startEngine(t, Codec{}, nil)
	c := dial(t, e)
	r := bufio.NewReader(c)
	for _, size := range []int{0, 1, 100, 4096, 40000, DefaultMaxBodyBytes} {
		body := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
		req := "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: " + strconv.Itoa(size) + "\r\n\r\n" + string(body)
		for i := 0; i < len(req); i += 1000 {
			if _, err := c.Write([]byte(req[i:min(len(req), i+1000)])); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		got, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 || !bytes.Equal(got, body) {
			t.Fatalf("size %d: status %d, %d bytes back, %v", size, resp.StatusCode, len(got), err)
		}
		if ct := resp.Header.Get("Content-Type"); ct != EchoContentType {
			t.Errorf("size %d: Content-Type %q", size, ct)
		}
	}
}

// TestEngineHTTPClient drives the server with net/http's client over a
// reused connection: GET, HEAD, POST, 404, 405, and Date present.
func TestEngineHTTPClient(t *testing.T) {
	e := startEngine(t, Codec{}, nil)
	tr := &http.Transport{MaxIdleConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr, Timeout: testTimeout}
	base := "http://" + e.Addr().String()
	cases := []struct {
		method, path, body string
		status             int
		want               string
	}{
		{"GET", "/", "", 200, Body},
		{"HEAD", "/", "", 200, ""},
		{"POST", "/echo", "ping", 200, "ping"},
		{"PUT", "/echo", strings.Repeat("x", 10000), 200, strings.Repeat("x", 10000)},
		{"GET", "/missing", "", 404, "Not Found\n"},
		{"DELETE", "/", "", 405, "Method Not Allowed\n"},
		{"GET", "/", "", 200, Body},
	}
	for i, tc := range cases {
		req, err := http.NewRequest(tc.method, base+tc.path, strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		if tc.body == "" {
			req.Body = nil
		}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatalf("%d %s %s: %v", i, tc.method, tc.path, err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != tc.status || string(got) != tc.want {
			t.Errorf("%d %s %s: %d %q %v, want %d %q", i, tc.method, tc.path, resp.StatusCode, got, err, tc.status, tc.want)
		}
		if _, err := http.ParseTime(resp.Header.Get("Date")); err != nil {
			t.Errorf("%d: Date %q: %v", i, resp.Header.Get("Date"), err)
		}
		if tc.status == 405 && resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%d: Allow %q", i, resp.Header.Get("Allow"))
		}
	}
	if s := e.Stats(); s.Accepted != 1 {
		t.Errorf("%d connections accepted for %d keep-alive requests, want 1", s.Accepted, len(cases))
	}
}

// rejectEveryOther is an admitter that refuses every second frame.
type rejectEveryOther struct {
	n      atomic.Int64
	reason string
}

func (a *rejectEveryOther) AdmitFrame(_ *server.Conn, _ []byte, _ time.Time) server.Verdict {
	if a.n.Add(1)%2 == 0 {
		return server.Verdict{Reject: true, Reason: a.reason, RetryAfter: 1500 * time.Millisecond}
	}
	return server.Verdict{}
}

// TestEngineReject: refused requests get 429 or 503 with Retry-After, in
// order with the others, and the connection stays usable.
func TestEngineReject(t *testing.T) {
	for _, tc := range []struct {
		reason, status string
	}{{"tenant", "429 Too Many Requests"}, {"codel", "503 Service Unavailable"}} {
		codec := Codec{http1.ServerCodec{Clock: fixedClock}}
		e := startEngine(t, codec, server.AdmitFunc((&rejectEveryOther{reason: tc.reason}).AdmitFrame))
		c := dial(t, e)
		if _, err := c.Write([]byte(strings.Repeat(wrkRequest, 4))); err != nil {
			t.Fatal(err)
		}
		reject := string(codec.AppendReject(nil, []byte(wrkRequest), tc.reason, 1500*time.Millisecond))
		if !strings.HasPrefix(reject, "HTTP/1.1 "+tc.status+"\r\n") || !strings.Contains(reject, "\r\nRetry-After: 2\r\n") {
			t.Fatalf("reject %q", reject)
		}
		ok := respondCases[0].want
		readExactly(t, c, ok+reject+ok+reject, tc.reason)
	}
}

// TestEngineZeroAllocs drives a real loop over loopback with 16 pipelined
// wrk requests per round trip: the steady state allocates nothing, in the
// engine, the handler or the client.
func TestEngineZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's bookkeeping allocates")
	}
	e := startEngine(t, Codec{}, nil)
	c := dial(t, e)
	out := []byte(strings.Repeat(wrkRequest, 16))
	one, _, _ := NewHandler(Codec{}).Respond(nil, []byte(wrkRequest), time.Now())
	in := make([]byte, 16*len(one))
	round := func() {
		if _, err := c.Write(out); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, in); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 200; i++ { // warm the pools
		round()
	}
	if a := testing.AllocsPerRun(500, round); a != 0 {
		t.Errorf("%.2f allocations per round trip of 16 requests, want 0", a)
	}
}

// TestEngineClockPerBatch: with 16 requests per write, the clock is read
// about once per read, far less than once per request.
func TestEngineClockPerBatch(t *testing.T) {
	var reads atomic.Int64
	codec := Codec{http1.ServerCodec{Clock: func() time.Time { reads.Add(1); return time.Now() }}}
	e := startEngine(t, codec, nil)
	c := dial(t, e)
	const depth, rounds = 16, 50
	out := []byte(strings.Repeat(wrkRequest, depth))
	one, _, _ := NewHandler(Codec{}).Respond(nil, []byte(wrkRequest), time.Now())
	in := make([]byte, depth*len(one))
	for i := 0; i < rounds; i++ {
		if _, err := c.Write(out); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, in); err != nil {
			t.Fatal(err)
		}
	}
	s := e.Stats()
	t.Logf("%d requests, %d reads, %d clock readings", depth*rounds, s.Reads, reads.Load())
	if raceEnabled {
		return // sync.Pool drops items at random under the race detector, and the scratch with them
	}
	if n := reads.Load(); n >= depth*rounds/4 {
		t.Errorf("%d clock readings for %d requests in %d reads", n, depth*rounds, s.Reads)
	}
}

// BenchmarkEngine: 16 connections with 16 pipelined wrk requests each in
// flight, through one loop; ns/op and allocs/op are per request, client
// included.
func BenchmarkEngine(b *testing.B) {
	e := startEngine(b, Codec{}, nil)
	const conns, depth = 16, 16
	out := []byte(strings.Repeat(wrkRequest, depth))
	one, _, _ := NewHandler(Codec{}).Respond(nil, []byte(wrkRequest), time.Now())
	clients := make([]net.Conn, conns)
	for i := range clients {
		clients[i] = dial(b, e)
	}
	rounds := (b.N + conns*depth - 1) / (conns * depth)
	b.ReportAllocs()
	b.ResetTimer()
	errc := make(chan error, conns)
	for _, c := range clients {
		go func(c net.Conn) {
			in := make([]byte, depth*len(one))
			for r := 0; r < rounds; r++ {
				if _, err := c.Write(out); err != nil {
					errc <- err
					return
				}
				if _, err := io.ReadFull(c, in); err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}(c)
	}
	for range clients {
		if err := <-errc; err != nil {
			b.Fatal(err)
		}
	}
}
