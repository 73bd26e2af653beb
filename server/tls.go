package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/ioflush"
)

// TLS in the loop (docs/TLS.md). The standard library's crypto/tls runs
// unforked over a net.Conn of the engine's making (tlsPipe):
//
//   - The handshake runs on a goroutine of its own, which reads and writes
//     the connection's fd itself and waits for the readiness the loop's
//     poller reports (hsFeed), so a peer that stalls mid-handshake parks a
//     goroutine until Config.TLSHandshakeTimeout, never a loop or a
//     thread. Handshakes in progress are bounded
//     (Config.MaxHandshakes closes the listen gate), and so is the CPU
//     they take: a handshake computes only while it holds one of
//     Config.HandshakeCPUs tokens, given back whenever it waits for its
//     peer.
//   - Once established the connection belongs to its loop again, with no
//     goroutine: the loop reads ciphertext with read(2) into the pipe,
//     decrypts it with tls.Conn.Read into the buffers the codec decodes
//     (so every codec, budget, deadline and the admission stage see
//     plaintext), and at flush time seals the out-queue's plaintext into
//     records it writes with write(2). The pipe answers "would block" when
//     its bytes run out, an error crypto/tls treats as temporary.

// ErrTLS is wrapped by every TLS failure that closes a connection after its
// handshake (a bad record, a record over the maximum, an alert from the
// peer, a renegotiation attempt); CauseOf files them under CauseTLS.
var ErrTLS = errors.New("sluice: tls")

// HandshakeFailure classifies why a TLS handshake failed, for
// Stats.TLSHandshakeFailures and the metrics; the set is fixed, so it is a
// bounded metric label.
type HandshakeFailure uint8

// Handshake failures.
const (
	HandshakeTimeout        HandshakeFailure = iota // Config.TLSHandshakeTimeout passed first
	HandshakeNotTLS                                 // the first bytes were not a TLS record
	HandshakeBadCertificate                         // the peer's certificate failed verification
	HandshakeAlert                                  // the peer sent an alert, or the handshake broke the protocol
	HandshakePeerClosed                             // the peer closed or reset the connection
	HandshakeOther                                  // anything else (an fd shortage, a config error)
	NumHandshakeFailures                            // number of failures
)

var handshakeFailureNames = [NumHandshakeFailures]string{
	"timeout", "not_tls", "bad_certificate", "alert", "peer_closed", "other",
}

// String returns the failure's metric label, e.g. "timeout".
func (f HandshakeFailure) String() string {
	if f < NumHandshakeFailures {
		return handshakeFailureNames[f]
	}
	return fmt.Sprintf("HandshakeFailure(%d)", uint8(f))
}

// HandshakeError is the close cause of a connection whose TLS handshake
// failed (the handler never saw it: no OnOpen, no OnClose).
type HandshakeError struct {
	Failure HandshakeFailure
	Err     error
}

func (e *HandshakeError) Error() string {
	return "sluice: tls handshake: " + e.Failure.String() + ": " + e.Err.Error()
}

// Unwrap returns ErrTLS and the underlying error.
func (e *HandshakeError) Unwrap() []error { return []error{ErrTLS, e.Err} }

// classifyHandshake files a handshake error under its failure.
func classifyHandshake(err error) HandshakeFailure {
	var rh tls.RecordHeaderError
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var ci x509.CertificateInvalidError
	var hn x509.HostnameError
	var alert tls.AlertError
	var ne net.Error
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return HandshakeTimeout
	case errors.As(err, &rh):
		return HandshakeNotTLS
	case errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &ci) || errors.As(err, &hn):
		return HandshakeBadCertificate
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, unix.ECONNRESET) || errors.Is(err, unix.EPIPE):
		return HandshakePeerClosed
	case errors.As(err, &alert):
		return HandshakeAlert
	case errors.As(err, &ne) && ne.Timeout():
		return HandshakeTimeout
	}
	// crypto/tls reports most protocol breaches (and the alerts it sent for
	// them) as plain errors whose text begins with "tls: "
	if s := err.Error(); len(s) > 5 && s[:5] == "tls: " {
		return HandshakeAlert
	}
	return HandshakeOther
}

