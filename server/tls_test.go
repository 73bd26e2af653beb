package server

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/protocol"
	"github.com/sluicenet/sluice/tlsutil"
)

// testCA is the suite's TLS certificate (tlsutil.SelfSigned: a server
// certificate for 127.0.0.1 and localhost that signs client
// certificates), made once.
type testCA struct {
	Cert tls.Certificate
	Pool *x509.CertPool
}

var (
	testCAOnce sync.Once
	testCAVal  testCA
	testCAErr  error
)

func tlsCA(t testing.TB) testCA {
	testCAOnce.Do(func() {
		testCAVal.Cert, testCAVal.Pool, testCAErr = tlsutil.SelfSigned()
	})
	if testCAErr != nil {
		t.Fatal(testCAErr)
	}
	return testCAVal
}

// issue makes a client certificate for cn signed by the CA (or, with
// selfSigned, signed by nobody the server trusts).
func (ca testCA) issue(t testing.TB, cn string, selfSigned bool) tls.Certificate {
	var c tls.Certificate
	var err error
	if selfSigned {
		c, _, err = tlsutil.SelfSigned(cn)
	} else {
		c, err = tlsutil.IssueClient(ca.Cert, cn)
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (ca testCA) server() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{ca.Cert}, MinVersion: tls.VersionTLS12}
}

func (ca testCA) client() *tls.Config {
	return &tls.Config{RootCAs: ca.Pool, ServerName: "127.0.0.1"}
}

// tlsEcho sends a stream of codec frames over TLS in random pieces,
// closes its writing half (close_notify) and checks that exactly the
// stream comes back before end of stream.
func tlsEcho(e *Engine, cfg *tls.Config, codec string, seed uint64, size, maxFrame int, rcvbuf int) error {
	rng := mrand.New(mrand.NewPCG(seed, 99))
	want := streamFor(codec, rng, size, maxFrame)
	raw, err := dialSmallWindow(e.Addr().String(), rcvbuf)
	if err != nil {
		return err
	}
	conn := tls.Client(raw, cfg)
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if err := conn.Handshake(); err != nil {
		return fmt.Errorf("handshake: %w", err)
	}
	werr := make(chan error, 1)
	go func() {
		err := writeChopped(conn, want, mrand.New(mrand.NewPCG(seed, 7)))
		if err == nil {
			err = conn.CloseWrite()
		}
		werr <- err
	}()
	got, err := io.ReadAll(conn)
	if err != nil {
		return fmt.Errorf("read after %d bytes: %w", len(got), err)
	}
	if err := <-werr; err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if !bytes.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		return fmt.Errorf("echo differs at byte %d (got %d bytes, want %d)", i, len(got), len(want))
	}
	return nil
}

// TestTLSEcho: every codec echoes over TLS 1.3 and 1.2, split and
// coalesced frames, with a client that reads slowly (a small receive
// window, so sealed records wait for EPOLLOUT); OnOpen sees the
// negotiated state.
func TestTLSEcho(t *testing.T) {
	ca := tlsCA(t)
	for _, version := range []uint16{tls.VersionTLS13, tls.VersionTLS12} {
		for _, codec := range []string{"raw", "length", "line"} {
			t.Run(fmt.Sprintf("%s/%s", tls.VersionName(version), codec), func(t *testing.T) {
				h := newTestHandler()
				var states sync.Map
				h.frame = nil
				open := HandlerFuncs{
					Open: func(c *Conn) Action {
						if st := c.TLS(); st != nil {
							states.Store(st.Version, true)
						}
						return h.OnOpen(c)
					},
					Frame: h.OnFrame,
					Close: h.OnClose,
				}
				e := start(t, Config{Loops: 2, Codec: codecByName(t, codec, 64<<10), TLS: ca.server()}, open)
				cfg := ca.client()
				cfg.MinVersion, cfg.MaxVersion = version, version
				var wg sync.WaitGroup
				errs := make(chan error, 6)
				for i := range 6 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						rcvbuf := 0
						if i%2 == 1 {
							rcvbuf = 4096
						}
						if err := tlsEcho(e, cfg, codec, uint64(i+1), 300<<10, 20<<10, rcvbuf); err != nil {
							errs <- fmt.Errorf("client %d: %w", i, err)
						}
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Error(err)
				}
				if _, ok := states.Load(version); !ok {
					t.Errorf("OnOpen never saw %s in Conn.TLS", tls.VersionName(version))
				}
				s := waitStats(t, e, "handshakes counted", func(s Stats) bool { return s.TLSHandshakes >= 6 })
				if s.TLSHandshaking != 0 {
					t.Errorf("%d handshakes still in progress", s.TLSHandshaking)
				}
			})
		}
	}
}

