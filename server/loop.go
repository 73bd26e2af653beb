package server

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/ioflush"
	"github.com/sluicenet/sluice/protocol"

	"github.com/sluicenet/sluice/server/internal/netpoll"
)

// loop is one event loop: a goroutine locked to its OS thread that owns an
// epoll set, a timerfd, an eventfd, a fixed event array, one read buffer, one
// iovec scratch area (the Flusher) and every connection it accepted. Nothing
// here is touched by other goroutines except the atomics (m, awake, pub) and
// the inbox.
type loop struct {
	turnView // the turn's clock and state; the admission stage reads it

	e        *Engine
	id       int
	cfg      *Config
	h        Handler
	codec    protocol.Codec
	rejecter protocol.Rejecter  // the codec's; nil: a refused frame closes its connection
	shed     shedder            // the admission stage (stage.go), or noShed without Config.Admission
	wh       WritabilityHandler // the handler's, or nil
	wlist    []*Conn            // connections whose writability changed this turn (writabilityPhase)

	m     atomic.Uintptr // getm() of the loop goroutine while it runs, else 0
	awake atomic.Bool    // true: the loop will look at its inbox without an eventfd write

	p       netpoll.Dispatcher
	flusher ioflush.Flusher
	buf     []byte // the loop's read buffer
	// TLS scratch (tls.go): ciphertext read, plaintext staged for sealing
	tlsIn, tlsStage, tlsOut []byte
	tlsReads, tlsEstReads   uint64      // TLS reads, and those of established connections (noteEstablished)
	tlsPub                  [2]uint64   // the two at the last publication
	tlsPubAt                int64       // when it last published
	pools                   bufferPools // output chunks, out-queues, input buffers, scratch (buffers.go)

	lis listener // the listening socket and its part in the gate (gate.go)

	conns []*Conn  // by fd
	held  [][]byte // by fd, recv mode: bytes a connection received and has not taken (recv.go)
	gen   uint64

	timers timerHeap // connection deadlines and when the timerfd fires next (deadline.go)

	readyq connQueue // connections a budget stopped, served next turn
	dirtyq connQueue // connections to flush this turn

	inbox inbox // off-loop tasks and the turn's scratch for them (inbox.go)

	pace pacing // what the wait phase remembers of earlier turns
	// arrived is when the frames being dispatched were read: now, or for
	// frames held in a connection's input since an earlier read, that
	// read's turn (consume; the worker pool's queueing delay starts there)
	arrived int64
	turn    uint64
	exiting bool

	bp backpressure // queued bytes and paused reads (backpressure.go)

	st    counters  // plain counters and gauges (stats.go)
	pub   published // their published copy
	hists loopHists // histograms (hist.go)
}

// turnView is the part of a loop's state its admission stage may read: the
// loop writes it, the stage only reads it (through a pointer it is given),
// so the stage needs no other field of the loop.
type turnView struct {
	now          int64 // loop clock for this turn: monotonic ns since the engine started
	slept        bool  // this turn's wait slept in epoll_wait
	prevFull     bool  // the wait before this turn's filled the events array
	turnEnd      int64 // loop clock at the end of the last turn (before its wait)
	draining     bool  // the engine shuts down: the loop closes its connections
	recvMode     bool  // connections are read by completion (io_uring's recv mode)
	nconns       int   // connections open on the loop
	poolInflight int   // frames this loop handed to the worker pool, not yet done
}

// pacing is the wait phase's memory of earlier turns.
type pacing struct {
	lastEvents      int   // events the last wait returned
	pollsFirst      bool  // poll before every sleep: the admission policy reads "slept" as "woken by fresh events" (wait)
	yieldAt         int64 // loop clock of the last yield
	sleptSinceYield bool  // a wait slept since then
	slowFrames      bool  // the last turn with frames spent slowFrameNanos or more per frame (submitEarly)
	submitAt        int64 // loop clock of this turn's last early submission (submitEarly)
}