// connTLS is a TLS connection's state; the loop owns it once the
// handshake is done.
type connTLS struct {
	pipe  tlsPipe
	tc    *tls.Conn
	state *tls.ConnectionState // after the handshake (Conn.TLS)

	covered int  // plaintext bytes at the out-queue's head sealed into pipe.wout
	eof     bool // tls.Conn.Read returned end of stream (close_notify)
	more    bool // crypto/tls may hold plaintext or whole records: Read before reading more

	// the handshake's context, which the loop cancels when it closes the
	// connection first (cancelHandshake)
	hsCancel context.CancelFunc

	tenant []byte // the verified client certificate's tenant key (TenantByClientCert)
	since  int64  // engine clock when the handshake completed
}

// TenantByClientCert is an AdmissionPolicy.Classify function that makes a
// TLS connection's verified client certificate its tenant: the key is
// "cert:" and the certificate's subject common name, so quotas and fair
// shares follow the identity rather than the address. A connection
// without a verified certificate keeps its peer's key. A Classify of one's
// own can call it first. It allocates nothing per frame.
func TenantByClientCert(c *Conn, _ []byte, f *admission.Frame) {
	if c.tls != nil && c.tls.tenant != nil {
		f.Tenant = c.tls.tenant
	}
}

// cancelHandshake ends c's handshake goroutine at once when c closes
// before its handshake does (a timer, a hangup, the engine's shutdown):
// its reads fail, a wait for a CPU token ends, and the result it sends the
// loop is dropped as stale.
func (c *Conn) cancelHandshake() {
	if t := c.tls; t != nil && t.hsCancel != nil && c.flags&fHandshake != 0 {
		if h := t.pipe.hs; h != nil {
			h.mu.Lock() // waits out a system call of the goroutine's on the fd
			h.closed = true
			h.mu.Unlock()
			h.signal()
		}
		t.hsCancel()
	}
}

// errHandshakeCanceled is what a handshake goroutine's reads and writes
// return once the loop closed its connection.
var errHandshakeCanceled = errors.New("sluice: tls handshake canceled: connection closed")

// hsFeed is what a handshake goroutine shares with its loop. The
// connection is in the loop's poller from its accept; the goroutine reads
// and writes its fd with non-blocking system calls and, when one would
// block, waits for wake, which the loop signals on the connection's
// events. Each of its system calls holds mu (call), and the loop marks the
// connection closed under mu before it closes the fd, so no call of the
// goroutine's reaches an fd number reused since (docs/TLS.md#design).
type hsFeed struct {
	mu      sync.Mutex
	closed  bool          // the loop closed the connection
	wake    chan struct{} // one slot: an event came, or the connection closed
	wantOut atomic.Bool   // a write would block: the loop watches for room (armOut)
}

// call runs one of the goroutine's system calls on fd under mu, unless
// the loop closed the connection (errHandshakeCanceled).
func (h *hsFeed) call(op func(fd int, b []byte) (int, errno), fd int, b []byte) (int, errno, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return 0, 0, errHandshakeCanceled
	}
	n, en := op(fd, b)
	return n, en, nil
}

// signal wakes the goroutine if it waits; a wake-up pending already is
// enough.
func (h *hsFeed) signal() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// wait parks the goroutine until the loop signals or the handshake's
// deadline passes.
func (p *tlsPipe) wait() error {
	select {
	case <-p.hs.wake:
		return nil
	case <-p.ctx.Done():
		return p.ctx.Err()
	}
}

// TLS returns the connection's TLS state (negotiated version, cipher
// suite, ALPN protocol, server name, the peer's verified certificates),
// or nil on a plaintext engine. It is set before OnOpen and never changes;
// the handler may use it for a tenant key (AdmissionPolicy.TenantKey runs
// with the peer address only: map the address to the identity in OnOpen).
func (c *Conn) TLS() *tls.ConnectionState {
	if c.tls == nil {
		return nil
	}
	return c.tls.state
}