// TestTLSBadHandshakes: garbage instead of a ClientHello, a handshake
// that stops halfway, a peer that closes mid-handshake and a client
// certificate that fails verification each close only that connection,
// counted by reason, without OnOpen or OnClose; an established connection
// beside them goes on echoing.
func TestTLSBadHandshakes(t *testing.T) {
	ca := tlsCA(t)
	srv := ca.server()
	srv.ClientAuth = tls.VerifyClientCertIfGiven
	srv.ClientCAs = ca.Pool
	h := newTestHandler()
	e := start(t, Config{Loops: 1, Codec: protocolLength(), TLS: srv, TLSHandshakeTimeout: 300 * time.Millisecond}, h)
	good, err := tls.Dial("tcp", e.Addr().String(), ca.client())
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	c0 := h.nextOpen(t)
	echoOnce := func() {
		t.Helper()
		msg := pipelined(1, 100)
		good.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := good.Write(msg); err != nil {
			t.Fatal(err)
		}
		back := make([]byte, len(msg))
		if _, err := io.ReadFull(good, back); err != nil || !bytes.Equal(back, msg) {
			t.Fatalf("established echo: %v", err)
		}
	}
	echoOnce()

	// garbage: not a TLS record
	g := dialAddr(t, e.Addr().String())
	g.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	expectClosed(t, g)
	// a handshake that stops halfway: the ClientHello's first bytes
	s := dialAddr(t, e.Addr().String())
	s.Write([]byte{0x16, 0x03, 0x01, 0x00, 0xf0, 0x01})
	expectClosed(t, s)
	// a peer that closes mid-handshake
	p := dialAddr(t, e.Addr().String())
	p.Write([]byte{0x16, 0x03, 0x01})
	p.Close()
	// an untrusted client certificate
	bad := ca.client()
	mallory := ca.issue(t, "mallory", true)
	bad.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &mallory, nil }
	if c, err := tls.Dial("tcp", e.Addr().String(), bad); err == nil {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		_, err = c.Read(make([]byte, 1)) // TLS 1.3: the server's verdict arrives after the client's Finished
		if err == nil {
			t.Error("a client with an untrusted certificate was served")
		}
		c.Close()
	}
	st := waitStats(t, e, "four handshake failures", func(s Stats) bool {
		f := s.TLSHandshakeFailures
		return f[HandshakeNotTLS] >= 1 && f[HandshakeTimeout] >= 1 && f[HandshakePeerClosed] >= 1 && f[HandshakeBadCertificate] >= 1 &&
			s.Closed[CauseTLS] >= 4 // the loop publishes its counters at the end of its turn
	})
	t.Logf("failures %v", st.TLSHandshakeFailures)
	select {
	case c := <-h.opened:
		t.Errorf("OnOpen for a connection whose handshake failed (%v)", c.RemoteAddr())
	case ev := <-h.closed:
		t.Errorf("OnClose for %v: %v", ev.c.RemoteAddr(), ev.cause)
	default:
	}
	echoOnce()
	if c0.TLS() == nil || len(c0.TLS().PeerCertificates) != 0 {
		t.Errorf("established connection's TLS state: %+v", c0.TLS())
	}
}

// expectClosed reads c until the server closes it.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the server did not close the connection")
	}
	c.Close()
}