func newLoop(e *Engine, id int) *loop {
	cfg := &e.cfg
	l := &loop{
		e:     e,
		id:    id,
		cfg:   cfg,
		h:     e.h,
		codec: loopCodec(cfg.Codec),
		lis:   listener{fd: -1},
		bp:    backpressure{msgsHigh: max(1, cfg.OutQueueMsgs/2), msgsLow: cfg.OutQueueMsgs / 4},
	}
	l.rejecter, _ = l.codec.(protocol.Rejecter)
	l.wh, _ = e.h.(WritabilityHandler)
	if hf, ok := e.h.(HandlerFuncs); ok && hf.Writable == nil {
		l.wh = nil
	}
	l.pools.init(cfg)
	l.shed = noShed{}
	if cfg.Admission != nil {
		s := newStage(l, cfg.Admission.stageConfig())
		l.shed, l.pace.pollsFirst = s, s.lp != nil
	}
	l.inbox.init(cfg.InboxTasks)
	if cfg.TLS != nil {
		l.tlsIn = make([]byte, tlsReadBytes)
		l.tlsStage = make([]byte, 0, tlsRecordBytes)
		l.tlsOut = make([]byte, 0, tlsOutBytes)
	}
	l.awake.Store(true)
	return l
}

// loopCodec returns the codec a new loop decodes with: a
// protocol.LoopCodec's codec for one loop, or the configured one.
func loopCodec(c protocol.Codec) protocol.Codec {
	if lc, ok := c.(protocol.LoopCodec); ok {
		return lc.ForLoop()
	}
	return c
}

// onLoop reports whether the caller is this loop's goroutine.
func (l *loop) onLoop() bool { return getm() == l.m.Load() }

// wakeup makes a sleeping loop return from epoll_wait. The CAS means a
// burst of wake-ups while the loop sleeps costs one eventfd write, and none
// while it is awake (it checks the inbox before it sleeps again).
func (l *loop) wakeup() {
	if l.awake.CompareAndSwap(false, true) {
		l.p.Wake()
	}
}

// submit hands t to the loop from another goroutine.
func (l *loop) submit(t task) error {
	err := l.inbox.push(t, l)
	if err == ErrInboxFull {
		l.e.inboxFull.Add(1)
	}
	return err
}

// run is the loop goroutine. A turn is a sequence of named phases:
//
//	wait    epoll_wait: under load (the last wait returned more than one
//	        event, or work is pending) a raw non-blocking poll first, and a
//	        blocking one only if it found nothing and no work is pending; a
//	        loop that is not under load blocks at once (the extra poll
//	        would double the waits per message in ping-pong)
//	start   the accept-queue sample, the other loops' queued bytes, and the
//	        admission stage's afterWait hook
//	accept  accept4 up to MaxAcceptPerTurn if the listener was reported
//	ready   connections left over by a budget last turn (read or flush)
//	io      this wait's events, per connection in the order: write
//	        (EPOLLOUT), then read (EPOLLIN, EPOLLRDHUP, EPOLLHUP, EPOLLERR)
//	inbox   up to MaxInboxTasksPerTurn off-loop writes and closes
//	timers  connection deadlines due, the EMFILE retry
//	drain   shutdown: close the listener, ask every connection to close
//	flush   one budgeted writev per dirty connection; finish graceful closes
//	writable  OnWritable for the connections whose writability changed
//	control read the clock once more (turn duration, request latency
//	        histograms), listener in or out of epoll (gate), arm the
//	        timerfd, publish counters and histograms
//
// Accept comes first so a new connection's first bytes are read in the
// turn they are reported. Per connection, queued output leaves before more
// input is taken in: writing first frees out-queue budget (and may lift
// backpressure) before new requests produce replies. Hang-up and error are
// handled through read(2), which returns the bytes that arrived before the
// FIN or RST and then end of file or the precise errno; a connection that
// is not reading (paused, closing) is closed on EPOLLHUP/EPOLLERR directly.
// A connection's replies are flushed right after its input is handled
// (flushEarly), and what else became dirty (inbox writes, closes) at the
// end of the turn, so a burst of pipelined requests costs one read and one
// writev, and its peer has the replies before the loop moves on.
func (l *loop) run() {
	runtime.LockOSThread() // unlocked only while parked (park): the thread exits with the loop
	l.m.Store(getm())
	defer l.exit()
	if err := l.p.Attach(); err != nil { // per-thread backend setup (io_uring: the ring)
		l.e.fail(err)
	}
	l.recvMode = l.p.RecvMode()
	l.now = l.e.clock()
	for !l.exiting {
		n, err := l.wait()
		prev := l.now
		l.now = l.e.clock()
		l.turn++
		l.st[cTurns]++
		if err != nil {
			l.e.fail(err)
		}
		l.observeWait(n, prev)
		l.startPhase(prev)
		l.acceptPhase()
		l.readyPhase()
		l.ioPhase(n)
		l.inboxPhase()
		l.timerPhase()
		l.drainPhase()
		l.flushPhase()
		l.writabilityPhase()
		l.controlPhase()
	}
}

