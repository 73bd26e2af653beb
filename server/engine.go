package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicenet/sluice/admission"

	"github.com/sluicenet/sluice/server/internal/netpoll"
)

// Engine states.
const (
	engineNew = iota
	engineRunning
	engineStopped
)

// Engine is a TCP server: a set of event loops sharing one listening
// address. Create it with New, run it with Start or Serve, stop it with
// Shutdown. Its methods are safe for concurrent use.
type Engine struct {
	cfg   Config // with defaults
	h     Handler
	loops []*loop
	start time.Time // the loop clock's origin

	mu    sync.Mutex
	state int
	addr  netip.AddrPort

	done       chan struct{} // closed when every loop has exited
	running    atomic.Int32  // loops still running
	sharedRefs atomic.Int32  // loops holding the shared listener (AcceptExclusive)

	conns           atomic.Int64  // open plus reserved connections, all loops (the MaxConns cap)
	open            atomic.Int64  // open connections, all loops (the gate's watermarks, Stats)
	gate            atomic.Uint32 // gate reasons holding the listener closed
	rejecting       atomic.Bool   // the admission gate is GateRejecting: loops accept only to refuse
	cool            coolTable     // tenants refused at accept after a final refusal (goaway.go)
	gateTransitions atomic.Uint64
	inboxFull       atomic.Uint64
	panics          panics        // recovered from user code (panic.go)
	queueFullOff    atomic.Uint64 // off-loop writes refused with ErrQueueFull (Conn.reserve)

	// gate closed time, kept under gateMu at gate transitions only
	gateMu        sync.Mutex
	gateClosedAt  int64 // loop clock when the gate closed; 0 while open
	gateClosedSum int64 // ns of closures that ended

	draining      atomic.Bool
	force         atomic.Bool
	drainDeadline atomic.Int64 // loop clock; 0: none

	adm        *admission.Admitter      // Config.Admission's, bound to this engine; nil without a policy
	pool       *pool                    // worker pool for Config.Pool.Handler; nil without one
	offRejects admission.RejectCounters // Conn.Reject calls from off the loops

	errOnce sync.Once
	err     error // first loop failure

	backend        Backend // what the loops run (chooseBackend)
	uringReadiness bool    // io_uring without recv mode (TLS)

	tls tlsEngine // Config.TLS's handshake bounds and counters (tls.go)
}

// New validates cfg and returns an engine that is not yet listening. With
// an AdmissionPolicy it binds the Admitter to the engine (its loop count,
// MaxConns and MaxQueuedBytes; see admission.Binding), so an Admitter
// serves one engine. It returns ErrUnsupported on systems other than
// Linux.
func New(cfg Config, h Handler) (*Engine, error) {
	if !netpoll.Supported {
		return nil, ErrUnsupported
	}
	if h == nil {
		return nil, errors.Join(ErrInvalidConfig, errors.New("sluice: nil Handler"))
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e := &Engine{cfg: cfg.withDefaults(), h: h, start: time.Now(), done: make(chan struct{})}
	e.chooseBackend()
	if e.cfg.TLS != nil {
		e.tls.cpu = make(chan struct{}, e.cfg.HandshakeCPUs)
		e.tls.initShare(e.cfg.HandshakeShare, e.cfg.Loops)
	}
	if e.cfg.Pool.Handler != nil {
		p, err := newPool(e)
		if err != nil {
			return nil, err
		}
		e.pool = p
	}
	if a := admitterOf(e.cfg.Admission); a != nil {
		err := a.Bind(admission.Binding{Loops: e.cfg.Loops,
			MaxConns: int64(e.cfg.MaxConns), MaxQueuedBytes: int64(e.cfg.MaxQueuedBytes)})
		if err != nil {
			return nil, fmt.Errorf("%w: Admission: %w", ErrInvalidConfig, err)
		}
		e.adm = a
	}
	e.loops = make([]*loop, e.cfg.Loops)
	for i := range e.loops {
		e.loops[i] = newLoop(e, i)
		if e.backend == BackendIOURing {
			e.loops[i].p.UseURing(e.uringReadiness)
		}
	}
	return e, nil
}

// clock is the loops' clock: monotonic nanoseconds since New.
func (e *Engine) clock() int64 { return int64(time.Since(e.start)) }

// timeAt converts a reading of the loops' clock to the time.Time the
// admission package and PoolConfig.Deadline take (monotonic, anchored at
// New): the one conversion between the engine's clock and the seam's time
// type.
func (e *Engine) timeAt(nanos int64) time.Time { return e.start.Add(time.Duration(nanos)) }

// Start opens the listener(s) and starts the loops; when it returns nil,
// Addr is valid and connections are being accepted.
func (e *Engine) Start() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch e.state {
	case engineRunning:
		return ErrStarted
	case engineStopped:
		return ErrEngineClosed
	}
	if err := e.listen(); err != nil {
		return err
	}
	for _, l := range e.loops {
		if err := l.p.Open(e.cfg.MaxEventsPerWait); err != nil {
			e.closeAll()
			return err
		}
		l.buf = make([]byte, e.cfg.ReadBufferBytes)
		l.inbox.batch = make([]task, e.cfg.MaxInboxTasksPerTurn)
		ev := netpoll.In
		if l.lis.shared {
			ev |= netpoll.Exclusive
		}
		if err := l.p.Add(l.lis.fd, ev, 0); err != nil {
			e.closeAll()
			return err
		}
		l.lis.in = true
	}
	e.state = engineRunning
	e.running.Store(int32(len(e.loops)))
	if e.pool != nil {
		e.pool.start()
	}
	for _, l := range e.loops {
		go l.run()
	}
	return nil
}

