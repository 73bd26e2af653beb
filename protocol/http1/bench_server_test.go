package http1

import (
	"bytes"
	"testing"

	"github.com/sluicenet/sluice/protocol"
)

// Requests of the per-request server benchmark.
const (
	// benchWrkDefault is wrk's own request for a URL (wrk.format(nil,
	// "/")), what cmd/bench external's pipeline script sends.
	benchWrkDefault = "GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"
	// benchWrkHeaders is a plaintext request with the header fields a
	// load generator run with -H adds (TechEmpower's Accept and
	// Connection, a User-Agent).
	benchWrkHeaders = "GET /plaintext HTTP/1.1\r\nHost: localhost:8080\r\nUser-Agent: wrk/4.2.0\r\n" +
		"Accept: text/plain,text/html;q=0.9,application/xhtml+xml;q=0.9,application/xml;q=0.8,*/*;q=0.7\r\n" +
		"Connection: keep-alive\r\n\r\n"
)

// queueConn is a Conn that lends the free room of an out-queue, as
// server.Conn does: AvailableBuffer returns the room after what is queued,
// and Write of a slice encoded there queues it without a copy.
type queueConn struct {
	q      []byte
	closed bool // CloseWithError was called
}

func (c *queueConn) AvailableBuffer() []byte { return c.q[len(c.q):] }

func (c *queueConn) Write(p []byte) error {
	if len(p) > 0 && cap(c.q) > len(c.q) && &p[0] == &c.q[:len(c.q)+1][len(c.q)] {
		c.q = c.q[:len(c.q)+len(p)] // encoded in place
		return nil
	}
	c.q = append(c.q, p...)
	return nil
}

func (c *queueConn) CloseWithError(error) error { c.closed = true; return nil }

// loopConn is a queueConn on an engine loop: it hands out the loop's codec
// (server.Conn.LoopCodec).
type loopConn struct {
	queueConn
	codec protocol.Codec
}

func (c *loopConn) LoopCodec() protocol.Codec { return c.codec }

// benchServerPath is what a loop does per read of depth pipelined copies
// of req: ServerCodec.Decode of each frame, then Server.Serve of it into
// a connection that lends its out-queue, with route answering. It reports
// ns/req.
//
// loop runs it as on an engine loop with a protocol.LoopCodec: the loop's
// codec (ForLoop) decodes, and the connection hands it to Serve, so both
// use its scratch space instead of the pool's.
func benchServerPath(b *testing.B, req string, depth int, route Route, loop bool) {
	s := &Server{Route: route}
	in := bytes.Repeat([]byte(req), depth)
	lc := &loopConn{queueConn: queueConn{q: make([]byte, 0, 64<<10)}, codec: s.Codec}
	c := &lc.queueConn
	var conn Conn = c
	if loop {
		lc.codec, conn = s.Codec.ForLoop(), lc
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		c.q = c.q[:0]
		data := in
		for len(data) > 0 {
			frame, n, err := lc.codec.Decode(data)
			if err != nil || n == 0 {
				b.Fatal(n, err)
			}
			if s.Serve(conn, frame) {
				b.Fatal("closed")
			}
			data = data[n:]
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*depth), "ns/req")
}

// BenchmarkServerPath: ServerCodec.Decode + Server.Serve per request, as
// the engine runs them, for a read of 1 and of 16 pipelined requests.
// Route "append" formats each response (Request.AppendResponse); "canned"
// copies a response built once, as internal/httpecho's hello route does,
// which leaves the parse and Serve's own work.
func BenchmarkServerPath(b *testing.B) {
	body := []byte("Hello, World!")
	appendRoute := func(dst []byte, r *Request, date []byte) []byte {
		return r.AppendResponse(dst, 200, "text/plain", body, date)
	}
	canned := AppendResponse(nil, 200, "text/plain", body, true, []byte("Sun, 22 Nov 2026 10:00:00 GMT"))
	cannedRoute := func(dst []byte, r *Request, date []byte) []byte {
		return append(dst, canned...)
	}
	for _, bc := range []struct {
		name  string
		req   string
		depth int
	}{
		{"wrk/1", benchWrkDefault, 1},
		{"wrk/16", benchWrkDefault, 16},
		{"headers/1", benchWrkHeaders, 1},
		{"headers/16", benchWrkHeaders, 16},
	} {
		b.Run(bc.name+"/append", func(b *testing.B) { benchServerPath(b, bc.req, bc.depth, appendRoute, false) })
		b.Run(bc.name+"/canned", func(b *testing.B) { benchServerPath(b, bc.req, bc.depth, cannedRoute, false) })
		b.Run(bc.name+"/canned-loop", func(b *testing.B) { benchServerPath(b, bc.req, bc.depth, cannedRoute, true) })
	}
}