// idle reports whether nothing is pending, so the loop may sleep.
func (l *loop) idle() bool {
	return l.readyq.head == nil && l.dirtyq.head == nil && l.inbox.pending.Load() == 0 && !l.signalled()
}

// signalled reports an engine state change this loop has not acted on.
func (l *loop) signalled() bool {
	e := l.e
	if e.draining.Load() && (!l.draining || e.force.Load() && l.nconns > 0) {
		return true
	}
	return l.wantListen() != l.lis.in
}

// wait is the wait phase.
func (l *loop) wait() (int, error) {
	l.lis.ready, l.slept = false, false
	l.prevFull = l.pace.lastEvents >= l.cfg.MaxEventsPerWait // the events array's size
	var n int
	var err error
	// Polling first is skipped after a quiet turn to save a syscall, but
	// then a blocking wait may return events that were ready long before:
	// a policy stage, which reads "slept" as "woken by fresh events"
	// (queue delay, loop lag), has the loop always poll before it sleeps.
	if l.pace.lastEvents > 1 || l.pace.pollsFirst || !l.idle() {
		n, err = l.p.Wait(false)
	}
	if err == nil && n == 0 && l.idle() && l.shed.idle() {
		l.pace.lastEvents = 0 // the stage has deferred work to do instead of sleeping
		return 0, nil
	}
	if err == nil && n == 0 && l.idle() {
		l.awake.Store(false)
		if l.idle() { // an inbox push that saw awake==true is visible now
			l.publish()
			l.st[cBlockingWaits]++
			l.slept, l.pace.sleptSinceYield = true, true
			if pl := l.e.pool; pl != nil && pl.active() || l.e.tls.active.Load() > 0 {
				n, err = l.park() // a worker or a TLS handshake may need this P meanwhile
			} else {
				n, err = l.p.Wait(true)
			}
		}
		l.awake.Store(true)
	}
	if err != nil {
		return 0, err
	}
	l.pace.lastEvents = n
	l.st[cEvents] += uint64(n)
	for i := 0; i < n; i++ {
		if fd, tag, _ := l.p.Event(i); tag == 0 && fd == l.lis.fd {
			l.lis.ready = true
		}
	}
	return n, nil
}

// park sleeps in Go's netpoller (Poller.Park). Where the poller is not
// bound to the loop's thread (epoll), the loop leaves its thread for the
// sleep: a locked goroutine that parks hands its P to another thread and
// takes it back when woken, a futex and a context switch each way, while
// an unlocked one lets the goroutines it woke run on its thread and is
// resumed there by the scheduler, as any goroutine is. No loop code runs
// meanwhile, so onLoop is false for every caller until it locks again.
func (l *loop) park() (int, error) {
	if l.p.ThreadBound() {
		return l.p.Park()
	}
	l.m.Store(0)
	runtime.UnlockOSThread()
	n, err := l.p.Park()
	runtime.LockOSThread()
	l.m.Store(getm())
	return n, err
}

// startPhase runs after the wait: the mechanism's periodic samples, then
// the admission stage's afterWait hook. prev is the previous turn's clock.
func (l *loop) startPhase(prev int64) {
	if l.now >= l.lis.nextSample {
		l.lis.nextSample = l.now + sampleNanos
		l.sampleAcceptQueue()
	}
	if l.cfg.MaxQueuedBytes > 0 {
		l.bp.sumOthers(l)
	}
	l.shed.afterWait(prev)
}

// readyPhase serves the connections a budget stopped last turn (and those
// the admission stage released); ones that spend their budget again go on
// the next turn's list.
func (l *loop) readyPhase() {
	c := l.readyq.head
	l.readyq = connQueue{}
	for c != nil {
		next := c.nextReady
		c.nextReady = nil
		f := c.flags
		c.flags &^= fReady | fNeedRead | fNeedFlush
		if f&fClosed == 0 {
			if f&fNeedFlush != 0 {
				l.markDirty(c)
			}
			if f&fNeedRead != 0 {
				l.readConn(c, false)
				l.flushEarly(c)
			}
		}
		c = next
	}
}