// TestTLSClientCertIdentity: a verified client certificate's identity is
// in Conn.TLS when OnOpen runs.
func TestTLSClientCertIdentity(t *testing.T) {
	ca := tlsCA(t)
	srv := ca.server()
	srv.ClientAuth = tls.RequireAndVerifyClientCert
	srv.ClientCAs = ca.Pool
	names := make(chan string, 1)
	h := HandlerFuncs{Open: func(c *Conn) Action {
		names <- c.TLS().PeerCertificates[0].Subject.CommonName
		return None
	}, Frame: echoHandlerAlloc.Frame}
	e := start(t, Config{Loops: 1, Codec: protocolLength(), TLS: srv}, h)
	cfg := ca.client()
	cfg.Certificates = []tls.Certificate{ca.issue(t, "tenant-7", false)}
	c, err := tls.Dial("tcp", e.Addr().String(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case n := <-names:
		if n != "tenant-7" {
			t.Errorf("peer identity %q, want tenant-7", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no OnOpen")
	}
}

// TestTLSHandshakeBound: at MaxHandshakes handshakes in progress the
// listen gate closes (the rest wait in the kernel's backlog) while an
// established connection goes on echoing; handshakes that end reopen it,
// and the waiting connections get their turn. Shutdown ends the
// handshakes still in progress (the suite's leak check would see their
// goroutines).
func TestTLSHandshakeBound(t *testing.T) {
	ca := tlsCA(t)
	h := newTestHandler()
	e := start(t, Config{Loops: 1, Codec: protocolLength(), TLS: ca.server(), MaxHandshakes: 4, HandshakeCPUs: 1,
		TLSHandshakeTimeout: time.Minute}, h)
	good, err := tls.Dial("tcp", e.Addr().String(), ca.client())
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	silent := make([]net.Conn, 8)
	for i := range silent {
		silent[i] = dialAddr(t, e.Addr().String())
	}
	// Accepted is published at the end of the loop's turn, the handshakes
	// and the gate at once
	s := waitStats(t, e, "the gate closed at 4 handshakes", func(s Stats) bool {
		return s.TLSHandshaking == 4 && !s.GateOpen && s.Accepted >= 5
	})
	if s.Accepted != 5 {
		t.Errorf("accepted %d connections while the gate held, want 5 (1 established, 4 handshaking)", s.Accepted)
	}
	msg := pipelined(3, 200)
	back := make([]byte, len(msg))
	for range 20 {
		good.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := good.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(good, back); err != nil || !bytes.Equal(back, msg) {
			t.Fatalf("established echo while handshakes are bounded: %v", err)
		}
	}
	for _, c := range silent[:4] {
		c.Close() // the first four give up: their handshakes end, the gate reopens
	}
	waitStats(t, e, "the waiting connections accepted", func(s Stats) bool {
		return s.Accepted == 9 && s.TLSHandshakeFailures[HandshakePeerClosed] >= 1
	})
	for _, c := range silent[4:] {
		defer c.Close()
	}
}

// TestTLSFeatures: session resumption (counted in Stats.TLSResumed), ALPN
// and SNI through GetCertificate reach Conn.TLS.
func TestTLSFeatures(t *testing.T) {
	ca := tlsCA(t)
	srv := &tls.Config{
		NextProtos: []string{"sluice/1", "h2"},
		GetCertificate: func(hi *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if hi.ServerName != "localhost" && hi.ServerName != "" {
				return nil, fmt.Errorf("no certificate for %q", hi.ServerName)
			}
			return &ca.Cert, nil
		},
	}
	got := make(chan tls.ConnectionState, 4)
	h := HandlerFuncs{Open: func(c *Conn) Action { got <- *c.TLS(); return None }, Frame: echoHandlerAlloc.Frame}
	e := start(t, Config{Loops: 1, Codec: protocolLength(), TLS: srv}, h)
	cfg := ca.client()
	cfg.ServerName = "localhost"
	cfg.NextProtos = []string{"sluice/1"}
	cfg.ClientSessionCache = tls.NewLRUClientSessionCache(4)
	for i := range 2 {
		c, err := tls.Dial("tcp", e.Addr().String(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		// a round trip: TLS 1.3 tickets arrive after the handshake
		msg := pipelined(1, 10)
		c.SetDeadline(time.Now().Add(10 * time.Second))
		c.Write(msg)
		if _, err := io.ReadFull(c, make([]byte, len(msg))); err != nil {
			t.Fatal(err)
		}
		c.Close()
		st := <-got
		if st.NegotiatedProtocol != "sluice/1" || st.ServerName != "localhost" || st.DidResume != (i == 1) {
			t.Errorf("connection %d: ALPN %q, SNI %q, resumed %v", i, st.NegotiatedProtocol, st.ServerName, st.DidResume)
		}
	}
	waitStats(t, e, "one resumption", func(s Stats) bool { return s.TLSHandshakes == 2 && s.TLSResumed == 1 })
	// an unknown server name fails the handshake, counted
	other := ca.client()
	other.ServerName = "elsewhere.example"
	if c, err := tls.Dial("tcp", e.Addr().String(), other); err == nil {
		c.Close()
		t.Error("a handshake for an unknown server name succeeded")
	}
	waitStats(t, e, "the refused server name counted", func(s Stats) bool {
		return s.TLSHandshakeFailures[HandshakeAlert]+s.TLSHandshakeFailures[HandshakeOther] == 1
	})
}

// TestTLSBadRecords: after the handshake, a record over the maximum and a
// record that fails authentication each close only that connection with
// ErrTLS (OnClose sees it); a connection beside them is unharmed.
func TestTLSBadRecords(t *testing.T) {
	ca := tlsCA(t)
	h := newTestHandler()
	e := start(t, Config{Loops: 1, Codec: protocolLength(), TLS: ca.server()}, h)
	bystander, err := tls.Dial("tcp", e.Addr().String(), ca.client())
	if err != nil {
		t.Fatal(err)
	}
	defer bystander.Close()
	h.nextOpen(t)
	for _, tc := range []struct {
		name   string
		record []byte
	}{
		{"oversized", []byte{0x17, 0x03, 0x03, 0x7f, 0xff}},
		{"forged", append([]byte{0x17, 0x03, 0x03, 0x00, 0x20}, bytes.Repeat([]byte{0xa5}, 32)...)},
	} {
		raw := dialAddr(t, e.Addr().String())
		c := tls.Client(raw, ca.client())
		if err := c.Handshake(); err != nil {
			t.Fatal(err)
		}
		conn := h.nextOpen(t)
		raw.Write(tc.record) // under the TLS layer: the server decrypts it
		cause := h.closeOf(t, conn, 10*time.Second)
		if !errors.Is(cause, ErrTLS) || CauseOf(cause) != CauseTLS {
			t.Errorf("%s record: closed with %v, want ErrTLS", tc.name, cause)
		}
		raw.Close()
	}
	msg := pipelined(1, 50)
	bystander.SetDeadline(time.Now().Add(10 * time.Second))
	bystander.Write(msg)
	if _, err := io.ReadFull(bystander, make([]byte, len(msg))); err != nil {
		t.Fatalf("bystander: %v", err)
	}
}

// TestTLSTenantByClientCert: with TenantByClientCert two clients on one
// address are two tenants, one per verified certificate: the one over its
// quota is refused, the other served.
func TestTLSTenantByClientCert(t *testing.T) {
	ca := tlsCA(t)
	srv := ca.server()
	srv.ClientAuth = tls.RequireAndVerifyClientCert
	srv.ClientCAs = ca.Pool
	tl, err := admission.NewTenantLimiter(admission.TenantConfig{Quota: admission.Quota{Count: 1, Per: time.Hour, Burst: 1}})
	if err != nil {
		t.Fatal(err)
	}
	adm := newAdmitter(t, admission.Config{Tenants: tl, MemoryLimitBytes: -1})
	e := start(t, Config{Loops: 1, Codec: protocol.LengthPrefixed{}, TLS: srv,
		Admission: AdmissionPolicy{Admitter: adm, Classify: TenantByClientCert}}, newTestHandler())
	dialAs := func(cn string) *tls.Conn {
		cfg := ca.client()
		cfg.Certificates = []tls.Certificate{ca.issue(t, cn, false)}
		c, err := tls.Dial("tcp", e.Addr().String(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		return c
	}
	ask := func(c *tls.Conn, msg string) string {
		t.Helper()
		c.Write(protocol.LengthPrefixed{}.AppendEncode(nil, []byte(msg)))
		var hdr [4]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, binary.BigEndian.Uint32(hdr[:]))
		if _, err := io.ReadFull(c, b); err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	alpha, beta := dialAs("alpha"), dialAs("beta")
	defer alpha.Close()
	defer beta.Close()
	if got := ask(alpha, "a1"); got != "a1" {
		t.Fatalf("alpha's first frame: %q", got)
	}
	if reason, _, ok := protocol.ParseRejectText([]byte(ask(alpha, "a2"))); !ok || reason != "tenant" {
		t.Fatalf("alpha over its quota was not refused for its tenant (%q)", reason)
	}
	if got := ask(beta, "b1"); got != "b1" {
		t.Fatalf("beta, same address, another certificate: %q, want it served", got)
	}
}

// TestTLSEchoZeroAllocs: TestEchoZeroAllocs over TLS 1.3 (AES-128-GCM):
// the steady state of decrypting, decoding, echoing and sealing allocates
// nothing in the engine. crypto/tls allocates one 24-byte atLeastReader
// each time a Read must fetch a record (conn.go, readFromUntil), on each
// side: a round trip's 16 replies are one record, so 2 per round, the
// same as a Go net server's. The engine asks crypto/tls to read only when
// a whole record is there (tlsPipe.next), so it adds no such call.
func TestTLSEchoZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's bookkeeping allocates")
	}
	ca := tlsCA(t)
	e := start(t, Config{Loops: 1, Codec: codecByName(t, "length", 0), TLS: ca.server()}, echoHandlerAlloc)
	cfg := ca.client()
	cfg.CipherSuites = []uint16{tls.TLS_AES_128_GCM_SHA256}
	c, err := tls.Dial("tcp", e.Addr().String(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	round, _, _ := echoRoundsOn(t, e, c)
	if a := testing.AllocsPerRun(500, round); a > 2 {
		t.Errorf("%.2f allocations per round trip of 16 messages, want at most crypto/tls's 2", a)
	}
}

// byteWriter writes one byte per write(2): a ClientHello arrives in
// 1-byte pieces.
type byteWriter struct{ net.Conn }

func (w byteWriter) Write(b []byte) (int, error) {
	for i := range b {
		if _, err := w.Conn.Write(b[i : i+1]); err != nil {
			return i, err
		}
	}
	return len(b), nil
}

// TestTLSSplitClientHello: a handshake whose every byte comes in its own
// write completes, and the connection echoes.
func TestTLSSplitClientHello(t *testing.T) {
	ca := tlsCA(t)
	e := start(t, Config{Loops: 1, Codec: protocolLength(), TLS: ca.server()}, newTestHandler())
	raw := dialAddr(t, e.Addr().String())
	c := tls.Client(byteWriter{raw}, ca.client())
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	msg := pipelined(2, 300)
	if _, err := c.Write(msg); err != nil {
		t.Fatalf("handshake and write in 1-byte pieces: %v", err)
	}
	back := make([]byte, len(msg))
	if _, err := io.ReadFull(c, back); err != nil || !bytes.Equal(back, msg) {
		t.Fatalf("echo: %v", err)
	}
}

// TestTLSCloseNotify: a connection the server closes gracefully ends with
// close_notify after its last reply: the client reads the reply, then a
// clean end of stream (io.EOF), not a truncation.
func TestTLSCloseNotify(t *testing.T) {
	ca := tlsCA(t)
	h := HandlerFuncs{Frame: func(c *Conn, frame []byte) Action {
		c.WriteFrame(frame)
		return Close
	}}
	e := start(t, Config{Loops: 1, Codec: protocolLength(), TLS: ca.server()}, h)
	c, err := tls.Dial("tcp", e.Addr().String(), ca.client())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	msg := pipelined(1, 40)
	c.Write(msg)
	got, err := io.ReadAll(c) // io.EOF only after close_notify
	if err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("got %d bytes, %v; want the reply and a clean end", len(got), err)
	}
}

// TestTLSPool: TLS connections whose frames run on the worker pool echo
// every frame (the pool's writes reach the loop, which seals them).
func TestTLSPool(t *testing.T) {
	ca := tlsCA(t)
	e := start(t, Config{Loops: 2, Codec: codecByName(t, "length", 64<<10), TLS: ca.server(),
		Pool: PoolConfig{Handler: poolEcho{}}}, newTestHandler())
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := tlsEcho(e, ca.client(), "length", uint64(i+20), 100<<10, 8<<10, 0); err != nil {
				t.Errorf("client %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
}

// TestTLSHandshakeFlood: while clients run full handshakes as fast as
// they can, with one handshake computing at a time (HandshakeCPUs 1), an
// established connection's echoes all come back, the handshakes in
// progress stay within MaxHandshakes, and the flood's handshakes complete.
func TestTLSHandshakeFlood(t *testing.T) {
	ca := tlsCA(t)
	e := start(t, Config{Loops: 1, Codec: protocolLength(), TLS: ca.server(), MaxHandshakes: 16, HandshakeCPUs: 1},
		newTestHandler())
	good, err := tls.Dial("tcp", e.Addr().String(), ca.client())
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	stop := make(chan struct{})
	var flood sync.WaitGroup
	var done atomic.Int64
	for range 8 {
		flood.Add(1)
		go func() {
			defer flood.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, err := tls.Dial("tcp", e.Addr().String(), ca.client())
				if err == nil {
					done.Add(1)
					c.Close()
				}
			}
		}()
	}
	msg := pipelined(4, 100)
	back := make([]byte, len(msg))
	maxInProgress := int64(0)
	for i := 0; i < 200; i++ {
		good.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := good.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(good, back); err != nil || !bytes.Equal(back, msg) {
			t.Fatalf("echo %d during the flood: %v", i, err)
		}
		maxInProgress = max(maxInProgress, e.Stats().TLSHandshaking)
	}
	close(stop)
	flood.Wait()
	if maxInProgress > 16 {
		t.Errorf("%d handshakes in progress, over MaxHandshakes 16", maxInProgress)
	}
	if done.Load() == 0 {
		t.Error("no handshake of the flood completed")
	}
	t.Logf("%d flood handshakes completed beside 200 echoes; at most %d in progress", done.Load(), maxInProgress)
}

// TestTLSLocalAddr: a GetCertificate that picks by local address sees the
// connection's.
func TestTLSLocalAddr(t *testing.T) {
	ca := tlsCA(t)
	seen := make(chan string, 1)
	srv := &tls.Config{GetCertificate: func(hi *tls.ClientHelloInfo) (*tls.Certificate, error) {
		seen <- hi.Conn.LocalAddr().String()
		return &ca.Cert, nil
	}}
	e := start(t, Config{Loops: 1, Codec: protocolLength(), TLS: srv}, newTestHandler())
	c, err := tls.Dial("tcp", e.Addr().String(), ca.client())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if got := <-seen; got != e.Addr().String() {
		t.Errorf("LocalAddr in GetCertificate: %s, want %s", got, e.Addr())
	}
}

// TestTLSHandshakePanic: a GetCertificate that panics closes that
// connection (HandshakeOther), not the process; the next handshake is
// served.
func TestTLSHandshakePanic(t *testing.T) {
	ca := tlsCA(t)
	var calls atomic.Int64
	srv := &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		if calls.Add(1) == 1 {
			panic("a bad certificate callback")
		}
		return &ca.Cert, nil
	}}
	e := start(t, Config{Loops: 1, Codec: protocolLength(), TLS: srv}, newTestHandler())
	if c, err := tls.Dial("tcp", e.Addr().String(), ca.client()); err == nil {
		c.Close()
		t.Fatal("the handshake whose callback panicked succeeded")
	}
	waitStats(t, e, "the panic counted", func(s Stats) bool { return s.TLSHandshakeFailures[HandshakeOther] == 1 })
	c, err := tls.Dial("tcp", e.Addr().String(), ca.client())
	if err != nil {
		t.Fatalf("the next handshake: %v", err)
	}
	c.Close()
}

// bigChainServer is ca.server() with a certificate chain of about 200 KB
// (the CA's certificate repeated after the leaf, under crypto/tls's 256 KiB
// bound on a Certificate message): a flight the socket cannot take at once
// when the client's receive window is small.
func bigChainServer(ca testCA) *tls.Config {
	leaf := ca.Cert
	chain := append([][]byte(nil), leaf.Certificate...)
	for n := 0; n < 200<<10; n += len(leaf.Certificate[0]) {
		chain = append(chain, leaf.Certificate[0])
	}
	leaf.Certificate = chain
	return &tls.Config{Certificates: []tls.Certificate{leaf}, MinVersion: tls.VersionTLS12}
}

// slowFirstRead delays its first Read, so what the server writes first
// fills the socket.
type slowFirstRead struct {
	net.Conn
	once sync.Once
}

func (s *slowFirstRead) Read(b []byte) (int, error) {
	s.once.Do(func() { time.Sleep(300 * time.Millisecond) })
	return s.Conn.Read(b)
}

// TestTLSHandshakeWaitsForRoom: a handshake whose flight the socket does
// not take at once (a 200 KB chain, 4 KiB socket buffers, a client that
// starts reading late) waits for room (EPOLLOUT through the loop) and
// completes; a client that never reads times out (counted), the engine
// serves on.
func TestTLSHandshakeWaitsForRoom(t *testing.T) {
	ca := tlsCA(t)
	e := start(t, Config{Loops: 1, Codec: protocolLength(), TLS: bigChainServer(ca), TLSHandshakeTimeout: 500 * time.Millisecond,
		SocketSendBufferBytes: 4096}, newTestHandler())
	echo := func() {
		t.Helper()
		raw, err := dialSmallWindow(e.Addr().String(), 4096)
		if err != nil {
			t.Fatal(err)
		}
		c := tls.Client(&slowFirstRead{Conn: raw}, &tls.Config{InsecureSkipVerify: true})
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		msg := pipelined(1, 100)
		if _, err := c.Write(msg); err != nil {
			t.Fatalf("handshake and write: %v", err)
		}
		back := make([]byte, len(msg))
		if _, err := io.ReadFull(c, back); err != nil || !bytes.Equal(back, msg) {
			t.Fatalf("echo: %v", err)
		}
	}
	echo()
	if st := e.Stats(); st.OutArms == 0 || st.TLSHandshakes != 1 {
		t.Fatalf("the flight did not wait for room: %d EPOLLOUT arms, %d handshakes", st.OutArms, st.TLSHandshakes)
	}
	// a client that sends its ClientHello and never reads
	raw, err := dialSmallWindow(e.Addr().String(), 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	hello := make(chan []byte, 1)
	cc := tls.Client(&captureWrites{first: hello}, &tls.Config{InsecureSkipVerify: true})
	go cc.Handshake() // ends when captureWrites fails its read
	if _, err := raw.Write(<-hello); err != nil {
		t.Fatal(err)
	}
	waitStats(t, e, "the stalled handshake timed out", func(s Stats) bool {
		return s.TLSHandshakeFailures[HandshakeTimeout] == 1 && s.TLSHandshaking == 0
	})
	echo()
}

// captureWrites is a net.Conn that hands its first write (a ClientHello)
// to first and fails every read.
type captureWrites struct {
	net.Conn
	first chan []byte
	sent  bool
}

func (c *captureWrites) Write(b []byte) (int, error) {
	if !c.sent {
		c.sent = true
		c.first <- append([]byte(nil), b...)
	}
	return len(b), nil
}
func (c *captureWrites) Read([]byte) (int, error)         { return 0, io.EOF }
func (c *captureWrites) Close() error                     { return nil }
func (c *captureWrites) SetDeadline(time.Time) error      { return nil }
func (c *captureWrites) SetReadDeadline(time.Time) error  { return nil }
func (c *captureWrites) SetWriteDeadline(time.Time) error { return nil }
func (c *captureWrites) LocalAddr() net.Addr              { return nil }
func (c *captureWrites) RemoteAddr() net.Addr             { return nil }