// errWouldBlock is what the established pipe returns when its ciphertext
// runs out: crypto/tls keeps its state on a temporary net.Error.
var errWouldBlock = &wouldBlock{}

type wouldBlock struct{}

func (*wouldBlock) Error() string   { return "sluice: tls pipe would block" }
func (*wouldBlock) Timeout() bool   { return true }
func (*wouldBlock) Temporary() bool { return true }

// tlsPipe is the net.Conn crypto/tls runs over. It hands crypto/tls only
// whole records (next), so crypto/tls never holds part of one: the loop
// then knows, from the bytes it holds itself, whether a Read can make
// progress, and calls it only then (each Read that must fetch bytes costs
// crypto/tls an allocation). During the handshake it reads and writes the
// connection's fd (hs), holding a CPU token only between a read's return
// and the next wait; once established it hands out the ciphertext the loop
// put in buf and appends what crypto/tls writes to wout, for the loop to
// write.
type tlsPipe struct {
	hs     *hsFeed // the handshake's; nil once established
	held   bool
	busy   bool  // a loop had work when the step that holds the token began
	stepAt int64 // engine clock when it began
	ctx    context.Context
	l      *loop // the handshake's loop (its engine's CPU tokens and share: tls_share.go) and connection
	fd     int32
	gen    uint64
	local  net.Addr
	remote net.Addr

	buf     []byte // ciphertext not yet given to crypto/tls: buf[off:]
	off     int
	end     int    // end in buf of the record being given out
	keep    []byte // established: the partial record left when a read ended
	wout    []byte // sealed records not yet written: the loop's scratch during a flush, else pooled or nil
	woff    int
	scratch bool // wout is the loop's scratch
}

// maxCiphertext is the largest record body TLS allows (TLS 1.2's 2^14 +
// 2048; TLS 1.3's is smaller).
const maxCiphertext = 16384 + 2048

// next reports whether buf[off:] begins with a record crypto/tls may take
// now, and marks its end: a complete record, or a header crypto/tls will
// refuse on sight (an unknown type or version, a length over the maximum),
// which it gets alone.
func (p *tlsPipe) next() bool {
	if p.off < p.end {
		return true
	}
	rest := p.buf[p.off:]
	if len(rest) < 5 {
		return false
	}
	n := int(rest[3])<<8 | int(rest[4])
	if rest[0] < 20 || rest[0] > 24 || rest[1] != 3 || n > maxCiphertext {
		p.end = p.off + 5
		return true
	}
	if len(rest) < 5+n {
		return false
	}
	p.end = p.off + 5 + n
	return true
}