// ioPhase dispatches this turn's events (see run for the order).
func (l *loop) ioPhase(n int) {
	for i := 0; i < n; i++ {
		fd, tag, ev := l.p.Event(i)
		if tag == 0 {
			continue // listener, timerfd, eventfd: handled by their phases
		}
		c := l.conn(fd)
		if c == nil || uint32(c.gen) != tag {
			l.st[cStaleEvents]++
			continue
		}
		if c.flags&fHandshake != 0 { // TLS: its handshake goroutine reads and writes
			l.handshakeEvent(c)
			continue
		}
		if ev&netpoll.Data != 0 { // recv mode: bytes delivered with the completion
			data, res := l.p.Received(i)
			l.recvEvent(c, data, res, ev&netpoll.More != 0)
			l.flushEarly(c)
			continue
		}
		if ev&netpoll.Sent != 0 { // recv mode: a send completed
			_, res := l.p.Received(i)
			l.sendDone(c, res)
			continue
		}
		if ev&netpoll.Out != 0 && c.flags&fOutArmed != 0 && l.p.RecvMode() {
			l.roomForSend(c) // a send the full socket gave back (sendq_linux.go)
			if c.flags&fClosed != 0 {
				continue
			}
		} else if ev&netpoll.Out != 0 && c.flags&fOutArmed != 0 {
			l.flushConn(c)
			if c.flags&fClosed != 0 {
				continue
			}
		}
		if ev&(netpoll.In|netpoll.RdHup|netpoll.Hup|netpoll.Err) == 0 {
			continue
		}
		if ev&(netpoll.RdHup|netpoll.Hup|netpoll.Err) != 0 {
			c.flags |= fRdHup
		}
		if ev&(netpoll.Hup|netpoll.Err) != 0 && (!c.readable() || ev&netpoll.Fail != 0) && c.flags&fClosed == 0 {
			l.closeNow(c, c.hangupCause(ev))
			continue
		}
		l.readConn(c, true)
		l.flushEarly(c)
	}
}

// yieldEveryNanos spaces the loop's voluntary yields (see yield); under
// the runtime's 10 ms forced-preemption threshold.
const yieldEveryNanos = int64(5 * time.Millisecond)

// yield passes the loop goroutine through the scheduler at the end of a
// turn. The loop is locked to its thread and otherwise never reschedules,
// and a goroutine not scheduled for 10 ms keeps sysmon waking every 20 µs
// to preempt it and retake its P (docs/ARCHITECTURE.md#why-the-loop-yields).
// A loop that never sleeps does not need it (nothing to retake). With
// io_uring in recv mode it first submits the sends the turn prepared, so
// they do not wait behind the goroutines that take the P meanwhile.
func (l *loop) yield(now int64) {
	l.pace.yieldAt, l.pace.sleptSinceYield = now, false
	if l.p.RecvMode() {
		if err := l.p.SubmitNow(); err != nil {
			l.e.fail(err)
		}
	}
	runtime.Gosched()
}

// controlPhase reconciles the listener with the gate, arms the timerfd for
// the earliest deadline, publishes counters and decides whether to exit.
func (l *loop) controlPhase() {
	end := l.e.clock()
	l.turnEnd = end
	l.observeTurn(end) // the turn's one clock read besides the wait's
	if l.pace.sleptSinceYield && end-l.pace.yieldAt >= yieldEveryNanos {
		l.yield(end)
	} else if pl := l.e.pool; pl != nil && pl.starved() {
		// a frame waits for a worker that is not running: the worker may
		// be waiting for this loop's P, which a busy loop holds until the
		// scheduler preempts it (docs/ARCHITECTURE.md#why-the-loop-yields)
		l.yield(end)
	}
	if want := l.wantListen(); want != l.lis.in {
		l.setListening(want)
	}
	stageAt := l.shed.turnEnd(admission.LoopLoad{
		Conns:        int64(l.nconns),
		InflightReqs: int64(l.poolInflight),
		QueuedBytes:  int64(l.bp.outBytes + l.bp.inBytes),
	}, l.lis.nextSample)
	l.armTimerfd(stageAt)
	if l.e.cfg.TLS != nil {
		l.noteEstablished(end)
	}
	l.publish()
	if l.draining && l.nconns == 0 {
		l.exiting = true
	}
}

// exit runs when the loop goroutine ends: it closes what is left (only a
// failure gets here with connections), refuses further inbox tasks, and
// closes the loop's fds.
func (l *loop) exit() {
	for _, c := range l.conns {
		if c != nil && c.flags&fClosed == 0 {
			l.closeNow(c, ErrShutdown)
		}
	}
	l.releaseListener()
	l.m.Store(0)
	l.inbox.close() // after this no goroutine touches l.p
	l.p.Close()
	l.publish()
	l.e.loopDone()
}