// listen opens the listening socket(s): one per loop with SO_REUSEPORT, or
// one shared by all with EPOLLEXCLUSIVE.
func (e *Engine) listen() error {
	shared := e.cfg.Accept == AcceptExclusive
	addr := e.cfg.Addr
	for i, l := range e.loops {
		if shared && i > 0 {
			l.lis.fd, l.lis.shared = e.loops[0].lis.fd, true
			continue
		}
		fd, bound, err := netpoll.Listen(addr, netpoll.ListenConfig{ReusePort: !shared, Backlog: e.cfg.Backlog,
			SndBuf: e.cfg.SocketSendBufferBytes, RcvBuf: e.cfg.SocketRecvBufferBytes, Control: listenHook})
		if err != nil {
			e.closeAll()
			return err
		}
		l.lis.fd, l.lis.shared = fd, shared
		if i == 0 {
			e.addr = bound
			addr = bound.String() // the other SO_REUSEPORT sockets take the same port
		}
	}
	if shared {
		e.sharedRefs.Store(int32(len(e.loops)))
	}
	return nil
}

// closeAll releases what a failed Start opened.
func (e *Engine) closeAll() {
	for i, l := range e.loops {
		if l.lis.fd >= 0 && (!l.lis.shared || i == 0) {
			sysClose(l.lis.fd)
		}
		l.lis.fd, l.lis.in = -1, false
		l.p.Close()
	}
}

// Addr returns the listening address, or nil before Start.
func (e *Engine) Addr() net.Addr {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.addr.IsValid() {
		return nil
	}
	return net.TCPAddrFromAddrPort(e.addr)
}

// Serve starts the engine if needed and blocks until it stops: a handler
// returned Shutdown, Shutdown was called, or ctx ended, in which case Serve
// shuts down with Config.DrainTimeout. It returns nil after a clean stop,
// else the first loop failure or the drain's context error.
func (e *Engine) Serve(ctx context.Context) error {
	if err := e.Start(); err != nil && !errors.Is(err, ErrStarted) {
		return err
	}
	select {
	case <-e.done:
		return e.err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), e.cfg.DrainTimeout)
	defer cancel()
	return e.Shutdown(sctx)
}

// Shutdown stops accepting (listeners closed), lets the loops finish the
// turn they are in and the off-loop tasks already queued, flushes every
// out-queue and closes every connection with ErrShutdown. It returns when
// all loops have exited, or when ctx ends: then the remaining connections
// are closed at once, the loops exit, and ctx's error is returned. No
// goroutine of the engine outlives Shutdown.
func (e *Engine) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	if e.state == engineNew {
		e.state = engineStopped
		close(e.done)
	}
	started := e.state == engineRunning
	e.state = engineStopped
	e.mu.Unlock()
	if a := e.adm; a != nil && started {
		a.SetDraining(true) // new frames are refused with reason "draining"
	}
	if e.pool != nil && started {
		e.pool.drain(ctx) // admitted frames finish and reply before connections close
	}
	e.beginShutdown(0)
	select {
	case <-e.done:
		return e.err
	case <-ctx.Done():
	}
	e.force.Store(true)
	e.wakeAll()
	<-e.done
	return ctx.Err()
}

// Done is closed when the engine has stopped (every loop exited).
func (e *Engine) Done() <-chan struct{} { return e.done }

// beginShutdown switches the engine to draining; deadline (loop clock, 0
// for none) bounds the drain.
func (e *Engine) beginShutdown(deadline int64) {
	if deadline != 0 {
		e.drainDeadline.CompareAndSwap(0, deadline)
	}
	if e.draining.CompareAndSwap(false, true) {
		e.pauseAccept(gateShutdown)
		e.wakeAll()
	}
}

// fail records a loop's unrecoverable error and shuts the engine down.
func (e *Engine) fail(err error) {
	e.errOnce.Do(func() { e.err = err })
	if lg := e.cfg.Logger; lg != nil {
		lg.Error("sluice: loop failed", "err", err)
	}
	e.force.Store(true)
	e.beginShutdown(0)
	e.wakeAll()
}

// loopDone is called by each loop as it exits.
func (e *Engine) loopDone() {
	if e.running.Add(-1) == 0 {
		if e.pool != nil {
			e.pool.stop()
		}
		close(e.done)
	}
}

// wakeAll wakes every loop to look at engine state.
func (e *Engine) wakeAll() {
	for _, l := range e.loops {
		l.inbox.signal(l)
	}
}

// reserveConn counts a connection about to be accepted against MaxConns;
// false when the budget is used up. The reservation is speculative (accept4
// may find nothing), so the gate is closed by accepted, not by reserved,
// connections: see accepted.
func (e *Engine) reserveConn() bool {
	n := e.conns.Add(1)
	if limit := int64(e.cfg.MaxConns); limit > 0 && n > limit {
		e.conns.Add(-1)
		return false
	}
	return true
}

// unreserveConn returns a reservation accept4 did not use.
func (e *Engine) unreserveConn() { e.conns.Add(-1) }

// accepted counts an accepted connection and closes the gate once the open
// connections reach MaxConns. It must not look at reservations: another
// loop's reservation may be about to find nothing, and a gate closed on it
// would stay closed below the budget (TestMaxConnsGate caught that).
func (e *Engine) accepted() {
	n := e.open.Add(1)
	if limit := int64(e.cfg.MaxConns); limit > 0 && n >= limit {
		e.pauseAccept(gateMaxConns)
	}
}

// connClosed uncounts an open connection and reopens the gate at
// MaxConnsLow.
func (e *Engine) connClosed() {
	e.conns.Add(-1)
	n := e.open.Add(-1)
	if e.cfg.MaxConns > 0 && n <= int64(e.cfg.MaxConnsLow) && e.gate.Load()&gateMaxConns != 0 {
		e.resumeAccept(gateMaxConns)
	}
}