func (p *tlsPipe) Read(b []byte) (int, error) {
	for !p.next() {
		if p.hs == nil {
			return 0, errWouldBlock
		}
		if err := p.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(b, p.buf[p.off:p.end])
	p.off += n
	return n, nil
}

// hsBufs holds the handshakes' read buffers between handshakes (a
// handshake's flights fit in one; a larger one is left to the collector).
var hsBufs = sync.Pool{New: func() any { b := make([]byte, 0, hsBufBytes); return &b }}

// hsBufBytes is a pooled handshake read buffer's size.
const hsBufBytes = 16 << 10

// putHSBuf gives the handshake's read buffer back (handshakeDone: the
// goroutine has ended).
func (p *tlsPipe) putHSBuf() {
	if cap(p.buf) == hsBufBytes {
		b := p.buf[:0]
		hsBufs.Put(&b)
	}
	p.buf, p.off, p.end = nil, 0, 0
}

// fill reads more of the handshake from the connection's fd, after what
// buf holds, waiting for the loop's wake when nothing is there.
func (p *tlsPipe) fill() error {
	if p.off > 0 {
		p.buf = p.buf[:copy(p.buf, p.buf[p.off:])]
		p.off, p.end = 0, 0
	}
	if p.buf == nil {
		p.buf = (*hsBufs.Get().(*[]byte))[:0]
	}
	if cap(p.buf)-len(p.buf) < 4096 {
		p.buf = append(make([]byte, 0, 2*cap(p.buf)+4096), p.buf...)
	}
	for {
		n, en, err := p.hs.call(sysRead, int(p.fd), p.buf[len(p.buf):cap(p.buf)])
		switch {
		case err != nil:
			return err
		case en == unix.EINTR:
			continue
		case en == unix.EAGAIN:
			p.release() // waiting for the peer costs no CPU token
			if err := p.wait(); err != nil {
				return err
			}
			continue
		case en != 0:
			return os.NewSyscallError("read", en)
		case n == 0:
			return io.EOF
		}
		p.buf = p.buf[:len(p.buf)+n]
		return p.acquire()
	}
}

// Write appends b to wout once established (the loop writes it); during
// the handshake it writes b to the fd, waiting for room as it must.
func (p *tlsPipe) Write(b []byte) (int, error) {
	h := p.hs
	if h == nil {
		p.wout = append(p.wout, b...)
		return len(b), nil
	}
	total := 0
	for len(b) > 0 {
		n, en, err := h.call(sysWrite, int(p.fd), b)
		if err != nil {
			return total, err
		}
		if n > 0 {
			total += n
			b = b[n:]
			continue
		}
		switch en {
		case unix.EINTR:
			continue
		case unix.EAGAIN, 0:
			if !h.wantOut.Swap(true) {
				p.submit(task{kind: taskRun, fd: p.fd, gen: p.gen, fn: armHandshakeOut})
			}
			p.release()
			if err := p.wait(); err != nil {
				return total, err
			}
			if err := p.acquire(); err != nil {
				return total, err
			}
			continue
		}
		return total, os.NewSyscallError("write", en)
	}
	return total, nil
}

// armHandshakeOut has the loop watch a handshake's connection for room to
// write (its events wake the goroutine: handshakeEvent); arming reports
// room that is there already.
func armHandshakeOut(c *Conn) {
	l := c.loop
	if c.flags&(fHandshake|fClosed|fOutArmed) != fHandshake {
		return
	}
	c.flags |= fOutArmed
	l.st[cOutArms]++
	if err := l.p.Mod(int(c.fd), connEventsOut, uint32(c.gen)); err != nil {
		l.closeNow(c, err)
	}
}

// handshakeEvent is a poller event of a connection in its handshake: it
// wakes the goroutine, which reads or writes.
func (l *loop) handshakeEvent(c *Conn) {
	c.lastActive = l.now
	c.tls.pipe.hs.signal()
}

// submit hands tk to the handshake's loop, retrying a full inbox; a
// closed connection or engine drops it.
func (p *tlsPipe) submit(tk task) {
	for p.l.submit(tk) == ErrInboxFull {
		time.Sleep(time.Millisecond)
	}
}

// acquire takes a CPU token, or fails when the handshake's deadline passes
// while it waits for one.
func (p *tlsPipe) acquire() error {
	if p.held {
		return nil
	}
	if err := p.l.e.waitShare(p.ctx); err != nil {
		return err
	}
	select {
	case p.l.e.tls.cpu <- struct{}{}:
		p.held = true
		p.stepAt = p.l.e.clock()
		p.busy = p.l.e.sharing(p.stepAt) && p.l.e.loopsBusy()
		return nil
	case <-p.ctx.Done():
		return p.ctx.Err()
	}
}

func (p *tlsPipe) release() {
	if p.held {
		p.l.e.chargeShare(p.stepAt, p.busy)
		<-p.l.e.tls.cpu
		p.held = false
	}
}

func (p *tlsPipe) Close() error { return nil } // the loop closes the fd
// LocalAddr is the connection's local address, read from its fd the first
// time it is asked for (a GetCertificate that picks by address) unless the
// loop closed it; nil if first asked once the handshake is done.
func (p *tlsPipe) LocalAddr() net.Addr {
	if h := p.hs; p.local == nil && h != nil {
		h.mu.Lock()
		if !h.closed {
			if sa, err := unix.Getsockname(int(p.fd)); err == nil {
				p.local = sockaddrAddr(sa)
			}
		}
		h.mu.Unlock()
	}
	return p.local
}
func (p *tlsPipe) RemoteAddr() net.Addr             { return p.remote }
func (p *tlsPipe) SetDeadline(time.Time) error      { return nil }
func (p *tlsPipe) SetReadDeadline(time.Time) error  { return nil }
func (p *tlsPipe) SetWriteDeadline(time.Time) error { return nil }

// tlsEngine is the engine's TLS part: the handshake bounds and counters.
type tlsEngine struct {
	active    atomic.Int64 // handshakes in progress
	cpu       chan struct{}
	share     hsShare       // handshake time overlapping the loops' work (tls_share.go)
	estAt     atomic.Int64  // engine clock when a loop last read established connections
	estShare  atomic.Uint64 // math.Float64bits: their share of its TLS reads then
	shareWait atomic.Int64  // nanoseconds handshakes waited for the share
	done      atomic.Uint64 // handshakes completed
	resumed   atomic.Uint64 // of which resumed a session
	failures  [NumHandshakeFailures]atomic.Uint64
	lastLog   atomic.Int64 // engine clock of the last failure logged
	unlogged  atomic.Uint64
}

// sockaddrAddr converts a getsockname result to a net.Addr.
func sockaddrAddr(sa unix.Sockaddr) net.Addr {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return &net.TCPAddr{IP: net.IP(a.Addr[:]).To16(), Port: a.Port}
	case *unix.SockaddrInet6:
		return &net.TCPAddr{IP: net.IP(a.Addr[:]), Port: a.Port}
	}
	return nil
}

