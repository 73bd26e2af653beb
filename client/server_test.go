package client

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/sluicenet/sluice/protocol/envelope"
)

// seen is one request as the test server received it.
type seen struct {
	conn     int // which accepted connection (0, 1, ...)
	id       uint64
	method   string
	key      string
	flags    envelope.Flags
	deadline time.Duration // the relative deadline the client sent
	payload  string
	at       time.Time
}

// replier answers one request; it may be kept and used later, from any
// goroutine.
type replier struct {
	s   *envServer
	c   *serverConn
	req seen
}

func (r *replier) respond(st envelope.Status, flags envelope.Flags, retryAfter time.Duration, payload []byte) {
	m := envelope.Message{Type: envelope.TypeResponse, RequestID: r.req.id, Status: st, Flags: flags, Payload: payload}
	m.SetRetryAfter(retryAfter)
	r.c.write(&m)
}

func (r *replier) ok(payload string) { r.respond(envelope.StatusOK, 0, 0, []byte(payload)) }

func (r *replier) reject(st envelope.Status, retryAfter time.Duration, noRetry bool) {
	m := envelope.Message{Type: envelope.TypeReject, RequestID: r.req.id, Status: st, Payload: []byte("test reject")}
	if noRetry {
		m.Flags |= envelope.FlagNoRetry
	} else {
		m.SetRetryAfter(retryAfter)
	}
	r.c.write(&m)
}

// hangUp closes the request's connection without an answer.
func (r *replier) hangUp() { _ = r.c.nc.Close() }

// envServer is a small envelope server on loopback for the tests: one
// goroutine per connection reads frames and calls handle, which answers
// through the replier now or later. Close stops everything it started.
type envServer struct {
	t      testing.TB
	ln     net.Listener
	handle func(r *replier)

	mu    sync.Mutex
	reqs  []seen
	conns []*serverConn
	wg    sync.WaitGroup
}

type serverConn struct {
	t   testing.TB
	n   int
	nc  net.Conn
	wmu sync.Mutex
}

func (c *serverConn) write(m *envelope.Message) {
	b, err := m.Append(nil)
	if err != nil {
		c.t.Errorf("server: cannot encode %+v: %v", m, err)
		return
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, _ = c.nc.Write(b)
}

func newEnvServer(t testing.TB, handle func(r *replier)) *envServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveEnv(t, ln, handle)
}

// newTLSEnvServer is newEnvServer speaking TLS with cfg: each connection's
// handshake runs at its first read.
func newTLSEnvServer(t testing.TB, cfg *tls.Config, handle func(r *replier)) *envServer {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return serveEnv(t, ln, handle)
}

// serveEnv serves the envelope on ln until the test ends.
func serveEnv(t testing.TB, ln net.Listener, handle func(r *replier)) *envServer {
	s := &envServer{t: t, ln: ln, handle: handle}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.close)
	return s
}

func (s *envServer) addr() string { return s.ln.Addr().String() }

func (s *envServer) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		c := &serverConn{t: s.t, n: len(s.conns), nc: nc}
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

func (s *envServer) serve(c *serverConn) {
	defer s.wg.Done()
	defer c.nc.Close()
	br := bufio.NewReader(c.nc)
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n > 1<<20 {
			return
		}
		frame := make([]byte, 4+n)
		copy(frame, hdr[:])
		if _, err := io.ReadFull(br, frame[4:]); err != nil {
			return
		}
		var m envelope.Message
		if err := envelope.Parse(frame, &m); err != nil {
			s.t.Errorf("server: bad frame: %v", err)
			return
		}
		rq := seen{conn: c.n, id: m.RequestID, method: string(m.Method), key: string(m.IdempotencyKey),
			flags: m.Flags, payload: string(m.Payload), at: time.Now()}
		if m.Flags&envelope.FlagDeadlineRelative != 0 {
			rq.deadline = time.Duration(m.DeadlineMillis) * time.Millisecond
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, rq)
		s.mu.Unlock()
		s.handle(&replier{s: s, c: c, req: rq})
	}
}

// requests returns a copy of what the server has received.
func (s *envServer) requests() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.reqs...)
}

func (s *envServer) close() {
	_ = s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		_ = c.nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}