// startHandshake hands a new TLS connection (in the loop's poller) to a
// handshake goroutine; the loop does not read it (fHandshake) and passes
// its events on to the goroutine (handshakeEvent) until handshakeDone.
func (l *loop) startHandshake(c *Conn) {
	e := l.e
	t := &e.tls
	c.flags |= fHandshake
	c.tls = &connTLS{}
	p := &c.tls.pipe
	p.hs = &hsFeed{wake: make(chan struct{}, 1)}
	p.l, p.fd, p.gen = l, c.fd, c.gen
	p.remote = c.RemoteAddr()
	c.tls.tc = tls.Server(p, e.cfg.TLS)
	if t.active.Add(1) >= int64(e.cfg.MaxHandshakes) {
		e.pauseAccept(gateHandshakes)
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.TLSHandshakeTimeout)
	p.ctx = ctx
	c.tls.hsCancel = cancel
	tc := c.tls.tc
	go func() {
		err := handshake(tc)
		p.release()
		cancel()
		p.ctx = nil
		if t.active.Add(-1) <= int64(e.cfg.MaxHandshakes)*3/4 {
			e.resumeAccept(gateHandshakes)
		}
		// back to the loop
		p.submit(task{kind: taskRun, fd: p.fd, gen: p.gen, fn: func(c *Conn) { c.loop.handshakeDone(c, err) }})
	}()
}

// errHandshakePanic is the cause of a connection whose handshake panicked
// (in a tls.Config callback such as GetCertificate): that connection
// closes (HandshakeOther), not the process.
var errHandshakePanic = errors.New("sluice: tls handshake panicked")

// handshake runs tc's handshake, a panic in it returned as an error.
// Its deadline and cancellation reach it through the pipe (its waits
// select on the handshake's context), not through HandshakeContext, which
// would start a goroutine per handshake to close a pipe whose Close does
// nothing.
func handshake(tc *tls.Conn) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", errHandshakePanic, r)
		}
	}()
	return tc.Handshake()
}

// handshakeDone takes c back on its loop when its handshake ended: a
// failure closes it (counted, logged at most once a second), success
// records the state and opens c to the handler.
func (l *loop) handshakeDone(c *Conn, err error) {
	if err != nil {
		c.tls.pipe.putHSBuf()
		l.handshakeFailed(c, &HandshakeError{classifyHandshake(err), err})
		return
	}
	t := c.tls
	t.pipe.hs = nil
	if c.flags&fOutArmed != 0 { // the handshake waited for room
		c.flags &^= fOutArmed
		if err := l.p.Mod(int(c.fd), connEvents, uint32(c.gen)); err != nil {
			l.closeNow(c, err) // fHandshake still set: the handler never saw it
			return
		}
	}
	st := t.tc.ConnectionState()
	t.state = &st
	if len(st.VerifiedChains) > 0 && len(st.PeerCertificates) > 0 {
		t.tenant = append([]byte("cert:"), st.PeerCertificates[0].Subject.CommonName...)
	}
	l.e.tls.done.Add(1)
	if st.DidResume {
		l.e.tls.resumed.Add(1)
	}
	c.flags &^= fHandshake
	t.since = l.now
	t.hsCancel = nil
	// what the handshake read past its last record stays with c; crypto/tls
	// may hold whole records read with the handshake's
	p := &t.pipe
	if rest := p.buf[p.off:]; len(rest) > 0 {
		p.keep = append(l.pools.ins.get(len(rest)), rest...)
	}
	p.putHSBuf()
	t.more = true
	c.lastActive = l.now
	c.act(l.onOpen(c))
	if c.flags&fClosed == 0 {
		// the handshake goroutine may have read past the handshake, and
		// the edges it was woken for will not come again
		l.ready(c, fNeedRead)
	}
}

// handshakeFailed counts, logs and closes c, which the handler never saw.
func (l *loop) handshakeFailed(c *Conn, he *HandshakeError) {
	t := &l.e.tls
	t.failures[he.Failure].Add(1)
	if lg := l.cfg.Logger; lg != nil {
		now := l.e.clock()
		last := t.lastLog.Load()
		if now-last >= int64(time.Second) && t.lastLog.CompareAndSwap(last, now) {
			lg.Info("sluice: tls handshake failed", "peer", c.remote.String(),
				"reason", he.Failure.String(), "err", he.Err.Error(), "suppressed", t.unlogged.Swap(0))
		} else {
			t.unlogged.Add(1)
		}
	}
	c.flags |= fHandshake // no OnClose: no OnOpen was called
	l.closeNow(c, he)
}

// tlsRead fills dst with plaintext: it decrypts what crypto/tls and the
// pipe hold and reads more ciphertext from the socket as needed, until dst
// is full, the socket is drained (a short read or EAGAIN) or the stream
// ends. It keeps read(2)'s contract for readOnce: fewer bytes than asked
// only when the socket was drained, 0 and no errno at end of stream. A TLS
// error closes c (ErrTLS). Ciphertext is read into the loop's scratch;
// only a partial record is kept with c between reads (pipe.keep).
func (l *loop) tlsRead(c *Conn, dst []byte) (int, errno) {
	t := c.tls
	l.tlsReads++
	if l.now-t.since >= estWindow {
		l.tlsEstReads++ // established traffic, which the handshakes' share protects
	}
	p := &t.pipe
	p.buf, p.off, p.end = append(l.tlsIn[:0], p.keep...), 0, 0
	if p.keep != nil {
		l.pools.ins.put(p.keep)
		p.keep = nil
	}
	got, drained := 0, false
	var rerr errno
	for got < len(dst) && !t.eof {
		if t.more || p.next() {
			want := len(dst) - got
			n, err := t.tc.Read(dst[got:])
			got += n
			switch {
			case err == nil:
				t.more = n == want // what is left of the record waits in crypto/tls
				continue
			case err == io.EOF:
				t.eof = true
				continue
			case err != errWouldBlock:
				p.buf, p.off, p.end = nil, 0, 0
				l.closeNow(c, fmt.Errorf("%w: %w", ErrTLS, err))
				return 0, 0
			}
			t.more = false
		}
		if drained {
			break
		}
		// no whole record left: read more after the partial one
		k := copy(l.tlsIn[:cap(l.tlsIn)], p.buf[p.off:])
		p.buf, p.off, p.end = l.tlsIn[:k], 0, 0
		m, en := sysRead(int(c.fd), l.tlsIn[k:cap(l.tlsIn)])
		switch {
		case en == unix.EINTR:
			continue
		case en == unix.EAGAIN:
			drained = true
			continue
		case en != 0:
			rerr, drained = en, true
			continue
		case m == 0:
			t.eof = true // end of file under the TLS stream
			continue
		}
		p.buf = l.tlsIn[:k+m]
		// a short read drained the socket, unless the peer shut down
		// writing: its FIN may wait behind the data, with no edge to come
		// (readConn)
		drained = m < cap(l.tlsIn)-k && c.flags&fRdHup == 0
	}
	if rest := p.buf[p.off:]; len(rest) > 0 {
		p.keep = append(l.pools.ins.get(len(rest)), rest...)
	}
	p.buf, p.off, p.end = nil, 0, 0
	if len(p.wout) > p.woff {
		l.tlsPostHandshake(c)
		if c.flags&fClosed != 0 {
			return 0, 0
		}
	}
	switch {
	case got > 0:
		return got, 0
	case rerr != 0:
		return 0, rerr
	case t.eof:
		return 0, 0
	}
	return 0, unix.EAGAIN
}

// tlsCloseNotify ends an established TLS stream with close_notify when a
// graceful close has written everything: one best-effort write of the
// alert, as the socket is about to close (a peer that reads to the end
// sees a clean end rather than a truncation).
func (l *loop) tlsCloseNotify(c *Conn) {
	t := c.tls
	if c.flags&fHandshake != 0 || t.tc == nil {
		return
	}
	p := &t.pipe
	if t.tc.CloseWrite() != nil || p.woff >= len(p.wout) {
		return
	}
	sysWrite(int(c.fd), p.wout[p.woff:])
	p.wout, p.woff = nil, 0
}

// tlsKeepOut moves the records the socket did not take out of the loop's
// scratch into a pooled buffer of the connection's.
func (l *loop) tlsKeepOut(p *tlsPipe) {
	if p.scratch {
		rest := p.wout[p.woff:]
		p.wout, p.woff, p.scratch = append(l.pools.ins.get(len(rest)), rest...), 0, false
	}
}

// tlsDropOut lets go of written records' buffer.
func (l *loop) tlsDropOut(p *tlsPipe) {
	if !p.scratch && p.wout != nil {
		l.pools.ins.put(p.wout)
	}
	p.wout, p.woff, p.scratch = nil, 0, false
}

// releaseTLS recycles the buffers a closed connection kept: a partial
// record read, records not written.
func (c *Conn) releaseTLS() {
	if c.tls == nil {
		return
	}
	p := &c.tls.pipe
	if p.keep != nil {
		c.loop.pools.ins.put(p.keep)
		p.keep = nil
	}
	c.loop.tlsDropOut(p)
}

// tlsReadBytes is how much ciphertext one read(2) asks for: two full
// records (16 KiB and their overhead each).
const tlsReadBytes = 34 << 10

// tlsPostHandshake writes what crypto/tls wrote while reading (a KeyUpdate
// answer): through the out-queue's flush when there is one, else at once.
func (l *loop) tlsPostHandshake(c *Conn) {
	if c.out != nil {
		l.markDirty(c)
		return
	}
	p := &c.tls.pipe
	n, en := sysWrite(int(c.fd), p.wout[p.woff:])
	if n > 0 {
		p.woff += n
	}
	if p.woff == len(p.wout) {
		p.wout, p.woff = nil, 0
		return
	}
	if en == 0 || en == unix.EAGAIN {
		en = unix.EAGAIN
	}
	l.closeNow(c, fmt.Errorf("%w: post-handshake message not written: %w", ErrTLS, en))
}

// tlsSealBytes bounds the plaintext one flush seals before it writes,
// into the loop's scratch (tlsOutBytes: the records and their overhead
// fit); what the socket does not take is kept with the connection in a
// pooled buffer of at most 64 KiB, outside the out-queue's budget.
const (
	tlsSealBytes = 60 << 10
	tlsOutBytes  = 64 << 10
)

// tlsFlush is ioflush.Flush for a TLS connection: it writes the records
// sealed last time, then seals the out-queue's next plaintext (copied into
// records of up to 16 KiB, so many small replies share one) and writes
// those. Plaintext leaves the out-queue (n) only when its records are
// written, so the budgets, the write-stall clock and a graceful close see
// the connection's output as it leaves.
func (l *loop) tlsFlush(c *Conn, q *outQueue, budget int) (n int, res ioflush.Result, err error) {
	t := c.tls
	p := &t.pipe
	if budget <= 0 {
		budget = int(^uint(0) >> 1)
	}
	for {
		if p.woff < len(p.wout) {
			w, en := sysWrite(int(c.fd), p.wout[p.woff:])
			if w > 0 {
				p.woff += w
				c.progressAt, c.lastActive = l.now, l.now
			}
			switch {
			case en == unix.EINTR:
				continue
			case en == unix.EAGAIN || en == 0 && p.woff < len(p.wout):
				l.tlsKeepOut(p)
				return n, ioflush.WouldBlock, nil
			case en != 0:
				return n, ioflush.Flushed, os.NewSyscallError("write", en)
			}
			l.tlsDropOut(p)
			if t.covered > 0 {
				ioflush.Consume(&q.segs, t.covered)
				n += t.covered
				t.covered = 0
			}
		}
		if q.segs.Empty() {
			return n, ioflush.Flushed, nil
		}
		if n >= budget {
			return n, ioflush.BudgetSpent, nil
		}
		p.wout, p.woff, p.scratch = l.tlsOut[:0], 0, true
		k, err := l.tlsSeal(c, q, min(tlsSealBytes, budget-n))
		if err != nil {
			return n, ioflush.Flushed, err
		}
		if k == 0 { // only empty segments
			ioflush.Consume(&q.segs, 0)
			continue
		}
		t.covered = k
	}
}

// tlsSeal seals up to limit bytes from the head of the out-queue into the
// pipe's wout, through the loop's staging buffer, and returns how many.
func (l *loop) tlsSeal(c *Conn, q *outQueue, limit int) (int, error) {
	tc := c.tls.tc
	st := l.tlsStage[:0]
	total := 0
	for i := 0; total < limit; i++ {
		s := q.segs.At(i)
		if s == nil {
			break
		}
		b := s.Buf
		if len(b) > limit-total {
			b = b[:limit-total]
		}
		for len(b) > 0 {
			k := copy(st[len(st):cap(st)], b)
			st = st[:len(st)+k]
			b = b[k:]
			total += k
			if len(st) == cap(st) {
				if _, err := tc.Write(st); err != nil {
					return 0, fmt.Errorf("%w: %w", ErrTLS, err)
				}
				st = st[:0]
			}
		}
	}
	if len(st) > 0 {
		if _, err := tc.Write(st); err != nil {
			return 0, fmt.Errorf("%w: %w", ErrTLS, err)
		}
	}
	return total, nil
}

// tlsRecordBytes is the staging buffer: one full TLS record's plaintext.
const tlsRecordBytes = 16 << 10

// tlsStats fills s's TLS counters.
func (e *Engine) tlsStats(s *Stats) {
	t := &e.tls
	s.TLSHandshaking = t.active.Load()
	s.TLSHandshakes = t.done.Load()
	s.TLSResumed = t.resumed.Load()
	s.TLSShareWait = time.Duration(t.shareWait.Load())
	for i := range s.TLSHandshakeFailures {
		s.TLSHandshakeFailures[i] = t.failures[i].Load()
	}
}
